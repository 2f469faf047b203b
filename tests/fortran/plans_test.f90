!> Plans from Fortran: the element type from a mold array, output arrays
!> allocated by the plan (with global bounds), execution in place on one
!> buffer viewed with both shapes, copies sharing a plan, and plans destroyed
!> when they go out of scope (finalization; checked by the memory 20000 plans
!> would otherwise keep).
program plans_test
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int32, int64, real64
  implicit none
  integer :: rank, nranks, failures, total
  integer(int64) :: my_len, offset, new_len, new_offset

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0
  ! (6, 7) split along dimension 2 -> (3, 14) split along dimension 2.
  call dr_balanced_slab(7_int64, nranks, rank, my_len, offset)
  call dr_balanced_slab(14_int64, nranks, rank, new_len, new_offset)

  call check_mold_and_allocate()
  call check_in_place()
  call check_copies()
  call check_nonblocking()
  call check_options()
  call check_chosen_lengths()
  call check_destroy_in_flight()
  call check_finalization()

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> This rank's input slab, filled with global (0-based, column-major) indices.
  function input() result(a)
    integer(int32), allocatable :: a(:, :)
    integer(int64) :: i, j
    allocate(a(6, my_len))
    do j = 1, my_len
      do i = 1, 6
        a(i, j) = int((i - 1) + 6 * (offset + j - 1), int32)
      end do
    end do
  end function input

  !> True when `b(3, lo:hi)` holds the global indices of columns lo..hi (1-based).
  logical function holds_columns(b, lo) result(ok)
    integer(int32), intent(in) :: b(:, :)
    integer(int64), intent(in) :: lo
    integer(int64) :: i, j
    ok = .true.
    do j = 1, size(b, 2, kind=int64)
      do i = 1, 3
        ok = ok .and. b(i, j) == int((i - 1) + 3 * (lo + j - 2), int32)
      end do
    end do
  end function holds_columns

  subroutine check_mold_and_allocate()
    integer(int32), allocatable :: a(:, :), b(:, :)
    type(dr_plan) :: plan
    a = input()
    call dr_plan_create([6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, [3_int64, 14_int64], 2, &
                        plan, mold=a)
    call dr_plan_allocate_output(plan, b, global_bounds=.true.)
    call expect(lbound(b, 2) == new_offset + 1 .and. ubound(b, 2) == new_offset + new_len &
                .and. size(b, 1) == 3, 'allocate_output with global bounds')
    b = -1
    call dr_plan_execute(plan, a, b)
    call expect(holds_columns(b, new_offset + 1), 'execute a plan made from mold=')
    call dr_plan_allocate_output(plan, b)
    call expect(lbound(b, 2) == 1 .and. size(b, 2) == new_len, 'allocate_output, reallocated')
    call dr_plan_destroy(plan)
  end subroutine check_mold_and_allocate

  !> One buffer of max(input, output) elements, viewed as a(6, my_len) before
  !> and b(3, new_len) after, through pointer bounds remapping.
  subroutine check_in_place()
    integer(int32), allocatable, target :: buf(:)
    integer(int32), pointer :: a(:, :), b(:, :)
    integer(int64) :: in_elems, out_elems
    integer :: stat
    type(dr_plan) :: plan
    call dr_plan_create(DR_DTYPE_INT32, [6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, &
                        [3_int64, 14_int64], 2, plan)
    call dr_plan_input(plan, local_elems=in_elems)
    call dr_plan_output(plan, new_local_elems=out_elems)
    allocate(buf(max(in_elems, out_elems)))
    a(1:6, 1:my_len) => buf
    a = input()
    call dr_plan_execute_in_place(plan, buf)
    b(1:3, 1:new_len) => buf
    call expect(holds_columns(b, new_offset + 1), 'execute_in_place')
    ! One element short (on ranks that hold any): the same status everywhere
    ! when the plan communicates, and nothing else goes wrong.
    deallocate(buf)
    allocate(buf(max(in_elems, out_elems, 1_int64) - 1))
    call dr_plan_execute_in_place(plan, buf, stat=stat)
    call expect(stat == DR_ERROR_BUFFER_TOO_SMALL .or. &
                (max(in_elems, out_elems) == 0 .and. stat == DR_SUCCESS), 'in place, one short')
  end subroutine check_in_place

  !> Copies share one plan: destroying one leaves the other working, and a
  !> second destroy is harmless.
  subroutine check_copies()
    integer(int32), allocatable :: a(:, :), b(:, :)
    type(dr_plan) :: plan, copy
    a = input()
    call dr_plan_create(DR_DTYPE_INT32, [6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, &
                        [3_int64, 14_int64], 2, plan)
    copy = plan
    call dr_plan_destroy(plan)
    call dr_plan_destroy(plan)
    call dr_plan_allocate_output(copy, b)
    b = -1
    call dr_plan_execute(copy, a, b)
    call expect(holds_columns(b, new_offset + 1), 'a copy outlives the destroyed original')
    copy = copy
    call dr_plan_execute(copy, a, b)
    call expect(holds_columns(b, new_offset + 1), 'self-assignment keeps the plan')
    call dr_plan_destroy(copy)
  end subroutine check_copies

  !> begin / test loop, then begin / wait; every element checked.
  subroutine check_nonblocking()
    integer(int32), allocatable, asynchronous :: a(:, :), b(:, :)
    type(dr_plan) :: plan
    type(dr_request) :: request
    logical :: done
    integer :: tests
    a = input()
    call dr_plan_create([6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, [3_int64, 14_int64], 2, &
                        plan, mold=a)
    call dr_plan_allocate_output(plan, b)
    b = -1
    call dr_plan_execute_begin(plan, a, b, request)
    done = .false.
    tests = 0
    do while (.not. done)
      call dr_request_test(request, done)
      tests = tests + 1
    end do
    call expect(holds_columns(b, new_offset + 1), 'begin / test loop')
    b = -1
    call dr_plan_execute_begin(plan, a, b, request)
    call dr_request_wait(request)
    call dr_request_wait(request)
    call expect(holds_columns(b, new_offset + 1), 'begin / wait (twice: the second is a no-op)')
    call dr_plan_destroy(plan)
  end subroutine check_nonblocking

  !> Plans with options: tiny limits (cut, packed, windowed messages; in place
  !> in rounds of a few bytes) and switches forced, every element checked; a
  !> knob or a switch out of range on the last rank only: DR_ERROR_INVALID_OPTION
  !> on every rank, the message naming it and that rank.
  subroutine check_options()
    integer(int32), allocatable :: a(:, :), b(:, :)
    integer(int32), allocatable, target :: buf(:)
    integer(int32), pointer :: view(:, :)
    type(dr_plan) :: plan
    type(dr_plan_options) :: tiny, bad
    integer :: stat
    character(16) :: who
    a = input()
    tiny%max_message_bytes = 8
    tiny%slot_bytes = 1
    tiny%run_budget = 4
    tiny%window = 1
    tiny%in_place_budget = 8
    tiny%strided_slots = 0
    tiny%run_messages = 1
    tiny%sleeping_waits = 0
    call dr_plan_create([6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, [3_int64, 14_int64], 2, &
                        plan, mold=a, options=tiny)
    call dr_plan_allocate_output(plan, b)
    b = -1
    call dr_plan_execute(plan, a, b)
    call expect(holds_columns(b, new_offset + 1), 'execute with tiny options')
    allocate(buf(max(size(a), 3 * new_len)))
    buf(1:size(a)) = reshape(a, [size(a)])
    call dr_plan_execute_in_place(plan, buf)
    view(1:3, 1:new_len) => buf
    call expect(holds_columns(view, new_offset + 1), 'in place with tiny options')
    if (rank == nranks - 1) bad%window = 0
    call dr_plan_create(DR_DTYPE_INT32, [6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, &
                        [3_int64, 14_int64], 2, plan, options=bad, stat=stat)
    call expect(stat == DR_ERROR_INVALID_OPTION, 'window 0 on the last rank')
    call expect(index(dr_last_error_message(), 'options.window = 0 is out of range') > 0, &
                'the message names the knob: ' // dr_last_error_message())
    write(who, '(a, i0, a)') '(rank ', nranks - 1, ')'
    call expect(index(dr_last_error_message(), trim(who)) > 0, &
                'the message names the last rank: ' // dr_last_error_message())
    call expect(holds_columns(b, new_offset + 1), 'the old plan still held after the failure')
    bad%window = -1
    if (rank == nranks - 1) bad%direct_reads = 2
    call dr_plan_create(DR_DTYPE_INT32, [6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, &
                        [3_int64, 14_int64], 2, plan, options=bad, stat=stat)
    call expect(stat == DR_ERROR_INVALID_OPTION, 'direct_reads 2 on the last rank')
    call expect(index(dr_last_error_message(), 'options.direct_reads = 2 is out of range') > 0, &
                'the message names the switch: ' // dr_last_error_message())
    call dr_plan_destroy(plan)
  end subroutine check_options

  !> dr_reshape into chosen output lengths (new_local_len): every rank but the
  !> last 2 columns of the (3, 14) output, the last the rest.
  subroutine check_chosen_lengths()
    integer(int32), allocatable :: a(:, :), b(:, :)
    integer(int64) :: mine
    integer :: stat
    a = input()
    mine = merge(14_int64 - 2 * (nranks - 1), 2_int64, rank == nranks - 1)
    allocate(b(3, mine))
    b = -1
    call dr_reshape(a, [6_int64, 7_int64], 2, MPI_COMM_WORLD, [3_int64, 14_int64], 2, b, &
                    new_local_len=mine, stat=stat)
    call expect(stat == DR_SUCCESS .and. holds_columns(b, 2_int64 * rank + 1), &
                'dr_reshape with new_local_len')
  end subroutine check_chosen_lengths

  !> A plan let go on every rank with its execution in flight: the execution
  !> completes (every element written), the request is then complete at once.
  subroutine check_destroy_in_flight()
    integer(int32), allocatable, asynchronous :: a(:, :), b(:, :)
    type(dr_plan) :: plan
    type(dr_request) :: request
    integer :: stat
    a = input()
    call dr_plan_create([6_int64, 7_int64], 2, MPI_COMM_WORLD, my_len, [3_int64, 14_int64], 2, &
                        plan, mold=a)
    call dr_plan_allocate_output(plan, b)
    b = -1
    call dr_plan_execute_begin(plan, a, b, request)
    call dr_plan_destroy(plan)
    call expect(holds_columns(b, new_offset + 1), 'destroyed in flight: the execution completed')
    call dr_request_wait(request, stat=stat)
    call expect(stat == DR_SUCCESS, 'destroyed in flight: the request is complete')
  end subroutine check_destroy_in_flight

  !> 20000 plans made in a subroutine and never destroyed explicitly: they are
  !> finalized on return, so the memory does not grow; the same plans kept
  !> alive show what a leak would cost (the check is sensitive).
  subroutine check_finalization()
    type(dr_plan), allocatable :: kept(:)
    integer(int64) :: before, scoped, alive
    integer :: i
    integer, parameter :: plans = 20000
    before = resident_kib()
    do i = 1, plans
      call make_local_plan()
    end do
    scoped = resident_kib() - before
    allocate(kept(plans))
    do i = 1, plans
      call dr_plan_create(DR_DTYPE_INT32, [6_int64, 7_int64], 2, MPI_COMM_SELF, 7_int64, &
                          [3_int64, 14_int64], 2, kept(i))
    end do
    alive = resident_kib() - before - scoped
    deallocate(kept)
    if (rank == 0) print '(a, i0, a, i0, a)', 'memory growth: ', scoped, ' KiB for finalized plans, ', &
                                               alive, ' KiB for plans kept alive'
    call expect(alive > 4 * (scoped + 1024), 'finalized plans free their memory')
  end subroutine check_finalization

  subroutine make_local_plan()
    type(dr_plan) :: plan
    call dr_plan_create(DR_DTYPE_INT32, [6_int64, 7_int64], 2, MPI_COMM_SELF, 7_int64, &
                        [3_int64, 14_int64], 2, plan)
  end subroutine make_local_plan

  !> This process's resident memory (VmRSS), in KiB.
  integer(int64) function resident_kib()
    character(256) :: line
    integer :: unit, ios
    resident_kib = -1
    open(newunit=unit, file='/proc/self/status', action='read', iostat=ios)
    do while (ios == 0)
      read(unit, '(a)', iostat=ios) line
      if (ios == 0 .and. line(1:6) == 'VmRSS:') read(line(7:), *) resident_kib
    end do
    close(unit)
  end function resident_kib

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a, i0, a, a)', 'rank ', rank, ': FAIL ', what
    end if
  end subroutine expect

end program plans_test
