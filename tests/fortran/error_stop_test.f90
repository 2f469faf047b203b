!> Without stat=, a failing call must end the program with `error stop` and
!> the library's message, like an intrinsic procedure (ctest matches the
!> message; every rank fails alike, so none is left waiting).
program error_stop_test
  use mpi_f08
  use distreshape
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  real(real64) :: a(4), b(4)
  call MPI_Init()
  a = 1
  ! Split along dimension 2 of a 1-d array: DR_ERROR_INVALID_SPLIT on every rank.
  call dr_reshape(a, [4_int64], 2, MPI_COMM_SELF, [4_int64], 0, b)
  print '(a)', 'not reached: dr_reshape returned after a failure without stat='
  call MPI_Finalize()
end program error_stop_test
