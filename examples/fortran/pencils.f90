!> Pencil decompositions (2-D process grids) in Fortran: the transposes of a
!> spectral code, x-pencils -> y-pencils -> z-pencils and back, each one a
!> DistReshape plan on a row or column sub-communicator of a p_row x p_col
!> process grid. The same recipe as examples/c/pencils.c, in Fortran terms
!> (column-major, dimensions counted from 1).
!>
!> The global array is u(NX, NY, NZ) = (17, 13, 11), real64, with x the first
!> (fastest) dimension, as spectral codes store it; every element holds its
!> global flat index x + NX*(y + NY*z) (0-based x, y, z). A pencil is whole
!> along one dimension; of the two others, the lower one is split over the
!> grid's p_row ranks and the higher one over its p_col ranks (2DECOMP&FFT's
!> orientation), in balanced slabs (dr_balanced_slab):
!>
!>   x-pencil (NX, ly, lz): y over p_row, z over p_col
!>   y-pencil (lx, NY, lz): x over p_row, z over p_col
!>   z-pencil (lx, ly2, NZ): x over p_row, y over p_col (ly2: y in p_col slabs)
!>
!> Each rank stores its pencil as one array in the global dimension order
!> (x, y, z), which is DistReshape's slab layout. A transpose only moves data
!> among the ranks that share the slab of the third dimension, and those ranks
!> together hold a sub-array that is whole along the two dimensions being
!> exchanged and this slab's length along the third. So the transpose is a
!> reshape of that sub-array to its own shape with another split dimension:
!>
!>   x -> y on the row communicator (p_row ranks, same z slab):
!>          (NX, NY, lz) split 2 (y) -> (NX, NY, lz) split 1 (x)
!>   y -> z on the column communicator (p_col ranks, same x slab):
!>          (lx, NY, NZ) split 3 (z) -> (lx, NY, NZ) split 2 (y)
!>   z -> y and y -> x: the same with the splits swapped.
!>
!> The plans are made once and executed at every step, as a time-stepping
!> code would; every element is checked after every transpose.
!>
!>   mpiexec -n 6 ./pencils_fortran     (a 2 x 3 grid; 4 ranks give 2 x 2)
program pencils
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none

  integer, parameter :: X = 1, Y = 2, Z = 3
  character, parameter :: AXIS(3) = ['x', 'y', 'z']
  !> Small, unequal extents that the grids do not divide: unbalanced slabs.
  integer(int64), parameter :: N(3) = [17_int64, 13_int64, 11_int64]

  !> The part of the global array a rank holds: 0-based offset and length
  !> along each dimension.
  type :: block
    integer(int64) :: off(3), len(3)
  end type block

  integer :: nranks, rank, dims(2), grid(2), me(2), step, t
  type(MPI_Comm) :: cart, comm_row, comm_col
  type(block) :: xp, yp, zp
  real(real64), allocatable :: xa(:, :, :), ya(:, :, :), za(:, :, :)
  type(dr_plan) :: x_to_y, y_to_z, z_to_y, y_to_x
  integer(int64) :: errors(4), total(4)
  character(*), parameter :: NAMES(4) = ['x -> y (comm_row)', 'y -> z (comm_col)', &
                                         'z -> y (comm_col)', 'y -> x (comm_row)']

  call MPI_Init()
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)

  ! The process grid: MPI_Dims_create lists the dimensions largest first;
  ! take the smaller as p_row (2 x 2 at 4 ranks, 2 x 3 at 6).
  dims = 0
  call MPI_Dims_create(nranks, 2, dims)
  grid = [dims(2), dims(1)]
  call MPI_Cart_create(MPI_COMM_WORLD, 2, grid, [.false., .false.], .false., cart)
  ! comm_row spans grid dimension 1: the p_row ranks of this rank's grid
  ! column. comm_col spans dimension 2: the p_col ranks of its grid row.
  ! MPI_Cart_sub numbers the ranks of a 1-D sub-grid by their coordinate, so
  ! me(:) are this rank's grid coordinates, and the rank order in which
  ! DistReshape lays out the slabs is the grid's.
  call MPI_Cart_sub(cart, [.true., .false.], comm_row)
  call MPI_Cart_sub(cart, [.false., .true.], comm_col)
  call MPI_Comm_rank(comm_row, me(1))
  call MPI_Comm_rank(comm_col, me(2))

  xp = pencil(X)
  yp = pencil(Y)
  zp = pencil(Z)
  allocate(xa(xp%len(1), xp%len(2), xp%len(3)), ya(yp%len(1), yp%len(2), yp%len(3)), &
           za(zp%len(1), zp%len(2), zp%len(3)))

  ! The four transposes, planned once.
  call plan_transpose(comm_row, xp, X, Y, yp, x_to_y)
  call plan_transpose(comm_col, yp, Y, Z, zp, y_to_z)
  call plan_transpose(comm_col, zp, Z, Y, yp, z_to_y)
  call plan_transpose(comm_row, yp, Y, X, xp, y_to_x)

  ! Two steps of a spectral code's round trip (FFTs along the whole dimension
  ! would go between the transposes); the last lands back in xa.
  xa = global_indices(xp)
  errors = 0
  do step = 1, 2
    call execute_transpose(x_to_y, xa, ya, yp, errors(1))
    call execute_transpose(y_to_z, ya, za, zp, errors(2))
    call execute_transpose(z_to_y, za, ya, yp, errors(3))
    call execute_transpose(y_to_x, ya, xa, xp, errors(4))
  end do

  call MPI_Allreduce(errors, total, 4, MPI_INTEGER8, MPI_SUM, cart)
  call MPI_Comm_rank(cart, rank)
  if (rank == 0) then
    print '(a, 3(i0, a), i0, a, i0, a)', 'u(', N(1), ', ', N(2), ', ', N(3), ') on a ', &
          grid(1), ' x ', grid(2), ' grid, 2 round trips'
    do t = 1, 4
      print '(3a, i0, a)', NAMES(t), ': ', trim(merge('OK    ', 'FAILED', total(t) == 0)) // ', ', &
            total(t), ' wrong element(s)'
    end do
  end if

  call dr_plan_destroy(x_to_y)
  call dr_plan_destroy(y_to_z)
  call dr_plan_destroy(z_to_y)
  call dr_plan_destroy(y_to_x)
  call MPI_Comm_free(comm_row)
  call MPI_Comm_free(comm_col)
  call MPI_Comm_free(cart)
  call MPI_Finalize()
  if (any(total /= 0)) error stop 1

contains

  !> This rank's block of the pencil whole along `whole`: the lower other
  !> dimension in the balanced slab of rank me(1) of grid(1) = p_row, the
  !> higher one in that of rank me(2) of grid(2) = p_col.
  type(block) function pencil(whole) result(b)
    integer, intent(in) :: whole
    integer :: d, k
    k = 1
    do d = 1, 3
      if (d == whole) then
        b%off(d) = 0
        b%len(d) = N(d)
      else
        call dr_balanced_slab(N(d), grid(k), me(k), b%len(d), b%off(d))
        k = k + 1
      end if
    end do
  end function pencil

  !> The global flat index of every element of the block.
  pure function global_indices(b) result(g)
    type(block), intent(in) :: b
    real(real64) :: g(b%len(1), b%len(2), b%len(3))
    integer(int64) :: i, j, k
    do concurrent (i = 1:b%len(1), j = 1:b%len(2), k = 1:b%len(3))
      g(i, j, k) = real((b%off(1) + i - 1) + N(1) * ((b%off(2) + j - 1) + N(2) * (b%off(3) + k - 1)), &
                        real64)
    end do
  end function global_indices

  !> Plans the transpose from the pencil `in` (whole along `from`) to the one
  !> whole along `to`, on `comm`: the ranks that share in's slab of the third
  !> dimension. Their sub-array is whole along `from` and `to` and in's slab
  !> length along the third; it is split along `to` (in's slab there) and
  !> becomes split along `from`, in the balanced slabs of comm's ranks. `out`
  !> is the pencil this rank expects, from dr_balanced_slab.
  subroutine plan_transpose(comm, in, from, to, out, plan)
    type(MPI_Comm), intent(in) :: comm
    type(block), intent(in) :: in, out
    integer, intent(in) :: from, to
    type(dr_plan), intent(out) :: plan
    integer, parameter :: DIMS3(3) = [X, Y, Z]
    integer(int64) :: sub(3), len, offset, elems
    sub = merge(N, in%len, DIMS3 == from .or. DIMS3 == to)
    call dr_plan_create(DR_DTYPE_FLOAT64, sub, to, comm, in%len(to), sub, from, plan)
    ! The plan's slab (length and 1-based offset along `from`) is the expected
    ! pencil's; with chosen lengths only the plan would know the offset.
    call dr_plan_output(plan, new_local_len=len, new_local_elems=elems, new_offset=offset)
    if (len /= out%len(from) .or. offset /= out%off(from) + 1 .or. &
        elems /= product(out%len)) then
      print '(4a)', AXIS(from), ' -> ', AXIS(to), ': the plan''s output is not the expected pencil'
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine plan_transpose

  !> Runs a transpose into `b` and adds the number of elements that are not
  !> where the pencil `expected` puts them to `errors`. `b` is poisoned
  !> first, so that data left by the previous step cannot pass the check.
  subroutine execute_transpose(plan, a, b, expected, errors)
    type(dr_plan), intent(in) :: plan
    real(real64), contiguous, intent(in) :: a(:, :, :)
    real(real64), contiguous, intent(inout) :: b(:, :, :)
    type(block), intent(in) :: expected
    integer(int64), intent(inout) :: errors
    b = -1
    call dr_plan_execute(plan, a, b)
    errors = errors + count(b /= global_indices(expected), kind=int64)
  end subroutine execute_transpose

end program pencils
