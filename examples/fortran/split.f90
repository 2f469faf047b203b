!> Split-changing example in Fortran: the same global reshape as
!> examples/c/split.c in Fortran terms (column-major, dimensions counted
!> from 1): a(10, 100, 1000) distributed along dimension 3 becomes
!> b(10000, 100) distributed along dimension 1. (C sees the same memory as
!> (1000, 100, 10) split 0 -> (100, 10000) split 1.)
!>
!> It also shows the two ways to pass a communicator: type(MPI_Comm) from
!> mpi_f08, or an integer handle as used with `use mpi` (here the handle
!> inside MPI_COMM_WORLD). Every output element is checked, and rank 0
!> prints the plan's description and the timings.
!>
!>   mpiexec -n 4 ./split_fortran
program split
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  integer :: rank, nranks, comm_handle, stat
  integer(int64) :: i, j, k, len, offset, new_len, new_offset, new_elems, balanced_len, written
  integer(int64) :: errors, total_errors
  integer(int64), allocatable :: a(:, :, :), b(:, :), resolved(:)
  real(real64) :: t0, times(2), max_times(2)
  type(dr_plan) :: plan
  type(dr_plan_stats) :: stats

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)

  ! This rank holds a(:, :, offset+1 : offset+len) of the global (10, 100, 1000) array.
  call dr_balanced_slab(1000_int64, nranks, rank, len, offset)
  allocate(a(10, 100, len))
  do k = 1, len
    do j = 1, 100
      do i = 1, 10
        a(i, j, k) = (i - 1) + 10 * ((j - 1) + 100 * (offset + k - 1))
      end do
    end do
  end do

  ! Plan with type(MPI_Comm); check the status ourselves via stat=.
  t0 = MPI_Wtime()
  call dr_plan_create(DR_DTYPE_INT64, [10_int64, 100_int64, 1000_int64], 3, MPI_COMM_WORLD, &
                      len, [10000_int64, 100_int64], 1, plan, stat=stat)
  if (stat /= DR_SUCCESS) then
    print '(a)', 'dr_plan_create failed: ' // dr_last_error_message()
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  times(1) = MPI_Wtime() - t0
  call dr_plan_output(plan, resolved, new_len, new_elems)
  allocate(b(new_len, 100))

  call MPI_Barrier(MPI_COMM_WORLD)
  t0 = MPI_Wtime()
  call dr_plan_execute(plan, a, b)
  times(2) = MPI_Wtime() - t0

  call dr_balanced_slab(resolved(1), nranks, rank, balanced_len, new_offset)
  errors = count_errors()
  if (balanced_len /= new_len .or. new_elems /= size(b, kind=int64)) errors = errors + 1

  ! One-shot reshape with an integer communicator handle (`use mpi` style).
  b = -1
  comm_handle = MPI_COMM_WORLD%MPI_VAL
  call dr_reshape(a, [10_int64, 100_int64, 1000_int64], 3, comm_handle, &
                  [10000_int64, 100_int64], 1, b, nout=written)
  errors = errors + count_errors()
  if (written /= new_elems) errors = errors + 1

  call MPI_Reduce(times, max_times, 2, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD)
  call MPI_Allreduce(errors, total_errors, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    print '(a, i0, a)', '(10, 100, 1000) split 3 -> (10000, 100) split 1 on ', nranks, ' rank(s)'
    print '(a)', dr_plan_describe(plan)
    ! The same numbers, for programs that want them rather than text.
    call dr_plan_stats_get(plan, stats)
    print '(3a, 3(i0, a))', 'rank 0: ', &
          trim(merge('exchange', 'local   ', stats%path == DR_PATH_EXCHANGE)), ' path, ', &
          stats%bytes_sent, ' B sent, ', stats%bytes_received, ' B received, ', &
          stats%bytes_copied_locally, ' B copied locally'
    print '(a, f9.6, a, f9.6, a)', 'plan ', max_times(1), ' s, execute ', max_times(2), &
          ' s (max over ranks)'
    if (total_errors == 0) then
      print '(a)', 'OK: 0 wrong element(s)'
    else
      print '(a, i0, a)', 'FAILED: ', total_errors, ' wrong element(s)'
    end if
  end if

  call dr_plan_destroy(plan)
  call MPI_Finalize()
  if (total_errors /= 0) error stop 1

contains

  !> Number of elements of b differing from their global index: this rank
  !> holds rows new_offset+1 .. new_offset+new_len of the (10000, 100) array.
  integer(int64) function count_errors()
    integer(int64) :: r, c
    count_errors = 0
    do c = 1, 100
      do r = 1, new_len
        if (b(r, c) /= (new_offset + r - 1) + 10000 * (c - 1)) count_errors = count_errors + 1
      end do
    end do
  end function count_errors

end program split
