! The wrapper of the docs' Fortran fragments (```fortran fragment): the names a
! fragment uses without declaring them are the module's, and the fragment is
! the body of a procedure of it (its own declarations hide them). Compiled,
! never run.
module doc_fragment_context
  use, intrinsic :: iso_fortran_env, only: int32, int64, real64
  use mpi_f08
  use distreshape
  implicit none
  integer(int64) :: n = 0, len = 0, new_len = 0, new_elems = 0, my_len = 0, nx = 0, ny = 0, nz = 0
  integer(int64) :: n_in = 0, n_out = 0
  integer(int64), allocatable :: resolved(:)
  integer :: ierr = 0, nranks = 1
  logical :: done = .false.
  type(dr_plan) :: plan
  type(dr_request) :: request
  real(real64), allocatable :: a(:, :, :), b(:, :)
contains
  subroutine doc_fragment()
@FRAGMENT@
  end subroutine doc_fragment
end module doc_fragment_context
