!> Strided plans from Fortran (dr_plan_create_strided): x-pencils to y-pencils
!> of a (6, 5, 4) array on the MPI_Dims_create grid, executed on the arrays as
!> they are, never copied (this test is built with -fcheck=all, and ctest fails
!> it on gfortran's "array temporary" warning):
!>  * halo interiors in and out, halos of 1 and 2;
!>  * strided sections: every other element along dimension 1 in, every other
!>    plane along dimension 3 out;
!>  * input and output interleaved in one array (odd and even elements along
!>    dimension 1);
!>  * a non-blocking execution on halo interiors (no contiguity asked);
!>  * the strides and spans the plan reports;
!>  * mismatches refused on every rank with nothing written: contiguous arrays
!>    on a halo plan, a wrong shape, in place, a mold of the wrong rank, a
!>    negative stride.
!> Every box element is checked against its global index, and every halo or
!> skipped element against its sentinel, the input unchanged.
module strided_checks
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  integer(int64), parameter :: n1 = 6, n2 = 5, n3 = 4
  real(real64), parameter :: sentinel = -7.0_real64

contains

  !> The global indices, column-major and 0-based, of the box of first index
  !> `lo` and extents `len`, as an array of the box's shape.
  pure function box_indices(lo, len) result(g)
    integer(int64), intent(in) :: lo(3), len(3)
    real(real64) :: g(len(1), len(2), len(3))
    integer(int64) :: i, j, k
    do concurrent (i = 1:len(1), j = 1:len(2), k = 1:len(3))
      g(i, j, k) = real((lo(1) + i - 2) + n1 * ((lo(2) + j - 2) + n2 * (lo(3) + k - 2)), real64)
    end do
  end function box_indices

  !> Counts a failure unless `values` (the box of first index `lo`) holds the
  !> global indices.
  subroutine expect_box(what, values, lo, failures)
    character(*), intent(in) :: what
    real(real64), intent(in) :: values(:, :, :)
    integer(int64), intent(in) :: lo(3)
    integer, intent(inout) :: failures
    real(real64) :: want(size(values, 1), size(values, 2), size(values, 3))
    want = box_indices(lo, shape(values, int64))
    if (any(values /= want)) then
      failures = failures + 1
      print *, what, ':', count(values /= want), ' wrong box element(s)'
    end if
  end subroutine expect_box

  !> Counts a failure unless `count_wrong` is 0 (halo or skipped elements
  !> changed).
  subroutine expect_untouched(what, count_wrong, failures)
    character(*), intent(in) :: what
    integer, intent(in) :: count_wrong
    integer, intent(inout) :: failures
    if (count_wrong /= 0) then
      failures = failures + 1
      print *, what, ':', count_wrong, ' element(s) outside the box changed'
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
end module strided_checks

program strided_test
  use mpi_f08
  use distreshape
  use strided_checks
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

  call check_halos()
  call check_sections()
  call check_interleaved()
  call check_begin()
  call check_refusals()

  call dr_layout_destroy(xp)
  call dr_layout_destroy(yp)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> This rank's boxes, from a plan without strides between the same layouts.
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

  !> Halo interiors: u with a halo of 1 in, v with a halo of 2 out; the
  !> plan's strides and spans are the padded arrays'.
  subroutine check_halos()
    real(real64), allocatable :: u(:, :, :), v(:, :, :), u0(:, :, :)
    logical, allocatable :: box(:, :, :)
    integer(int64), allocatable :: in_strides(:), out_strides(:)
    integer(int64) :: in_span, out_span, p(3)
    type(dr_plan) :: plan
    allocate(u(0:ilen(1) + 1, 0:ilen(2) + 1, 0:ilen(3) + 1), source=sentinel)
    allocate(v(-1:olen(1) + 2, -1:olen(2) + 2, -1:olen(3) + 2), source=sentinel)
    u(1:ilen(1), 1:ilen(2), 1:ilen(3)) = box_indices(ilo, ilen)
    u0 = u
    call dr_plan_create_strided(plan, xp, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                                yp, v(1:olen(1), 1:olen(2), 1:olen(3)), MPI_COMM_WORLD)
    call dr_plan_execute(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                         v(1:olen(1), 1:olen(2), 1:olen(3)))
    call expect_box('halos', v(1:olen(1), 1:olen(2), 1:olen(3)), olo, failures)
    allocate(box(-1:olen(1) + 2, -1:olen(2) + 2, -1:olen(3) + 2), source=.true.)
    box(1:olen(1), 1:olen(2), 1:olen(3)) = .false.
    call expect_untouched('halos: output halo', count(box .and. v /= sentinel), failures)
    call expect_untouched('halos: input', count(u /= u0), failures)
    ! The strides (elements, Fortran order) and spans of the padded arrays.
    call dr_plan_strides(plan, in_strides, out_strides)
    p = [1_int64, ilen(1) + 2, (ilen(1) + 2) * (ilen(2) + 2)]
    if (any(in_strides /= p .and. ilen > 1)) then
      failures = failures + 1
      print *, 'halos: input strides', in_strides, 'expected', p
    end if
    p = [1_int64, olen(1) + 4, (olen(1) + 4) * (olen(2) + 4)]
    if (any(out_strides /= p .and. olen > 1)) then
      failures = failures + 1
      print *, 'halos: output strides', out_strides, 'expected', p
    end if
    ! An empty box spans nothing.
    call dr_plan_spans(plan, in_span, out_span)
    if (in_span /= merge(0_int64, 1 + sum((ilen - 1) * in_strides), any(ilen == 0)) .or. &
        out_span /= merge(0_int64, 1 + sum((olen - 1) * out_strides), any(olen == 0))) then
      failures = failures + 1
      print *, 'halos: spans', in_span, out_span
    end if
    ! Executed again: the plan is reusable on the same arrays.
    v(1:olen(1), 1:olen(2), 1:olen(3)) = 0
    call dr_plan_execute(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                         v(1:olen(1), 1:olen(2), 1:olen(3)))
    call expect_box('halos, again', v(1:olen(1), 1:olen(2), 1:olen(3)), olo, failures)
  end subroutine check_halos

  !> Every other element along dimension 1 in, every other plane along
  !> dimension 3 out (sections with stride 2).
  subroutine check_sections()
    real(real64), allocatable :: u(:, :, :), u0(:, :, :), v(:, :, :)
    type(dr_plan) :: plan
    allocate(u(2 * ilen(1), ilen(2), ilen(3)), source=sentinel)
    allocate(v(olen(1), olen(2), 2 * olen(3)), source=sentinel)
    u(1:2 * ilen(1):2, :, :) = box_indices(ilo, ilen)
    u0 = u
    call dr_plan_create_strided(plan, xp, u(1:2 * ilen(1):2, :, :), &
                                yp, v(:, :, 1:2 * olen(3):2), MPI_COMM_WORLD)
    call dr_plan_execute(plan, u(1:2 * ilen(1):2, :, :), v(:, :, 1:2 * olen(3):2))
    call expect_box('sections', v(:, :, 1:2 * olen(3):2), olo, failures)
    call expect_untouched('sections: skipped planes', count(v(:, :, 2:2 * olen(3):2) /= sentinel), &
                          failures)
    call expect_untouched('sections: input', count(u /= u0), failures)
  end subroutine check_sections

  !> Input and output in one array, interleaved: the input in the odd
  !> elements along dimension 1 (w(1::2, :, :)), the output in the even ones
  !> (w(2::2, :, :)). They share no element, so the plan runs on them.
  subroutine check_interleaved()
    real(real64), allocatable :: w(:, :, :), w0(:, :, :)
    logical, allocatable :: outside(:, :, :)
    integer(int64) :: m(3)
    type(dr_plan) :: plan
    m = max(ilen, olen)
    allocate(w(2 * m(1), m(2), m(3)), source=sentinel)
    w(1:2 * ilen(1):2, 1:ilen(2), 1:ilen(3)) = box_indices(ilo, ilen)
    w0 = w
    call dr_plan_create_strided(plan, xp, w(1:2 * ilen(1):2, 1:ilen(2), 1:ilen(3)), &
                                yp, w(2:2 * olen(1):2, 1:olen(2), 1:olen(3)), MPI_COMM_WORLD)
    call dr_plan_execute(plan, w(1:2 * ilen(1):2, 1:ilen(2), 1:ilen(3)), &
                         w(2:2 * olen(1):2, 1:olen(2), 1:olen(3)))
    call expect_box('interleaved', w(2:2 * olen(1):2, 1:olen(2), 1:olen(3)), olo, failures)
    allocate(outside(2 * m(1), m(2), m(3)), source=.true.)
    outside(2:2 * olen(1):2, 1:olen(2), 1:olen(3)) = .false.
    call expect_untouched('interleaved: input and the rest', count(outside .and. w /= w0), &
                          failures)
  end subroutine check_interleaved

  !> A non-blocking execution on halo interiors: neither array is contiguous,
  !> and none needs to be.
  subroutine check_begin()
    real(real64), allocatable, target, asynchronous :: u(:, :, :), v(:, :, :)
    type(dr_plan) :: plan
    type(dr_request) :: request
    logical :: done
    allocate(u(0:ilen(1) + 1, 0:ilen(2) + 1, 0:ilen(3) + 1), source=sentinel)
    allocate(v(0:olen(1) + 1, 0:olen(2) + 1, 0:olen(3) + 1), source=sentinel)
    u(1:ilen(1), 1:ilen(2), 1:ilen(3)) = box_indices(ilo, ilen)
    call dr_plan_create_strided(plan, xp, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                                yp, v(1:olen(1), 1:olen(2), 1:olen(3)), MPI_COMM_WORLD)
    call dr_plan_execute_begin(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                               v(1:olen(1), 1:olen(2), 1:olen(3)), request)
    call dr_request_test(request, done)
    call dr_request_wait(request)
    call expect_box('begin', v(1:olen(1), 1:olen(2), 1:olen(3)), olo, failures)
    v(1:olen(1), 1:olen(2), 1:olen(3)) = sentinel
    call expect_untouched('begin: output halo', count(v /= sentinel), failures)
  end subroutine check_begin

  !> Mismatches, each the same status on every rank and nothing written.
  subroutine check_refusals()
    real(real64), allocatable :: u(:, :, :), v(:, :, :), a(:, :, :), b(:, :, :), flat(:)
    type(dr_plan) :: plan, refused
    integer :: stat
    allocate(u(0:ilen(1) + 1, 0:ilen(2) + 1, 0:ilen(3) + 1), source=sentinel)
    allocate(v(0:olen(1) + 1, 0:olen(2) + 1, 0:olen(3) + 1), source=sentinel)
    allocate(a(ilen(1), ilen(2), ilen(3)), b(olen(1), olen(2), olen(3)), source=sentinel)
    call dr_plan_create_strided(plan, xp, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                                yp, v(1:olen(1), 1:olen(2), 1:olen(3)), MPI_COMM_WORLD)
    ! Contiguous arrays of the box shapes on a plan made from halo interiors:
    ! their strides differ from the plan's (on any rank whose boxes have a
    ! dimension longer than 1 past the first, agreed by all).
    call dr_plan_execute(plan, a, b, stat)
    call expect_stat('contiguous arrays', stat, DR_ERROR_INVALID_STRIDES, failures)
    call expect_untouched('contiguous arrays: output', count(b /= sentinel), failures)
    ! The whole padded arrays: not the boxes' shapes.
    call dr_plan_execute(plan, u, v, stat)
    call expect_stat('padded arrays', stat, DR_ERROR_INVALID_SHAPE, failures)
    call expect_untouched('padded arrays: output', count(v /= sentinel), failures)
    ! In place.
    allocate(flat(max(size(u), size(v))), source=sentinel)
    call dr_plan_execute_in_place(plan, flat, stat)
    call expect_stat('in place', stat, DR_ERROR_INVALID_STRIDES, failures)
    ! A mold of the wrong rank, a mold with a negative stride (dimension 1
    ! is whole, 6 long, in an x-pencil).
    call dr_plan_create_strided(refused, xp, u(1, 1:ilen(2), 1:ilen(3)), &
                                yp, b, MPI_COMM_WORLD, stat=stat)
    call expect_stat('mold of rank 2', stat, DR_ERROR_INVALID_SHAPE, failures)
    call dr_plan_create_strided(refused, xp, a(ilen(1):1:-1, :, :), yp, b, MPI_COMM_WORLD, stat=stat)
    call expect_stat('negative stride', stat, DR_ERROR_INVALID_STRIDES, failures)
    ! The plan still works after the refusals.
    u(1:ilen(1), 1:ilen(2), 1:ilen(3)) = box_indices(ilo, ilen)
    call dr_plan_execute(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                         v(1:olen(1), 1:olen(2), 1:olen(3)))
    call expect_box('after refusals', v(1:olen(1), 1:olen(2), 1:olen(3)), olo, failures)
  end subroutine check_refusals
end program strided_test
