!> A field with ghost layers, transposed with no copy by the caller: the
!> pattern of a code that sweeps a stencil over its blocks and then needs
!> another decomposition (a spectral step, a line solve) of the result.
!>
!> The global field f(NX, NY, NZ) = (16, 12, 10), real64, periodic, is split in
!> z-slabs over the ranks. Each rank stores its slab with one ghost layer on
!> every side, u(0:NX+1, 0:NY+1, 0:lz+1), as a stencil code does:
!>  1. the ghost layers are filled (x and y locally, z from the neighbouring
!>     ranks with MPI_Sendrecv), and a 7-point Laplacian is swept over the
!>     interior into w(0:NX+1, 0:NY+1, 0:lz+1), itself ghosted;
!>  2. the interior w(1:NX, 1:NY, 1:lz) is transposed to x-slabs t(lx, NY, NZ)
!>     by a strided plan made from the interior as its mold: the section is
!>     passed as it is, no copy into a contiguous array and none made by the
!>     compiler;
!>  3. and back, into the interior of a third ghosted array v, whose ghost
!>     layers the library never touches.
!> Every element of t is checked against the Laplacian computed from the
!> global formula, v's interior against w's, v's ghosts against their
!> sentinel. The program stops with an error unless all are right.
!>
!>   mpiexec -n 4 ./halo_transpose_fortran
program halo_transpose
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none

  integer(int64), parameter :: NX = 16, NY = 12, NZ = 10
  real(real64), parameter :: GHOST = -1.0e30_real64
  integer :: nranks, rank, below, above, total
  integer(int64) :: lz, z0, lx, x0, i, j, k
  real(real64), allocatable :: u(:, :, :), w(:, :, :), v(:, :, :), t(:, :, :)
  type(dr_layout) :: zslabs, xslabs
  type(dr_plan) :: to_x, to_z
  integer :: wrong

  call MPI_Init()
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  below = modulo(rank - 1, nranks)
  above = modulo(rank + 1, nranks)

  ! This rank's z-slab and x-slab (balanced, as the layouts below make them).
  call dr_balanced_slab(NZ, nranks, rank, lz, z0)
  call dr_balanced_slab(NX, nranks, rank, lx, x0)
  call dr_layout_create(zslabs, [NX, NY, NZ], [nranks], [0, 0, 1])
  call dr_layout_create(xslabs, [NX, NY, NZ], [nranks], [1, 0, 0])

  ! 1. The field in a ghosted slab, its ghosts filled, the stencil swept.
  allocate(u(0:NX + 1, 0:NY + 1, 0:lz + 1), w(0:NX + 1, 0:NY + 1, 0:lz + 1), &
           v(0:NX + 1, 0:NY + 1, 0:lz + 1), source=GHOST)
  allocate(t(lx, NY, NZ))
  do concurrent (i = 1:NX, j = 1:NY, k = 1:lz)
    u(i, j, k) = field(i, j, z0 + k)
  end do
  call fill_ghosts(u)
  do concurrent (i = 1:NX, j = 1:NY, k = 1:lz)
    w(i, j, k) = u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) &
                 + u(i, j, k - 1) + u(i, j, k + 1) - 6 * u(i, j, k)
  end do

  ! 2. The interior to x-slabs, and 3. back into v's interior: each plan is
  ! made from the arrays it will move (their strides, from the descriptors),
  ! once, and executed on the same sections.
  call dr_plan_create_strided(to_x, zslabs, w(1:NX, 1:NY, 1:lz), xslabs, t, MPI_COMM_WORLD)
  call dr_plan_create_strided(to_z, xslabs, t, zslabs, v(1:NX, 1:NY, 1:lz), MPI_COMM_WORLD)
  call dr_plan_execute(to_x, w(1:NX, 1:NY, 1:lz), t)
  wrong = 0
  do k = 1, NZ
    do j = 1, NY
      do i = 1, lx
        if (t(i, j, k) /= laplacian(x0 + i, j, k)) wrong = wrong + 1
      end do
    end do
  end do
  call dr_plan_execute(to_z, t, v(1:NX, 1:NY, 1:lz))
  wrong = wrong + count(v(1:NX, 1:NY, 1:lz) /= w(1:NX, 1:NY, 1:lz))
  v(1:NX, 1:NY, 1:lz) = GHOST
  wrong = wrong + count(v /= GHOST)

  call dr_plan_destroy(to_x)
  call dr_plan_destroy(to_z)
  call dr_layout_destroy(zslabs)
  call dr_layout_destroy(xslabs)
  call MPI_Allreduce(wrong, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a, i0, a)', 'halo_transpose: the Laplacian of a ghosted field, transposed and back on ', &
        nranks, ' rank(s): every element right, every ghost untouched'
    else
      print '(a, i0, a)', 'halo_transpose: ', total, ' wrong element(s)'
    end if
  end if
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> The field at global (1-based, periodic) position (x, y, z): its
  !> column-major index, exact in real64.
  pure real(real64) function field(x, y, z)
    integer(int64), intent(in) :: x, y, z
    field = real(modulo(x - 1, NX) + NX * (modulo(y - 1, NY) + NY * modulo(z - 1, NZ)), real64)
  end function field

  !> The 7-point Laplacian of the periodic field at global (x, y, z).
  pure real(real64) function laplacian(x, y, z)
    integer(int64), intent(in) :: x, y, z
    laplacian = field(x - 1, y, z) + field(x + 1, y, z) + field(x, y - 1, z) &
                + field(x, y + 1, z) + field(x, y, z - 1) + field(x, y, z + 1) - 6 * field(x, y, z)
  end function laplacian

  !> Periodic ghost layers: x and y from the slab itself, z from the ranks
  !> below and above (the slab's first and last planes).
  subroutine fill_ghosts(a)
    real(real64), intent(inout) :: a(0:, 0:, 0:)
    integer(int64) :: n
    n = (NX + 2) * (NY + 2)
    a(0, :, :) = a(NX, :, :)
    a(NX + 1, :, :) = a(1, :, :)
    a(:, 0, :) = a(:, NY, :)
    a(:, NY + 1, :) = a(:, 1, :)
    ! Whole x-y planes (ghosts included) are contiguous: sent as they are.
    call MPI_Sendrecv(a(:, :, lz), int(n), MPI_DOUBLE_PRECISION, above, 0, &
                      a(:, :, 0), int(n), MPI_DOUBLE_PRECISION, below, 0, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE)
    call MPI_Sendrecv(a(:, :, 1), int(n), MPI_DOUBLE_PRECISION, below, 1, &
                      a(:, :, lz + 1), int(n), MPI_DOUBLE_PRECISION, above, 1, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE)
  end subroutine fill_ghosts
end program halo_transpose
