!> Batches from Fortran (dr_plan_execute_batch, dr_plan_execute_batch_begin):
!> x-pencils to y-pencils of a (6, 5, 4) array on the MPI_Dims_create grid, k
!> fields along the last dimension of rank-4 arrays, never copied (built with
!> -fcheck=all; ctest fails it on gfortran's "array temporary" warning):
!>  * k = 3 and k = 1 on contiguous arrays, a sentinel field after the output's;
!>  * a strided plan: halo interiors of every field in and out;
!>  * a non-blocking batch;
!>  * refusals with the same stat on every rank, nothing written: a k that
!>    differs on rank 0, a and b of different k, arrays of the wrong rank,
!>    fields that are not contiguous on the last rank.
!> Field f holds the global indices plus 1000 f; every box element is checked,
!> and every halo and sentinel element, the inputs unchanged.
module batch_checks
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  integer(int64), parameter :: n1 = 6, n2 = 5, n3 = 4
  real(real64), parameter :: sentinel = -7.0_real64, shift = 1000.0_real64

contains

  !> The global indices, column-major and 0-based, of the box of first index
  !> `lo` and extents `len`, plus `shift` times `f`, as an array of the box's shape.
  pure function field_box(lo, len, f) result(g)
    integer(int64), intent(in) :: lo(3), len(3)
    integer, intent(in) :: f
    real(real64) :: g(len(1), len(2), len(3))
    integer(int64) :: i, j, k
    do concurrent (i = 1:len(1), j = 1:len(2), k = 1:len(3))
      g(i, j, k) = real((lo(1) + i - 2) + n1 * ((lo(2) + j - 2) + n2 * (lo(3) + k - 2)), real64) &
                   + shift * f
    end do
  end function field_box

  !> Counts a failure unless every field f of `values` (boxes of first index
  !> `lo`) holds field_box(lo, ..., f).
  subroutine expect_fields(what, values, lo, failures)
    character(*), intent(in) :: what
    real(real64), intent(in) :: values(:, :, :, :)
    integer(int64), intent(in) :: lo(3)
    integer, intent(inout) :: failures
    integer :: f, wrong
    wrong = 0
    do f = 1, size(values, 4)
      wrong = wrong + count(values(:, :, :, f) /= field_box(lo, shape(values(:, :, :, f), int64), f))
    end do
    if (wrong /= 0) then
      failures = failures + 1
      print *, what, ':', wrong, ' wrong field element(s)'
    end if
  end subroutine expect_fields

  !> Counts a failure unless `count_wrong` is 0.
  subroutine expect_untouched(what, count_wrong, failures)
    character(*), intent(in) :: what
    integer, intent(in) :: count_wrong
    integer, intent(inout) :: failures
    if (count_wrong /= 0) then
      failures = failures + 1
      print *, what, ':', count_wrong, ' element(s) changed'
    end if
  end subroutine expect_untouched

  !> Counts a failure unless `stat` is `want`.
  subroutine expect_stat(what, stat, want, failures)
    character(*), intent(in) :: what
    integer, intent(in) :: stat, want
    integer, intent(inout) :: failures
    if (stat /= want) then
      failures = failures + 1
      print *, what, ': stat ', dr_status_string(stat), ', expected ', dr_status_string(want), &
        ': ', dr_last_error_message()
    end if
  end subroutine expect_stat
end module batch_checks

program batch_test
  use mpi_f08
  use distreshape
  use batch_checks
  implicit none
  integer :: rank, nranks, failures, total, dims(2)
  type(dr_layout) :: xp, yp
  integer(int64) :: ilo(3), ilen(3), olo(3), olen(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  dims = 0
  call MPI_Dims_create(nranks, 2, dims)
  call dr_layout_create(xp, [n1, n2, n3], dims, [0, 1, 2])
  call dr_layout_create(yp, [n1, n2, n3], dims, [1, 0, 2])
  call boxes()

  call check_contiguous(3)
  call check_contiguous(1)
  call check_halos()
  call check_begin()
  call check_refusals()

  call dr_layout_destroy(xp)
  call dr_layout_destroy(yp)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> This rank's boxes.
  subroutine boxes()
    type(dr_plan) :: probe
    integer(int64), allocatable :: lb(:), ext(:)
    call dr_plan_create(probe, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    call dr_plan_input_box(probe, lb, ext)
    ilo = lb
    ilen = ext
    call dr_plan_output_box(probe, lb, ext)
    olo = lb
    olen = ext
    call dr_plan_destroy(probe)
  end subroutine boxes

  !> `k` fields of contiguous arrays, twice; the output's extra field keeps its
  !> sentinels.
  subroutine check_contiguous(k)
    integer, intent(in) :: k
    real(real64), allocatable :: u(:, :, :, :), u0(:, :, :, :), v(:, :, :, :)
    type(dr_plan) :: plan
    integer :: f, round
    character(16) :: name
    write (name, '(a, i0)') 'k = ', k
    allocate(u(ilen(1), ilen(2), ilen(3), k), v(olen(1), olen(2), olen(3), k + 1))
    do f = 1, k
      u(:, :, :, f) = field_box(ilo, ilen, f)
    end do
    u0 = u
    call dr_plan_create(plan, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    do round = 1, 2
      v = sentinel
      call dr_plan_execute_batch(plan, u, v(:, :, :, 1:k))
      call expect_fields(trim(name), v(:, :, :, 1:k), olo, failures)
      call expect_untouched(trim(name) // ': the field after', &
                            count(v(:, :, :, k + 1) /= sentinel), failures)
      call expect_untouched(trim(name) // ': inputs', count(u /= u0), failures)
    end do
    call dr_plan_destroy(plan)
  end subroutine check_contiguous

  !> Halo interiors of 3 fields in and out through a strided plan.
  subroutine check_halos()
    real(real64), allocatable :: u(:, :, :, :), u0(:, :, :, :), v(:, :, :, :)
    logical, allocatable :: box(:, :, :, :)
    type(dr_plan) :: plan
    integer :: f
    allocate(u(0:ilen(1) + 1, 0:ilen(2) + 1, 0:ilen(3) + 1, 3), source=sentinel)
    allocate(v(0:olen(1) + 1, 0:olen(2) + 1, 0:olen(3) + 1, 3), source=sentinel)
    do f = 1, 3
      u(1:ilen(1), 1:ilen(2), 1:ilen(3), f) = field_box(ilo, ilen, f)
    end do
    u0 = u
    call dr_plan_create_strided(plan, xp, u(1:ilen(1), 1:ilen(2), 1:ilen(3), 1), &
                                yp, v(1:olen(1), 1:olen(2), 1:olen(3), 1), MPI_COMM_WORLD)
    call dr_plan_execute_batch(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3), :), &
                               v(1:olen(1), 1:olen(2), 1:olen(3), :))
    call expect_fields('halos', v(1:olen(1), 1:olen(2), 1:olen(3), :), olo, failures)
    allocate(box(0:olen(1) + 1, 0:olen(2) + 1, 0:olen(3) + 1, 3), source=.true.)
    box(1:olen(1), 1:olen(2), 1:olen(3), :) = .false.
    call expect_untouched('halos: output halos', count(box .and. v /= sentinel), failures)
    call expect_untouched('halos: inputs', count(u /= u0), failures)
    call dr_plan_destroy(plan)
  end subroutine check_halos

  !> A non-blocking batch of 3 fields.
  subroutine check_begin()
    real(real64), allocatable, target, asynchronous :: u(:, :, :, :), v(:, :, :, :)
    type(dr_plan) :: plan
    type(dr_request) :: request
    logical :: done
    integer :: f
    allocate(u(ilen(1), ilen(2), ilen(3), 3), v(olen(1), olen(2), olen(3), 3))
    do f = 1, 3
      u(:, :, :, f) = field_box(ilo, ilen, f)
    end do
    v = sentinel
    call dr_plan_create(plan, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    call dr_plan_execute_batch_begin(plan, u, v, request)
    done = .false.
    do while (.not. done)
      call dr_request_test(request, done)
    end do
    call dr_request_wait(request)
    call expect_fields('begin', v, olo, failures)
    call dr_plan_destroy(plan)
  end subroutine check_begin

  !> Refusals, the same stat on every rank, nothing written.
  subroutine check_refusals()
    real(real64), allocatable :: u(:, :, :, :), wide(:, :, :, :), v(:, :, :, :)
    type(dr_plan) :: plan
    integer :: stat, k, f
    allocate(u(ilen(1), ilen(2), ilen(3), 3), v(olen(1), olen(2), olen(3), 3))
    allocate(wide(2 * ilen(1), ilen(2), ilen(3), 3), source=sentinel)
    do f = 1, 3
      u(:, :, :, f) = field_box(ilo, ilen, f)
    end do
    wide(1:2 * ilen(1):2, :, :, :) = u
    v = sentinel
    call dr_plan_create(plan, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    if (nranks > 1) then
      k = merge(2, 3, rank == 0)
      call dr_plan_execute_batch(plan, u(:, :, :, 1:k), v(:, :, :, 1:k), stat=stat)
      call expect_stat('a k differing on rank 0', stat, DR_ERROR_INCONSISTENT_ARGUMENTS, failures)
    end if
    call dr_plan_execute_batch(plan, u, v(:, :, :, 1:2), stat=stat)
    call expect_stat('a and b of different k', stat, DR_ERROR_INVALID_SHAPE, failures)
    call dr_plan_execute_batch(plan, u(:, :, :, 1), v(:, :, :, 1), stat=stat)
    call expect_stat('arrays of the box''s rank', stat, DR_ERROR_INVALID_SHAPE, failures)
    ! Every rank's box is whole along dimension 1 (6 elements).
    if (rank == nranks - 1) then
      call dr_plan_execute_batch(plan, wide(1:2 * ilen(1):2, :, :, :), v, stat=stat)
    else
      call dr_plan_execute_batch(plan, u, v, stat=stat)
    end if
    call expect_stat('fields not contiguous on the last rank', stat, DR_ERROR_INVALID_STRIDES, &
                     failures)
    call expect_untouched('refusals: outputs', count(v /= sentinel), failures)
    call dr_plan_destroy(plan)
  end subroutine check_refusals
end program batch_test
