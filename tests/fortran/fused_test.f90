!> Fused plans from Fortran (dr_fused_create, dr_fused_execute,
!> dr_fused_destroy, dr_fused_plan, dr_fused_field) on the MPI_Dims_create
!> grid, the arrays passed as they are, never copied (built with -fcheck=all;
!> ctest fails it on gfortran's "array temporary" warning):
!>  * the x -> y transpose of a velocity field (real64, one plan fused three
!>    times, the components sections u(:, :, :, c) of one array) with the
!>    y -> x transpose of a scalar (real32) of other extents;
!>  * the same plan three times alone;
!>  * a strided plan (halo interiors in) with a plan that sends nothing (int64,
!>    a layout to itself) and the scalar;
!>  * copies of the fused object, and plans destroyed before it;
!>  * refusals with the same stat on every rank, nothing written: a count of
!>    fields that is not the plans', a real32 field for a real64 plan on rank 0,
!>    a field of the wrong shape on the last rank, another order on rank 0,
!>    plans of two communicators, a plan never created on the last rank.
!> Field f holds the global indices plus 1000 f; every box element is checked,
!> and every sentinel after the outputs and in the halos, the inputs unchanged.
module fused_checks
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  implicit none
  real(real64), parameter :: sentinel = -7.0_real64, shift = 1000.0_real64

contains

  !> The global indices, column-major and 0-based, of the box of first index
  !> `lo` and extents `len` in an array of shape `n`, plus `shift` times `f`.
  pure function field_box(n, lo, len, f) result(g)
    integer(int64), intent(in) :: n(3), lo(3), len(3)
    integer, intent(in) :: f
    real(real64) :: g(len(1), len(2), len(3))
    integer(int64) :: i, j, k
    do concurrent (i = 1:len(1), j = 1:len(2), k = 1:len(3))
      g(i, j, k) = real((lo(1) + i - 2) + n(1) * ((lo(2) + j - 2) + n(2) * (lo(3) + k - 2)), &
                        real64) + shift * f
    end do
  end function field_box

  !> Counts a failure unless `wrong` is 0.
  subroutine expect_none(what, wrong, failures)
    character(*), intent(in) :: what
    integer, intent(in) :: wrong
    integer, intent(inout) :: failures
    if (wrong /= 0) then
      failures = failures + 1
      print *, what, ':', wrong, ' wrong element(s)'
    end if
  end subroutine expect_none

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
end module fused_checks

program fused_test
  use mpi_f08
  use distreshape
  use fused_checks
  implicit none
  integer(int64), parameter :: vn(3) = [6, 5, 4], sn(3) = [9, 4, 3], in3(3) = [5, 8, 3]
  integer :: rank, nranks, failures, total, dims(2)
  type(dr_layout) :: vx, vy, sy, sx, ix
  type(dr_plan) :: velocity, scalar
  integer(int64), allocatable :: lb(:), ext(:)
  integer(int64) :: vilo(3), vilen(3), volo(3), volen(3), silo(3), silen(3), solo(3), solen(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  dims = 0
  call MPI_Dims_create(nranks, 2, dims)
  call dr_layout_create(vx, vn, dims, [0, 1, 2])
  call dr_layout_create(vy, vn, dims, [1, 0, 2])
  call dr_layout_create(sy, sn, dims, [1, 0, 2])
  call dr_layout_create(sx, sn, dims, [0, 1, 2])
  call dr_layout_create(ix, in3, dims, [0, 1, 2])
  call dr_plan_create(velocity, vx, vy, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
  call dr_plan_create(scalar, sy, sx, MPI_COMM_WORLD, DR_DTYPE_FLOAT32)
  call dr_plan_input_box(velocity, lb, ext)
  vilo = lb
  vilen = ext
  call dr_plan_output_box(velocity, lb, ext)
  volo = lb
  volen = ext
  call dr_plan_input_box(scalar, lb, ext)
  silo = lb
  silen = ext
  call dr_plan_output_box(scalar, lb, ext)
  solo = lb
  solen = ext

  call check_velocity_and_scalar()
  call check_strided_and_still()
  call check_copies_and_kept_plans()
  call check_refusals()

  call dr_plan_destroy(velocity)
  call dr_plan_destroy(scalar)
  call dr_layout_destroy(vx)
  call dr_layout_destroy(vy)
  call dr_layout_destroy(sy)
  call dr_layout_destroy(sx)
  call dr_layout_destroy(ix)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> The velocity's three components and the scalar, twice; then the
  !> velocity plan alone three times.
  subroutine check_velocity_and_scalar()
    real(real64), allocatable, target :: u(:, :, :, :), u0(:, :, :, :), v(:, :, :, :)
    real(real32), allocatable, target :: t(:, :, :), t0(:, :, :), w(:, :, :)
    type(dr_fused) :: fused, three
    integer :: c, round
    allocate(u(vilen(1), vilen(2), vilen(3), 3), v(volen(1), volen(2), volen(3), 4))
    allocate(w(solen(1), solen(2), solen(3) + 1))
    do c = 1, 3
      u(:, :, :, c) = field_box(vn, vilo, vilen, c)
    end do
    t = real(field_box(sn, silo, silen, 4), real32)
    u0 = u
    t0 = t
    call dr_fused_create(fused, [dr_fused_plan(velocity), dr_fused_plan(velocity), &
                                 dr_fused_plan(velocity), dr_fused_plan(scalar)])
    do round = 1, 2
      v = sentinel
      w = real(sentinel, real32)
      call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                    dr_fused_field(u(:, :, :, 2), v(:, :, :, 2)), &
                                    dr_fused_field(u(:, :, :, 3), v(:, :, :, 3)), &
                                    dr_fused_field(t, w(:, :, 1:solen(3)))])
      do c = 1, 3
        call expect_none('velocity component', &
                         count(v(:, :, :, c) /= field_box(vn, volo, volen, c)), failures)
      end do
      call expect_none('the scalar', count(w(:, :, 1:solen(3)) /= &
                                           real(field_box(sn, solo, solen, 4), real32)), failures)
      call expect_none('sentinels after the outputs', count(v(:, :, :, 4) /= sentinel) + &
                       count(w(:, :, solen(3) + 1) /= real(sentinel, real32)), failures)
      call expect_none('inputs', count(u /= u0) + count(t /= t0), failures)
    end do
    call dr_fused_destroy(fused)

    call dr_fused_create(three, [dr_fused_plan(velocity), dr_fused_plan(velocity), &
                                 dr_fused_plan(velocity)])
    v = sentinel
    call dr_fused_execute(three, [dr_fused_field(u(:, :, :, 3), v(:, :, :, 3)), &
                                  dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                  dr_fused_field(u(:, :, :, 2), v(:, :, :, 2))])
    do c = 1, 3
      call expect_none('the same plan three times', &
                       count(v(:, :, :, c) /= field_box(vn, volo, volen, c)), failures)
    end do
  end subroutine check_velocity_and_scalar

  !> A strided plan (halo interiors in) with a plan that sends nothing and the
  !> scalar.
  subroutine check_strided_and_still()
    real(real64), allocatable, target :: h(:, :, :), h0(:, :, :), v(:, :, :)
    integer(int64), allocatable, target :: a(:, :, :), b(:, :, :)
    real(real32), allocatable, target :: t(:, :, :), w(:, :, :)
    logical, allocatable :: interior(:, :, :)
    type(dr_plan) :: halo, still
    type(dr_plan_stats) :: stats
    type(dr_fused) :: fused
    integer(int64), allocatable :: alo(:), alen(:)
    allocate(h(0:vilen(1) + 1, 0:vilen(2) + 1, 0:vilen(3) + 1), source=sentinel)
    allocate(v(volen(1), volen(2), volen(3)), source=sentinel)
    h(1:vilen(1), 1:vilen(2), 1:vilen(3)) = field_box(vn, vilo, vilen, 1)
    h0 = h
    call dr_plan_create_strided(halo, vx, h(1:vilen(1), 1:vilen(2), 1:vilen(3)), vy, v, &
                                MPI_COMM_WORLD)
    call dr_plan_create(still, ix, ix, MPI_COMM_WORLD, DR_DTYPE_INT64)
    call dr_plan_stats_get(still, stats)
    call expect_none('the identity plan sends', int(stats%bytes_sent + stats%bytes_received), &
                     failures)
    call dr_plan_input_box(still, alo, alen)
    allocate(a(alen(1), alen(2), alen(3)), b(alen(1), alen(2), alen(3)))
    a = nint(field_box(in3, alo, alen, 2), int64)
    b = -7
    t = real(field_box(sn, silo, silen, 3), real32)
    allocate(w(solen(1), solen(2), solen(3)), source=real(sentinel, real32))
    call dr_fused_create(fused, [dr_fused_plan(halo), dr_fused_plan(still), dr_fused_plan(scalar)])
    call dr_fused_execute(fused, [dr_fused_field(h(1:vilen(1), 1:vilen(2), 1:vilen(3)), v), &
                                  dr_fused_field(a, b), dr_fused_field(t, w)])
    call expect_none('strided: the output', count(v /= field_box(vn, volo, volen, 1)), failures)
    allocate(interior(0:vilen(1) + 1, 0:vilen(2) + 1, 0:vilen(3) + 1), source=.false.)
    interior(1:vilen(1), 1:vilen(2), 1:vilen(3)) = .true.
    call expect_none('strided: the input and its halo', count(h /= h0), failures)
    call expect_none('strided: the halo holds sentinels', &
                     count(.not. interior .and. h /= sentinel), failures)
    call expect_none('nothing to send', count(b /= nint(field_box(in3, alo, alen, 2), int64)), &
                     failures)
    call expect_none('the scalar with them', &
                     count(w /= real(field_box(sn, solo, solen, 3), real32)), failures)
    call dr_fused_destroy(fused)
    call dr_plan_destroy(halo)
    call dr_plan_destroy(still)
  end subroutine check_strided_and_still

  !> A copy of a fused object shares it; plans destroyed first live on in it.
  subroutine check_copies_and_kept_plans()
    real(real64), allocatable, target :: u(:, :, :), v(:, :, :)
    real(real32), allocatable, target :: t(:, :, :), w(:, :, :)
    type(dr_plan) :: p, q
    type(dr_fused) :: fused, copy
    u = field_box(vn, vilo, vilen, 1)
    t = real(field_box(sn, silo, silen, 2), real32)
    allocate(v(volen(1), volen(2), volen(3)), w(solen(1), solen(2), solen(3)))
    call dr_plan_create(p, vx, vy, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    call dr_plan_create(q, sy, sx, MPI_COMM_WORLD, DR_DTYPE_FLOAT32)
    call dr_fused_create(fused, [dr_fused_plan(p), dr_fused_plan(q)])
    call dr_plan_destroy(p)
    call dr_plan_destroy(q)
    copy = fused
    call dr_fused_destroy(fused)
    v = sentinel
    w = real(sentinel, real32)
    call dr_fused_execute(copy, [dr_fused_field(u, v), dr_fused_field(t, w)])
    call expect_none('plans destroyed first, a copy', &
                     count(v /= field_box(vn, volo, volen, 1)) + &
                     count(w /= real(field_box(sn, solo, solen, 2), real32)), failures)
    call dr_fused_destroy(copy)
    call dr_fused_destroy(copy)  ! a no-op
  end subroutine check_copies_and_kept_plans

  !> Refusals, the same stat on every rank, nothing written.
  subroutine check_refusals()
    real(real64), allocatable, target :: u(:, :, :, :), v(:, :, :, :), wide(:, :, :)
    real(real32), allocatable, target :: t(:, :, :), w(:, :, :), t2(:, :, :)
    type(dr_plan) :: other, never
    type(dr_fused) :: fused, refused
    type(MPI_Comm) :: dup
    integer :: stat, c
    allocate(u(vilen(1), vilen(2), vilen(3), 2), v(volen(1), volen(2), volen(3), 2))
    allocate(wide(vilen(1) + 1, vilen(2), vilen(3)), source=sentinel)
    do c = 1, 2
      u(:, :, :, c) = field_box(vn, vilo, vilen, c)
    end do
    t = real(field_box(sn, silo, silen, 3), real32)
    t2 = t
    allocate(w(solen(1), solen(2), solen(3)))
    v = sentinel
    w = real(sentinel, real32)
    call dr_fused_create(fused, [dr_fused_plan(velocity), dr_fused_plan(velocity), &
                                 dr_fused_plan(scalar)])
    call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                  dr_fused_field(t, w)], stat=stat)
    call expect_stat('two fields for three plans', stat, DR_ERROR_INVALID_SHAPE, failures)
    if (rank == 0) then
      call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                    dr_fused_field(t2, w), dr_fused_field(t, w)], stat=stat)
    else
      call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                    dr_fused_field(u(:, :, :, 2), v(:, :, :, 2)), &
                                    dr_fused_field(t, w)], stat=stat)
    end if
    call expect_stat('a real32 field for a real64 plan on rank 0', stat, DR_ERROR_INVALID_DTYPE, &
                     failures)
    if (rank == nranks - 1) then
      call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                    dr_fused_field(wide, v(:, :, :, 2)), &
                                    dr_fused_field(t, w)], stat=stat)
    else
      call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                    dr_fused_field(u(:, :, :, 2), v(:, :, :, 2)), &
                                    dr_fused_field(t, w)], stat=stat)
    end if
    call expect_stat('a field of the wrong shape on the last rank', stat, DR_ERROR_INVALID_SHAPE, &
                     failures)
    call expect_none('refusals: outputs', count(v /= sentinel) + &
                     count(w /= real(sentinel, real32)), failures)

    if (nranks > 1) then
      if (rank == 0) then
        call dr_fused_create(refused, [dr_fused_plan(scalar), dr_fused_plan(velocity)], stat=stat)
      else
        call dr_fused_create(refused, [dr_fused_plan(velocity), dr_fused_plan(scalar)], stat=stat)
      end if
      call expect_stat('another order on rank 0', stat, DR_ERROR_INCONSISTENT_ARGUMENTS, failures)
    end if
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    call dr_plan_create(other, sy, sx, dup, DR_DTYPE_FLOAT32)
    call dr_fused_create(refused, [dr_fused_plan(velocity), dr_fused_plan(other)], stat=stat)
    call expect_stat('plans of two communicators', stat, DR_ERROR_INVALID_COMMUNICATOR, failures)
    call dr_plan_destroy(other)
    call MPI_Comm_free(dup)
    if (rank == nranks - 1) then
      call dr_fused_create(refused, [dr_fused_plan(velocity), dr_fused_plan(never)], stat=stat)
    else
      call dr_fused_create(refused, [dr_fused_plan(velocity), dr_fused_plan(scalar)], stat=stat)
    end if
    call expect_stat('a plan never created on the last rank', stat, DR_ERROR_NULL_POINTER, failures)

    ! After the refusals it works.
    call dr_fused_execute(fused, [dr_fused_field(u(:, :, :, 1), v(:, :, :, 1)), &
                                  dr_fused_field(u(:, :, :, 2), v(:, :, :, 2)), &
                                  dr_fused_field(t, w)])
    do c = 1, 2
      call expect_none('after the refusals', &
                       count(v(:, :, :, c) /= field_box(vn, volo, volen, c)), failures)
    end do
    call expect_none('after the refusals: the scalar', &
                     count(w /= real(field_box(sn, solo, solen, 3), real32)), failures)
    call dr_fused_destroy(fused)
  end subroutine check_refusals
end program fused_test
