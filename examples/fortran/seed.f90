!> Seed example in Fortran: the same global reshape as examples/c/seed.c in
!> Fortran terms (column-major, dimensions counted from 1): a(10, N, 10)
!> distributed along dimension 2 becomes b of shape (-1, 10) = (10*N, 10)
!> distributed along dimension 1. (C sees the same memory as (10, N, 10)
!> split 1 -> (10, 10*N) split 1.)
!>
!> Every element holds its global flat index, every output element is
!> checked, and rank 0 prints the plan's description and the timings.
!>
!>   mpiexec -n 4 ./seed_fortran [N]        (N defaults to 100000)
program seed
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  integer :: rank, nranks
  integer(int64) :: n, i, j, k, len, offset, new_len, new_offset, new_elems, balanced_len, written
  integer(int64) :: errors, total_errors
  integer(int64), allocatable :: resolved(:)
  real(real64), allocatable :: a(:, :, :), b(:, :)
  real(real64) :: t0, times(3), max_times(3)
  type(dr_plan) :: plan
  character(32) :: arg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  n = 100000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if

  ! This rank holds a(:, offset+1 : offset+len, :) of the global array.
  call dr_balanced_slab(n, nranks, rank, len, offset)
  allocate(a(10, len, 10))
  do k = 1, 10
    do j = 1, len
      do i = 1, 10
        a(i, j, k) = real((i - 1) + 10 * ((offset + j - 1) + n * (k - 1)), real64)
      end do
    end do
  end do

  ! Plan the reshape; without stat= any failure stops the program with a message.
  t0 = MPI_Wtime()
  call dr_plan_create(DR_DTYPE_FLOAT64, [10_int64, n, 10_int64], 2, MPI_COMM_WORLD, len, &
                      [-1_int64, 10_int64], 1, plan)
  times(1) = MPI_Wtime() - t0

  ! The plan tells each rank its share of the output: new_len rows of dimension 1.
  call dr_plan_output(plan, resolved, new_len, new_elems)
  allocate(b(new_len, 10))

  call MPI_Barrier(MPI_COMM_WORLD)
  t0 = MPI_Wtime()
  call dr_plan_execute(plan, a, b)
  times(2) = MPI_Wtime() - t0

  call dr_balanced_slab(resolved(1), nranks, rank, balanced_len, new_offset)
  errors = count_errors()
  if (balanced_len /= new_len .or. new_elems /= size(b, kind=int64)) errors = errors + 1

  ! The same reshape in one call, without keeping a plan.
  b = -1
  t0 = MPI_Wtime()
  call dr_reshape(a, [10_int64, n, 10_int64], 2, MPI_COMM_WORLD, [-1_int64, 10_int64], 1, b, &
                  nout=written)
  times(3) = MPI_Wtime() - t0
  errors = errors + count_errors()
  if (written /= new_elems) errors = errors + 1

  call MPI_Reduce(times, max_times, 3, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD)
  call MPI_Allreduce(errors, total_errors, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    print '(a, a, a, i0, a)', 'distreshape ', dr_version(), ' on ', nranks, ' rank(s)'
    print '(a, i0, a, i0, a)', '(10, ', n, ', 10) split 2 -> (', resolved(1), ', 10) split 1'
    print '(a)', dr_plan_describe(plan)
    print '(a, f9.6, a, f9.6, a, f9.6, a)', 'plan ', max_times(1), ' s, execute ', max_times(2), &
          ' s, one-shot dr_reshape ', max_times(3), ' s (max over ranks)'
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

  !> Number of elements of b that differ from their global index: this rank
  !> holds rows new_offset+1 .. new_offset+new_len of the (10*N, 10) array.
  integer(int64) function count_errors()
    integer(int64) :: r, c
    count_errors = 0
    do c = 1, 10
      do r = 1, new_len
        if (b(r, c) /= real((new_offset + r - 1) + resolved(1) * (c - 1), real64)) &
          count_errors = count_errors + 1
      end do
    end do
  end function count_errors

end program seed
