!> Tests of the Fortran module: column-major shapes and 1-based split
!> dimensions, every element type, both communicator kinds, plans, and stat=
!> for errors (which must not stop the program when stat= is present).
program module_test
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, real32, real64
  use, intrinsic :: iso_c_binding, only: c_bool
  implicit none
  integer :: rank, nranks, stat, failures, total
  integer(int64) :: my_len, offset, new_len, new_offset, nout, i, j, elems
  integer(int64), allocatable :: shape_out(:)
  real(real64), allocatable :: a(:, :), b(:, :)
  type(dr_plan) :: plan
  type(dr_plan_stats) :: stats

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0

  ! (6, 4) split along dimension 2 (columns) -> (2, 12) split along dimension 2.
  call dr_balanced_slab(4_int64, nranks, rank, my_len, offset)
  allocate(a(6, my_len))
  do j = 1, my_len
    do i = 1, 6
      a(i, j) = real((i - 1) + 6 * (offset + j - 1), real64)
    end do
  end do
  call dr_balanced_slab(12_int64, nranks, rank, new_len, new_offset)
  allocate(b(2, new_len))
  call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 2, b, nout=nout)
  call expect(nout == size(b) .and. all(b == expected()), 'real64 (6,4) split 2 -> (2,12) split 2')

  ! The same through the integer handle, every other element type, into a 1-d buffer.
  call check_types()

  ! Not split at all (split 0): every rank holds and gets everything.
  block
    integer(int32) :: whole(3, 4), flat(12)
    whole = reshape([(int(i, int32), i = 0, 11)], [3, 4])
    call dr_reshape(whole, [3_int64, 4_int64], 0, MPI_COMM_WORLD, [12_int64], 0, flat)
    call expect(all(flat == [(int(i, int32), i = 0, 11)]), 'int32 replicated (3,4) -> (12)')
  end block

  ! Plans, with the integer handle.
  call dr_plan_create(DR_DTYPE_FLOAT64, [6_int64, 4_int64], 2, MPI_COMM_WORLD%MPI_VAL, my_len, &
                      [2_int64, -1_int64], 2, plan)
  call dr_plan_output(plan, shape_out, new_len, elems, new_offset=j)
  call expect(all(shape_out == [2, 12]) .and. elems == 2 * new_len, 'dr_plan_output')
  call expect(j == new_offset + 1, 'dr_plan_output: new_offset is 1-based')
  call dr_plan_input(plan, i, j, elems)
  call expect(i == my_len .and. j == offset + 1 .and. elems == 6 * my_len, 'dr_plan_input')
  b = -1
  call dr_plan_execute(plan, a, b)
  call expect(all(b == expected()), 'dr_plan_execute')
  call dr_plan_stats_get(plan, stats)
  call expect(stats%bytes_sent >= 0 .and. stats%peers_sent >= 0, 'dr_plan_stats_get')
  call expect(len(dr_plan_describe(plan)) > 0, 'dr_plan_describe')
  call dr_plan_destroy(plan)
  call dr_plan_destroy(plan)  ! no-op the second time

  ! Errors with stat=: out-of-range Fortran split, bad distribution, small output.
  b = -1
  call dr_reshape(a, [6_int64, 4_int64], 3, MPI_COMM_WORLD, [2_int64, -1_int64], 2, b, stat=stat)
  call expect(stat == DR_ERROR_INVALID_SPLIT .and. all(b == -1), 'split 3 of 2 dimensions')
  call expect(index(dr_last_error_message(), 'split = 3 is out of range for 2 dimensions') > 0, &
              'the message quotes the Fortran split: ' // dr_last_error_message())
  call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 3, b, stat=stat)
  call expect(stat == DR_ERROR_INVALID_SPLIT, 'new split 3 of 2 dimensions')
  call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 2, b, &
                  local_len=my_len + 1, stat=stat)
  call expect(stat == DR_ERROR_INVALID_DISTRIBUTION, 'local_len + 1 on every rank')
  call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 2, b(:, 1:0), &
                  stat=stat)
  call expect(stat == DR_ERROR_INVALID_SHAPE .or. new_len == 0, 'empty output array')
  call check_arrays()
  call check_flat_output()
  call expect(len(dr_last_error_message()) > 0, 'dr_last_error_message')
  call expect(dr_status_string(DR_SUCCESS) /= dr_status_string(DR_ERROR_INTERNAL), &
              'dr_status_string')
  call expect(len(dr_version()) > 0, 'dr_version')

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', merge('OK:     ', 'FAILED: ', total == 0), total, ' failure(s)'
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  !> Expected local output of the (2, 12) split 2 array.
  function expected()
    real(real64) :: expected(2, new_len)
    integer(int64) :: r, c
    do c = 1, new_len
      do r = 1, 2
        expected(r, c) = real((r - 1) + 2 * (new_offset + c - 1), real64)
      end do
    end do
  end function expected

  !> The same reshape for the other element types, with the integer handle,
  !> into rank-1 output buffers (assumed rank accepts any rank).
  subroutine check_types()
    integer :: handle
    real(real32), allocatable :: out_r32(:)
    integer(int32), allocatable :: out_i32(:)
    integer(int64), allocatable :: out_i64(:)
    complex(real32), allocatable :: out_c64(:)
    complex(real64), allocatable :: out_c128(:)
    real(real64), allocatable :: want(:)
    handle = MPI_COMM_WORLD%MPI_VAL
    want = reshape(expected(), [size(b)])
    allocate(out_r32(size(want)), out_i32(size(want)), out_i64(size(want)), &
             out_c64(size(want)), out_c128(size(want)))
    call dr_reshape(real(a, real32), [6_int64, 4_int64], 2, handle, [2_int64, -1_int64], 2, out_r32)
    call expect(all(out_r32 == real(want, real32)), 'real32')
    call dr_reshape(int(a, int32), [6_int64, 4_int64], 2, handle, [2_int64, -1_int64], 2, out_i32)
    call expect(all(out_i32 == int(want, int32)), 'int32')
    call dr_reshape(int(a, int64), [6_int64, 4_int64], 2, handle, [2_int64, -1_int64], 2, out_i64)
    call expect(all(out_i64 == int(want, int64)), 'int64')
    call dr_reshape(cmplx(a, -a, real32), [6_int64, 4_int64], 2, handle, [2_int64, -1_int64], 2, &
                    out_c64)
    call expect(all(out_c64 == cmplx(want, -want, real32)), 'complex(real32)')
    call dr_reshape(cmplx(a, -a, real64), [6_int64, 4_int64], 2, handle, [2_int64, -1_int64], 2, &
                    out_c128)
    call expect(all(out_c128 == cmplx(want, -want, real64)), 'complex(real64)')
    call check_small_kinds(handle, want)
  end subroutine check_types

  !> int8, int16 and logical(c_bool) (DR_DTYPE_INT8, INT16, BOOL): one-shot,
  !> by a plan (mold=) out of place, in place and non-blocking; every element.
  subroutine check_small_kinds(handle, want)
    integer, intent(in) :: handle
    real(real64), intent(in) :: want(:)
    integer(int8), allocatable :: out_i8(:)
    integer(int16), allocatable :: out_i16(:)
    logical(c_bool), allocatable :: out_bool(:)
    allocate(out_i8(size(want)), out_i16(size(want)), out_bool(size(want)))
    call dr_reshape(int(a, int8), [6_int64, 4_int64], 2, handle, [2_int64, -1_int64], 2, out_i8)
    call expect(all(out_i8 == int(want, int8)), 'int8')
    call dr_reshape(int(-a, int16), [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], &
                    2, out_i16)
    call expect(all(out_i16 == int(-want, int16)), 'int16')
    call dr_reshape(logical(mod(int(a), 3) == 0, c_bool), [6_int64, 4_int64], 2, handle, &
                    [2_int64, -1_int64], 2, out_bool)
    call expect(logical(all(out_bool .eqv. logical(mod(int(want), 3) == 0, c_bool))), &
                'logical(c_bool)')
    call check_small_kind_plans(want)
  end subroutine check_small_kinds

  subroutine check_small_kind_plans(want)
    real(real64), intent(in) :: want(:)
    integer(int8), allocatable :: a_i8(:, :), b_i8(:, :), buf_i8(:)
    integer(int16), allocatable, asynchronous :: a_i16(:, :), b_i16(:, :)
    logical(c_bool), allocatable :: a_bool(:, :), b_bool(:, :), buf_bool(:)
    type(dr_plan) :: p8, p16, pbool
    type(dr_request) :: request
    integer(int64) :: n_in, n_out
    a_i8 = int(a, int8)
    call dr_plan_create([6_int64, 4_int64], 2, MPI_COMM_WORLD, my_len, [2_int64, -1_int64], 2, &
                        p8, mold=a_i8)
    call dr_plan_allocate_output(p8, b_i8)
    b_i8 = -1
    call dr_plan_execute(p8, a_i8, b_i8)
    call expect(all(reshape(b_i8, [size(b_i8)]) == int(want, int8)), 'int8 plan')
    call dr_plan_input(p8, local_elems=n_in)
    call dr_plan_output(p8, new_local_elems=n_out)
    allocate(buf_i8(max(n_in, n_out)))
    buf_i8 = -1
    buf_i8(1:n_in) = reshape(a_i8, [n_in])
    call dr_plan_execute_in_place(p8, buf_i8)
    call expect(all(buf_i8(1:n_out) == int(want, int8)), 'int8 in place')
    a_i16 = int(-a, int16)
    call dr_plan_create([6_int64, 4_int64], 2, MPI_COMM_WORLD, my_len, [2_int64, -1_int64], 2, &
                        p16, mold=a_i16)
    call dr_plan_allocate_output(p16, b_i16)
    b_i16 = 0
    call dr_plan_execute_begin(p16, a_i16, b_i16, request)
    call dr_request_wait(request)
    call expect(all(reshape(b_i16, [size(b_i16)]) == int(-want, int16)), 'int16 begin / wait')
    a_bool = logical(mod(int(a), 3) == 0, c_bool)
    call dr_plan_create(DR_DTYPE_BOOL, [6_int64, 4_int64], 2, MPI_COMM_WORLD, my_len, &
                        [2_int64, -1_int64], 2, pbool)
    call dr_plan_allocate_output(pbool, b_bool)
    b_bool = .false.
    call dr_plan_execute(pbool, a_bool, b_bool)
    call expect(logical(all(reshape(b_bool, [size(b_bool)]) .eqv. &
                        logical(mod(int(want), 3) == 0, c_bool))), &
                'logical(c_bool) plan')
    allocate(buf_bool(max(n_in, n_out)))
    buf_bool = .false.
    buf_bool(1:n_in) = reshape(a_bool, [n_in])
    call dr_plan_execute_in_place(pbool, buf_bool)
    call expect(logical(all(buf_bool(1:n_out) .eqv. logical(mod(int(want), 3) == 0, c_bool))), &
                'logical(c_bool) in place')
    call dr_plan_destroy(p8)
    call dr_plan_destroy(p16)
    call dr_plan_destroy(pbool)
  end subroutine check_small_kind_plans

  !> Mis-shaped or short arrays on the last rank only: every rank gets the same
  !> status, nothing is read or written past the arrays, and the message quotes
  !> Fortran shapes.
  subroutine check_arrays()
    real(real64), allocatable :: wrong(:, :), flat(:), out(:, :)
    logical :: last, collective
    last = rank == nranks - 1
    ! a(5, my_len) for gshape (6, 4): one row short on the last rank.
    allocate(wrong(merge(5, 6, last), my_len))
    wrong = 0
    call dr_reshape(wrong, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 2, b, &
                    stat=stat)
    call expect(stat == DR_ERROR_INVALID_SHAPE, 'dr_reshape: a one row short on one rank')
    if (last) call expect(index(dr_last_error_message(), 'a has shape (5, ') > 0, &
                          'the message quotes the Fortran shape: ' // dr_last_error_message())
    ! A flat input one element short of the slab on the last rank.
    allocate(flat(merge(size(a) - 1, size(a), last .and. size(a) > 0)))
    flat = 0
    call dr_reshape(flat, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 2, b, &
                    local_len=my_len, stat=stat)
    call expect(stat == DR_ERROR_BUFFER_TOO_SMALL .or. my_len == 0, 'dr_reshape: flat a short')
    ! A plan executed into an output one column short on the last rank.
    call dr_plan_create(DR_DTYPE_FLOAT64, [6_int64, 4_int64], 2, MPI_COMM_WORLD, my_len, &
                        [2_int64, -1_int64], 2, plan)
    collective = dr_plan_collective()
    allocate(out(2, merge(new_len + 1, new_len, last)))
    out = -1
    call dr_plan_execute(plan, a, out, stat=stat)
    call expect(stat == DR_ERROR_INVALID_SHAPE .or. (.not. collective .and. .not. last), &
                'dr_plan_execute: b a column long on one rank')
    call expect(all(out == -1) .or. stat == DR_SUCCESS, 'nothing written on failure')
    call dr_plan_execute(plan, wrong, b, stat=stat)
    call expect(stat == DR_ERROR_INVALID_SHAPE .or. (.not. collective .and. .not. last), &
                'dr_plan_execute: a one row short on one rank')
    call dr_plan_destroy(plan)
  end subroutine check_arrays

  !> A 1-D output into rank-1 arrays with spare capacity (a flat buffer,
  !> accepted, the spare elements untouched), one-shot and by a plan; then a
  !> 2-D output into an array of the wrong shape on the last rank only: refused
  !> on every rank with the same status, the message naming that rank.
  subroutine check_flat_output()
    real(real64), allocatable :: flat(:), out(:, :)
    integer(int64) :: flat_len, flat_off, spare
    logical :: last
    character(16) :: who
    last = rank == nranks - 1
    ! (6, 4) split along dimension 2 -> (24) split along dimension 1.
    call dr_balanced_slab(24_int64, nranks, rank, flat_len, flat_off)
    do spare = 1, 3
      allocate(flat(flat_len + spare))
      flat = -1
      call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [24_int64], 1, flat, &
                      nout=nout, stat=stat)
      call expect(stat == DR_SUCCESS .and. nout == flat_len, 'dr_reshape: 1-D b with spare room')
      call expect(all(flat(1:flat_len) == [(real(flat_off + i, real64), i = 0, flat_len - 1)]) &
                  .and. all(flat(flat_len + 1:) == -1), '1-D b: every element, spare untouched')
      call dr_plan_create(DR_DTYPE_FLOAT64, [6_int64, 4_int64], 2, MPI_COMM_WORLD, my_len, &
                          [24_int64], 1, plan)
      flat = -1
      call dr_plan_execute(plan, a, flat, stat=stat)
      call expect(stat == DR_SUCCESS, 'dr_plan_execute: 1-D b with spare room')
      call expect(all(flat(1:flat_len) == [(real(flat_off + i, real64), i = 0, flat_len - 1)]) &
                  .and. all(flat(flat_len + 1:) == -1), 'plan, 1-D b: every element')
      call dr_plan_destroy(plan)
      deallocate(flat)
    end do
    ! Short by one on the last rank: too small everywhere.
    allocate(flat(merge(flat_len - 1, flat_len, last .and. flat_len > 0)))
    call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [24_int64], 1, flat, stat=stat)
    call expect(stat == DR_ERROR_BUFFER_TOO_SMALL .or. flat_len == 0, '1-D b one short')
    ! (2, 12): b(2, new_len + 1) on the last rank.
    allocate(out(2, merge(new_len + 1, new_len, last)))
    out = -1
    call dr_reshape(a, [6_int64, 4_int64], 2, MPI_COMM_WORLD, [2_int64, -1_int64], 2, out, &
                    stat=stat)
    call expect(stat == DR_ERROR_INVALID_SHAPE .and. all(out == -1), &
                'dr_reshape: 2-D b a column long on one rank')
    write(who, '(a, i0, a)') '(rank ', nranks - 1, ')'
    call expect(index(dr_last_error_message(), trim(who)) > 0, &
                'the message names the last rank: ' // dr_last_error_message())
  end subroutine check_flat_output

  !> True when the plan moves data between ranks: only then are its execution
  !> errors agreed (a plan that moves nothing executes without communicating).
  logical function dr_plan_collective()
    integer(int64) :: moved, anywhere
    call dr_plan_stats_get(plan, stats)
    moved = stats%bytes_sent + stats%bytes_received
    call MPI_Allreduce(moved, anywhere, 1, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD)
    dr_plan_collective = anywhere > 0
  end function dr_plan_collective

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a, i0, a, a)', 'rank ', rank, ': FAIL ', what
    end if
  end subroutine expect

end program module_test
