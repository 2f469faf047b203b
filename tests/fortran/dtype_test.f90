!> Arrays whose type is not the plan's, on the last rank only, with stat=: the
!> library agrees DR_ERROR_INVALID_DTYPE like its other checks, so every rank
!> of a plan that moves elements between ranks returns it (a plan that moves
!> none makes no collective: the last rank alone), the message naming the last
!> rank; nothing is written, and the inputs (with the halos around them) stay
!> as they were. Every kind of execution: a slab plan (dr_plan_execute,
!> dr_plan_execute_begin, dr_plan_execute_in_place), a layout plan, a strided
!> plan on halo interiors (blocking and not), and batches (blocking and not).
!> The float64 plans get real32 arrays, the last rank's, of the right shapes.
program dtype_test
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real32, real64
  implicit none
  real(real64), parameter :: sentinel = -7.0_real64
  integer(int64), parameter :: n1 = 6, n2 = 5, n3 = 4
  integer :: rank, nranks, last, failures, total, dims(2)
  type(dr_layout) :: xp, yp
  integer(int64) :: ilen(3), olen(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  last = nranks - 1
  failures = 0
  dims = 0
  call MPI_Dims_create(nranks, 2, dims)
  call dr_layout_create(xp, [n1, n2, n3], dims, [0, 1, 2])
  call dr_layout_create(yp, [n1, n2, n3], dims, [1, 0, 2])
  call boxes()

  call check_slab_plan()
  call check_layout_plan()
  call check_strided_plan()
  call check_batches()

  call dr_layout_destroy(xp)
  call dr_layout_destroy(yp)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> This rank's pencil boxes.
  subroutine boxes()
    type(dr_plan) :: probe
    integer(int64), allocatable :: lb(:), ext(:)
    call dr_plan_create(probe, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    call dr_plan_input_box(probe, lb, ext)
    ilen = ext
    call dr_plan_output_box(probe, lb, ext)
    olen = ext
    call dr_plan_destroy(probe)
  end subroutine boxes

  !> (6, 7) split along dimension 2 to (3, 14) split along dimension 2.
  subroutine check_slab_plan()
    real(real64), allocatable, target, asynchronous :: a(:, :), b(:, :), buf(:)
    real(real32), allocatable, target, asynchronous :: a32(:, :), b32(:, :), buf32(:)
    integer(int64) :: my_len, new_len, offset, elems
    type(dr_plan) :: plan
    type(dr_request) :: request
    integer :: stat
    logical :: refused
    call dr_balanced_slab(7_int64, nranks, rank, my_len, offset)
    call dr_plan_create(DR_DTYPE_FLOAT64, [6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, &
                        [3_int64, 14_int64], 2, plan)
    refused = refused_here(plan)
    call dr_plan_output(plan, new_local_len=new_len)
    allocate(a(6, my_len), source=1.0_real64)
    allocate(b(3, new_len), source=sentinel)
    allocate(a32(6, my_len), source=1.0_real32)
    allocate(b32(3, new_len), source=real(sentinel, real32))
    elems = max(6 * my_len, 3 * new_len)
    allocate(buf(elems), source=sentinel)
    allocate(buf32(elems), source=real(sentinel, real32))
    if (rank == last) then
      call dr_plan_execute(plan, a32, b32, stat=stat)
    else
      call dr_plan_execute(plan, a, b, stat=stat)
    end if
    call expect_refused(refused, 'dr_plan_execute', stat)
    if (rank == last) then
      call dr_plan_execute_begin(plan, a32, b32, request, stat=stat)
    else
      call dr_plan_execute_begin(plan, a, b, request, stat=stat)
    end if
    call expect_refused(refused, 'dr_plan_execute_begin', stat)
    call dr_request_wait(request)
    if (rank == last) then
      call dr_plan_execute_in_place(plan, buf32, stat=stat)
    else
      call dr_plan_execute_in_place(plan, buf, stat=stat)
    end if
    call expect_refused(refused, 'dr_plan_execute_in_place', stat)
    if (refused) call expect_untouched('slab outputs', &
                                       count(b /= sentinel) + count(b32 /= sentinel) &
                                       + count(buf /= sentinel) + count(buf32 /= sentinel))
    call expect_untouched('slab inputs', count(a /= 1) + count(a32 /= 1))
    call dr_plan_destroy(plan)
  end subroutine check_slab_plan

  !> A layout plan executed on the pencils.
  subroutine check_layout_plan()
    real(real64), allocatable :: u(:, :, :), v(:, :, :)
    real(real32), allocatable :: u32(:, :, :), v32(:, :, :)
    type(dr_plan) :: plan
    integer :: stat
    logical :: refused
    allocate(u(ilen(1), ilen(2), ilen(3)), source=1.0_real64)
    allocate(v(olen(1), olen(2), olen(3)), source=sentinel)
    allocate(u32(ilen(1), ilen(2), ilen(3)), source=1.0_real32)
    allocate(v32(olen(1), olen(2), olen(3)), source=real(sentinel, real32))
    call dr_plan_create(plan, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    refused = refused_here(plan)
    if (rank == last) then
      call dr_plan_execute(plan, u32, v32, stat=stat)
    else
      call dr_plan_execute(plan, u, v, stat=stat)
    end if
    call expect_refused(refused, 'a layout plan', stat)
    if (refused) call expect_untouched('layout outputs', &
                                       count(v /= sentinel) + count(v32 /= sentinel))
    call expect_untouched('layout inputs', count(u /= 1) + count(u32 /= 1))
    call dr_plan_destroy(plan)
  end subroutine check_layout_plan

  !> A strided plan made from halo interiors (halo 1), executed on them.
  subroutine check_strided_plan()
    real(real64), allocatable, target, asynchronous :: u(:, :, :), v(:, :, :)
    real(real32), allocatable, target, asynchronous :: u32(:, :, :), v32(:, :, :)
    type(dr_plan) :: plan
    type(dr_request) :: request
    integer :: stat
    logical :: refused
    allocate(u(0:ilen(1) + 1, 0:ilen(2) + 1, 0:ilen(3) + 1), source=1.0_real64)
    allocate(v(0:olen(1) + 1, 0:olen(2) + 1, 0:olen(3) + 1), source=sentinel)
    allocate(u32(0:ilen(1) + 1, 0:ilen(2) + 1, 0:ilen(3) + 1), source=1.0_real32)
    allocate(v32(0:olen(1) + 1, 0:olen(2) + 1, 0:olen(3) + 1), source=real(sentinel, real32))
    call dr_plan_create_strided(plan, xp, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                                yp, v(1:olen(1), 1:olen(2), 1:olen(3)), MPI_COMM_WORLD)
    refused = refused_here(plan)
    if (rank == last) then
      call dr_plan_execute(plan, u32(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                           v32(1:olen(1), 1:olen(2), 1:olen(3)), stat=stat)
    else
      call dr_plan_execute(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                           v(1:olen(1), 1:olen(2), 1:olen(3)), stat=stat)
    end if
    call expect_refused(refused, 'a strided plan', stat)
    if (rank == last) then
      call dr_plan_execute_begin(plan, u32(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                                 v32(1:olen(1), 1:olen(2), 1:olen(3)), request, stat=stat)
    else
      call dr_plan_execute_begin(plan, u(1:ilen(1), 1:ilen(2), 1:ilen(3)), &
                                 v(1:olen(1), 1:olen(2), 1:olen(3)), request, stat=stat)
    end if
    call expect_refused(refused, 'a strided plan, begun', stat)
    call dr_request_wait(request)
    if (refused) call expect_untouched('strided outputs', &
                                       count(v /= sentinel) + count(v32 /= sentinel))
    call expect_untouched('strided inputs and their halos', count(u /= 1) + count(u32 /= 1))
    call dr_plan_destroy(plan)
  end subroutine check_strided_plan

  !> Batches of 2 fields along the last dimension.
  subroutine check_batches()
    real(real64), allocatable, asynchronous :: u(:, :, :, :), v(:, :, :, :)
    real(real32), allocatable, asynchronous :: u32(:, :, :, :), v32(:, :, :, :)
    type(dr_plan) :: plan
    type(dr_request) :: request
    integer :: stat
    logical :: refused
    allocate(u(ilen(1), ilen(2), ilen(3), 2), source=1.0_real64)
    allocate(v(olen(1), olen(2), olen(3), 2), source=sentinel)
    allocate(u32(ilen(1), ilen(2), ilen(3), 2), source=1.0_real32)
    allocate(v32(olen(1), olen(2), olen(3), 2), source=real(sentinel, real32))
    call dr_plan_create(plan, xp, yp, MPI_COMM_WORLD, DR_DTYPE_FLOAT64)
    refused = refused_here(plan)
    if (rank == last) then
      call dr_plan_execute_batch(plan, u32, v32, stat=stat)
    else
      call dr_plan_execute_batch(plan, u, v, stat=stat)
    end if
    call expect_refused(refused, 'dr_plan_execute_batch', stat)
    if (rank == last) then
      call dr_plan_execute_batch_begin(plan, u32, v32, request, stat=stat)
    else
      call dr_plan_execute_batch_begin(plan, u, v, request, stat=stat)
    end if
    call expect_refused(refused, 'dr_plan_execute_batch_begin', stat)
    call dr_request_wait(request)
    if (refused) call expect_untouched('batch outputs', &
                                       count(v /= sentinel) + count(v32 /= sentinel))
    call expect_untouched('batch inputs', count(u /= 1) + count(u32 /= 1))
    call dr_plan_destroy(plan)
  end subroutine check_batches

  !> True on the ranks that must refuse an execution of `plan` with the wrong
  !> type on the last rank: the last rank, and every rank when `plan` moves
  !> elements between ranks (collective).
  logical function refused_here(plan)
    type(dr_plan), intent(in) :: plan
    type(dr_plan_stats) :: stats
    logical :: mine, moves
    call dr_plan_stats_get(plan, stats)
    mine = stats%peers_sent > 0 .or. stats%peers_received > 0
    call MPI_Allreduce(mine, moves, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD)
    refused_here = moves .or. rank == last
  end function refused_here

  !> Counts a failure unless `stat` is DR_ERROR_INVALID_DTYPE naming the last
  !> rank where the execution is `refused`, DR_SUCCESS elsewhere.
  subroutine expect_refused(refused, what, stat)
    logical, intent(in) :: refused
    character(*), intent(in) :: what
    integer, intent(in) :: stat
    character(16) :: named
    integer :: want
    want = merge(DR_ERROR_INVALID_DTYPE, DR_SUCCESS, refused)
    write (named, '(a, i0, a)') '(rank ', last, ')'
    if (stat /= want) then
      failures = failures + 1
      print *, what, ' on rank ', rank, ': stat ', dr_status_string(stat), ', expected ', &
        dr_status_string(want), ': ', dr_last_error_message()
    else if (refused .and. index(dr_last_error_message(), trim(named)) == 0) then
      failures = failures + 1
      print *, what, ' on rank ', rank, ': the message does not name ', trim(named), ': ', &
        dr_last_error_message()
    end if
  end subroutine expect_refused

  !> Counts a failure unless `count_wrong` is 0.
  subroutine expect_untouched(what, count_wrong)
    character(*), intent(in) :: what
    integer, intent(in) :: count_wrong
    if (count_wrong /= 0) then
      failures = failures + 1
      print *, what, ':', count_wrong, ' element(s) written'
    end if
  end subroutine expect_untouched
end program dtype_test
