!> Process-grid layouts from Fortran: x-pencils to y-pencils through a
!> Cartesian communicator from MPI_Cart_create (each rank's boxes checked
!> against its MPI_Cart_coords: grid axis g is coords(g), grid_dims is
!> MPI_Cart_create's dims unreversed), with mpi_f08 and with `use mpi` integer
!> handles; bricks to pencils; a reshape with -1 and explicit lengths; a grid
!> of the wrong size failing with the same stat on every rank; the element
!> type given by dtype= or by mold= (a scalar, a default-integer array). Every
!> element is checked against its global index, inputs filled from the boxes.
module layouts_checks
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int32, int64, real64
  implicit none
  integer(int64), parameter :: n1 = 6, n2 = 5, n3 = 4

contains

  !> The column-major (Fortran) linear index, 0-based, of global (i, j, k).
  elemental integer(int64) function gidx(i, j, k)
    integer(int64), intent(in) :: i, j, k
    gidx = (i - 1) + n1 * ((j - 1) + n2 * (k - 1))
  end function gidx

  !> This rank's block along an axis of `extent` split into `parts` blocks,
  !> as block `coord` (0-based): 1-based lower bound and extent.
  subroutine block_of(extent, parts, coord, lo, len)
    integer(int64), intent(in) :: extent
    integer, intent(in) :: parts, coord
    integer(int64), intent(out) :: lo, len
    integer(int64) :: offset
    call dr_balanced_slab(extent, parts, coord, len, offset)
    lo = offset + 1
  end subroutine block_of

  !> The global indices gidx of the box of first index `lo` and extents `len`,
  !> as an array of the box's shape.
  pure function box_indices(lo, len) result(g)
    integer(int64), intent(in) :: lo(3), len(3)
    integer(int64) :: g(len(1), len(2), len(3))
    integer(int64) :: i, j, k
    do concurrent (i = 1:len(1), j = 1:len(2), k = 1:len(3))
      g(i, j, k) = gidx(lo(1) + i - 1, lo(2) + j - 1, lo(3) + k - 1)
    end do
  end function box_indices

  !> Counts a failure unless the box (lb, ext) a plan reports is (lo, len).
  subroutine expect_box(what, lb, ext, lo, len, failures)
    character(*), intent(in) :: what
    integer(int64), intent(in) :: lb(:), ext(:), lo(:), len(:)
    integer, intent(inout) :: failures
    if (any(lb /= lo) .or. any(ext /= len)) then
      failures = failures + 1
      print *, what, ': box', lb, ext, 'expected', lo, len
    end if
  end subroutine expect_box

  !> Counts a failure unless every element of `values` (the box of first index
  !> `lo`, converted to int64) is its global index.
  subroutine expect_indices(what, values, lo, failures)
    character(*), intent(in) :: what
    integer(int64), intent(in) :: values(:, :, :), lo(3)
    integer, intent(inout) :: failures
    integer(int64) :: want(size(values, 1), size(values, 2), size(values, 3))
    want = box_indices(lo, shape(values, int64))
    if (any(values /= want)) then
      failures = failures + 1
      print *, what, ':', count(values /= want), ' wrong element(s)'
    end if
  end subroutine expect_indices

  !> Boxes of an (n1, n2, n3) x-pencils -> y-pencils plan on the grid `dims`
  !> against this rank's Cartesian coordinates `coords` (0-based values), the
  !> input filled by global bounds and the output checked element by element.
  subroutine check_pencils(plan, dims, coords, failures)
    type(dr_plan), intent(in) :: plan
    integer, intent(in) :: dims(2), coords(2)
    integer, intent(inout) :: failures
    integer(int64), allocatable :: lb(:), ext(:)
    integer(int64) :: lo(3), len(3)
    real(real64), allocatable :: a(:, :, :), b(:, :, :)
    ! Input: axis 1 whole, axis 2 on grid axis 1, axis 3 on grid axis 2.
    lo(1) = 1
    len(1) = n1
    call block_of(n2, dims(1), coords(1), lo(2), len(2))
    call block_of(n3, dims(2), coords(2), lo(3), len(3))
    call dr_plan_input_box(plan, lb, ext)
    call expect_box('pencils: input', lb, ext, lo, len, failures)
    a = real(box_indices(lo, len), real64)
    ! Output: axis 1 on grid axis 1, axis 2 whole, axis 3 on grid axis 2.
    call block_of(n1, dims(1), coords(1), lo(1), len(1))
    lo(2) = 1
    len(2) = n2
    call block_of(n3, dims(2), coords(2), lo(3), len(3))
    call dr_plan_output_box(plan, lb, ext)
    call expect_box('pencils: output', lb, ext, lo, len, failures)
    call dr_plan_allocate_output(plan, b, global_bounds=.true.)
    ! An empty dimension's lbound is 1 in Fortran, whatever the bounds allocated.
    if (any(lbound(b, kind=int64) /= lo .and. len > 0) .or. any(shape(b, int64) /= len)) then
      failures = failures + 1
      print *, 'allocated', lbound(b), ubound(b), 'expected', lo, len
    end if
    b = -1
    call dr_plan_execute(plan, a, b)
    call expect_indices('pencils', int(b, int64), lo, failures)
  end subroutine check_pencils
end module layouts_checks

!> The pencils with `use mpi`: integer handles, MPI_Cart_create from the old
!> bindings, the plan made from the integer Cartesian communicator with mold=.
subroutine check_integer_handles(failures)
  use mpi
  use distreshape
  use layouts_checks
  implicit none
  integer, intent(inout) :: failures
  integer :: nranks, cart, rank, ierr, dims(2), coords(2)
  logical :: periods(2)
  type(dr_layout) :: xp, yp
  type(dr_plan) :: plan
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  dims = 0
  call MPI_Dims_create(nranks, 2, dims, ierr)
  periods = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Comm_rank(cart, rank, ierr)
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call dr_layout_create(xp, [n1, n2, n3], dims, [0, 1, 2])
  call dr_layout_create(yp, [n1, n2, n3], dims, [1, 0, 2])
  ! The element type from a mold (a real64 scalar: only its type matters).
  call dr_plan_create(plan, xp, yp, cart, mold=0.0_real64)
  call check_pencils(plan, dims, coords, failures)
  call dr_plan_destroy(plan)
  call dr_layout_destroy(xp)
  call dr_layout_destroy(yp)
  call MPI_Comm_free(cart, ierr)
end subroutine check_integer_handles

program layouts_test
  use mpi_f08
  use distreshape
  use layouts_checks
  implicit none
  interface
    subroutine check_integer_handles(failures)
      integer, intent(inout) :: failures
    end subroutine check_integer_handles
  end interface
  integer :: rank, nranks, failures, total

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0

  call check_cartesian_pencils()
  call check_integer_handles(failures)
  call check_bricks_to_pencils()
  call check_reshape_with_lengths()
  call check_wrong_grid()

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> x-pencils -> y-pencils on the MPI_Dims_create grid, through the mpi_f08
  !> Cartesian communicator of MPI_Cart_create with the same dims.
  subroutine check_cartesian_pencils()
    type(MPI_Comm) :: cart
    integer :: dims(2), coords(2), cart_rank
    type(dr_layout) :: xp, yp
    type(dr_plan) :: plan
    dims = 0
    call MPI_Dims_create(nranks, 2, dims)
    call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, [.false., .false.], .false., cart)
    call MPI_Comm_rank(cart, cart_rank)
    call MPI_Cart_coords(cart, cart_rank, 2, coords)
    call dr_layout_create(xp, [n1, n2, n3], dims, [0, 1, 2])
    call dr_layout_create(yp, [n1, n2, n3], dims, [1, 0, 2])
    call dr_plan_create(plan, xp, yp, cart, DR_DTYPE_FLOAT64)
    call check_pencils(plan, dims, coords, failures)
    ! A second plan made from copies of the layouts (shared, freed once).
    block
      type(dr_layout) :: xq, yq
      type(dr_plan) :: again
      xq = xp
      yq = yp
      call dr_layout_destroy(xp)
      call dr_plan_create(again, xq, yq, cart, DR_DTYPE_FLOAT64)
      call check_pencils(again, dims, coords, failures)
      call dr_plan_destroy(again)
    end block
    call dr_plan_destroy(plan)
    call MPI_Comm_free(cart)
  end subroutine check_cartesian_pencils

  !> Bricks on the 3-D MPI_Dims_create grid -> z-pencils on the 2-D one, on
  !> MPI_COMM_WORLD (not Cartesian: ranks row-major over each grid), the
  !> element type from the input array (mold=, a default integer of rank 3).
  subroutine check_bricks_to_pencils()
    integer :: d3(3), d2(2), c3(3), c2(2), r
    integer(int64), allocatable :: lb(:), ext(:)
    integer(int64) :: lo(3), len(3)
    integer(int32), allocatable :: a(:, :, :), b(:, :, :)
    type(dr_layout) :: bricks, pencils
    type(dr_plan) :: plan
    d3 = 0
    d2 = 0
    call MPI_Dims_create(nranks, 3, d3)
    call MPI_Dims_create(nranks, 2, d2)
    ! Row-major coordinates of this rank (the last grid axis fastest).
    r = rank
    c3(3) = mod(r, d3(3))
    r = r / d3(3)
    c3(2) = mod(r, d3(2))
    c3(1) = r / d3(2)
    c2(2) = mod(rank, d2(2))
    c2(1) = rank / d2(2)
    call block_of(n1, d3(1), c3(1), lo(1), len(1))
    call block_of(n2, d3(2), c3(2), lo(2), len(2))
    call block_of(n3, d3(3), c3(3), lo(3), len(3))
    a = int(box_indices(lo, len), int32)
    call dr_layout_create(bricks, [n1, n2, n3], d3, [1, 2, 3])
    call dr_layout_create(pencils, [n1, n2, n3], d2, [1, 2, 0])
    call dr_plan_create(plan, bricks, pencils, MPI_COMM_WORLD, mold=a)
    call dr_plan_input_box(plan, lb, ext)
    call expect_box('bricks: input', lb, ext, lo, len, failures)
    call block_of(n1, d2(1), c2(1), lo(1), len(1))
    call block_of(n2, d2(2), c2(2), lo(2), len(2))
    lo(3) = 1
    len(3) = n3
    call dr_plan_output_box(plan, lb, ext)
    call expect_box('pencils: output', lb, ext, lo, len, failures)
    ! A 3-D output not of the box's shape: DR_ERROR_INVALID_SHAPE everywhere.
    block
      integer(int32), allocatable :: wrong(:, :, :)
      integer :: stat
      allocate(wrong(ext(1) + 1, ext(2), ext(3)))
      call dr_plan_execute(plan, a, wrong, stat=stat)
      if (stat /= DR_ERROR_INVALID_SHAPE) then
        failures = failures + 1
        print *, 'mis-shaped output: stat', stat
      end if
    end block
    call dr_plan_allocate_output(plan, b, global_bounds=.true.)
    b = -1
    call dr_plan_execute(plan, a, b)
    call expect_indices('bricks -> pencils', int(b, int64), lo, failures)
  end subroutine check_bricks_to_pencils

  !> (n1, n2, n3) x-pencils -> (12, -1) split along axis 2 on a 1-D grid with
  !> explicit lengths (the remainder on the last rank, unlike the balanced
  !> blocks): a reshape keeps the column-major linear index.
  subroutine check_reshape_with_lengths()
    integer :: dims(2)
    integer(int64) :: lengths(nranks), new_extent, i, j, lo
    integer(int64), allocatable :: lb(:), ext(:), new_gshape(:)
    integer(int64), allocatable :: a(:, :, :), b(:, :)
    type(dr_layout) :: xp, rows
    type(dr_plan) :: plan
    integer(int64) :: ii, jj, kk
    dims = 0
    call MPI_Dims_create(nranks, 2, dims)
    new_extent = n1 * n2 * n3 / 12
    lengths = new_extent / nranks
    lengths(nranks) = new_extent - (nranks - 1) * (new_extent / nranks)
    call dr_layout_create(xp, [n1, n2, n3], dims, [0, 1, 2])
    call dr_layout_create(rows, [12_int64, -1_int64], [nranks], [0, 1])
    call dr_layout_set_lengths(rows, 2, lengths)
    call dr_plan_create(plan, xp, rows, MPI_COMM_WORLD, DR_DTYPE_INT64)
    call dr_plan_output(plan, new_gshape)
    if (any(new_gshape /= [12_int64, new_extent])) then
      failures = failures + 1
      print *, 'reshape: new_gshape', new_gshape
    end if
    call dr_plan_input_box(plan, lb, ext)
    allocate(a(lb(1):lb(1) + ext(1) - 1, lb(2):lb(2) + ext(2) - 1, lb(3):lb(3) + ext(3) - 1))
    do concurrent (ii = lbound(a, 1):ubound(a, 1), jj = lbound(a, 2):ubound(a, 2), &
                   kk = lbound(a, 3):ubound(a, 3))
      a(ii, jj, kk) = gidx(ii, jj, kk)
    end do
    call dr_plan_output_box(plan, lb, ext)
    lo = 1 + sum(lengths(1:rank))
    if (any(lb /= [1_int64, lo]) .or. any(ext /= [12_int64, lengths(rank + 1)])) then
      failures = failures + 1
      print *, 'reshape: output box', lb, ext, 'expected', 1, lo, 12, lengths(rank + 1)
    end if
    call dr_plan_allocate_output(plan, b, global_bounds=.true.)
    b = -1
    call dr_plan_execute(plan, a, b)
    do j = lbound(b, 2, int64), ubound(b, 2, int64)
      do i = lbound(b, 1, int64), ubound(b, 1, int64)
        if (b(i, j) /= (i - 1) + 12 * (j - 1)) then
          failures = failures + 1
          print *, 'reshape: b', i, j, '=', b(i, j)
          return
        end if
      end do
    end do
  end subroutine check_reshape_with_lengths

  !> A grid whose size is not the communicator's: the same stat everywhere.
  subroutine check_wrong_grid()
    type(dr_layout) :: wrong, right
    type(dr_plan) :: plan
    integer :: stat, lowest, highest
    call dr_layout_create(wrong, [n1, n2, n3], [nranks + 1], [0, 0, 1])
    call dr_layout_create(right, [n1, n2, n3], [nranks], [0, 0, 1])
    call dr_plan_create(plan, wrong, right, MPI_COMM_WORLD, DR_DTYPE_FLOAT64, stat=stat)
    call MPI_Allreduce(stat, lowest, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD)
    call MPI_Allreduce(stat, highest, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    if (stat == DR_SUCCESS .or. lowest /= highest) then
      failures = failures + 1
      print *, 'wrong grid: stat', stat, 'min', lowest, 'max', highest
    end if
    if (rank == 0 .and. stat /= DR_SUCCESS) print '(a, i0, 2a)', 'wrong grid: stat ', stat, &
      ': ', dr_last_error_message()
    ! The same with mold= (an int32 array with integer handles' kind of call).
    call dr_plan_create(plan, wrong, right, MPI_COMM_WORLD%MPI_VAL, mold=[1_int32], stat=stat)
    call MPI_Allreduce(stat, lowest, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD)
    if (stat /= DR_ERROR_INVALID_DISTRIBUTION .or. lowest /= stat) then
      failures = failures + 1
      print *, 'wrong grid with mold=: stat', stat, 'min', lowest
    end if
    ! Mismatched axis_grid length: caught before C.
    call dr_layout_create(wrong, [n1, n2, n3], [nranks], [0, 1], stat=stat)
    if (stat /= DR_ERROR_INCONSISTENT_ARGUMENTS) then
      failures = failures + 1
      print *, 'axis_grid length: stat', stat
    end if
  end subroutine check_wrong_grid
end program layouts_test
