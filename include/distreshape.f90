!> Fortran 2008 interface to distreshape: reshape N-d arrays distributed over
!> the ranks of an MPI communicator.
!>
!> Conventions (Fortran view of the C API in distreshape.h):
!>  * Shapes are given in Fortran (column-major) order: a global array of shape
!>    (n1, ..., nk) is the C array of shape (nk, ..., n1), same memory layout.
!>  * `split` is the 1-based dimension the array is distributed along, 0 means
!>    "not split" (every rank holds the whole array). Fortran dimension d is C
!>    dimension k - d. Messages from dr_last_error_message quote shapes and
!>    dimensions as the Fortran caller passed them: `gshape (6, 5, 4)`,
!>    `split = 5 is out of range for 3 dimensions`.
!>  * Arrays are checked on every rank: an array whose rank equals the number
!>    of dimensions must have this rank's slab shape exactly (the global
!>    extents, and the local length along the split dimension), otherwise
!>    DR_ERROR_INVALID_SHAPE; an array of any other rank (e.g. a flat buffer)
!>    must hold at least the slab's elements, otherwise
!>    DR_ERROR_BUFFER_TOO_SMALL. The status is the same on every rank (agreed
!>    like every buffer error).
!>  * Communicators are `type(MPI_Comm)` (mpi_f08) or plain `integer` handles
!>    (`use mpi`); both specifics exist for every procedure taking one.
!>  * Data arrays may have any rank (assumed rank), element type real32,
!>    real64, int32, int64, complex(real32) or complex(real64). Non-contiguous
!>    actual arguments are copied in/out by the compiler. The input and output
!>    must be different arrays (Fortran forbids aliased arguments).
!>  * Every procedure returning a status has an optional `stat` argument; when
!>    it is absent, a failure ends the program with `error stop` and the
!>    library's message, like intrinsic procedures do. Collective procedures
!>    return the same status on every rank, so all ranks stop together.
module distreshape
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_loc, c_associated, c_f_pointer, &
                                         c_int, c_int32_t, c_int64_t, c_size_t, c_char
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use mpi_f08, only: MPI_Comm
  implicit none
  private

  public :: dr_reshape, dr_plan_create, dr_plan_output, dr_plan_input, dr_plan_execute, &
            dr_plan_stats_get, &
            dr_plan_describe, dr_plan_destroy, dr_balanced_slab, dr_status_string, &
            dr_last_error_message, dr_version

  !> Status codes (enum dr_status).
  integer, parameter, public :: DR_SUCCESS = 0, DR_ERROR_NULL_POINTER = 1, &
       DR_ERROR_INVALID_DTYPE = 2, DR_ERROR_INVALID_SHAPE = 3, DR_ERROR_INVALID_SPLIT = 4, &
       DR_ERROR_INVALID_DISTRIBUTION = 5, DR_ERROR_INCONSISTENT_ARGUMENTS = 6, &
       DR_ERROR_BUFFER_TOO_SMALL = 7, DR_ERROR_ALIASING = 8, DR_ERROR_OUT_OF_MEMORY = 9, &
       DR_ERROR_MPI = 10, DR_ERROR_MPI_NOT_INITIALIZED = 11, &
       DR_ERROR_INVALID_COMMUNICATOR = 12, DR_ERROR_INTERNAL = 13

  !> Element types (enum dr_dtype), needed by dr_plan_create. dr_plan_execute
  !> has specifics for FLOAT32, FLOAT64, INT32, INT64, COMPLEX64, COMPLEX128.
  integer, parameter, public :: DR_DTYPE_INT8 = 0, DR_DTYPE_INT16 = 1, DR_DTYPE_INT32 = 2, &
       DR_DTYPE_INT64 = 3, DR_DTYPE_UINT8 = 4, DR_DTYPE_UINT16 = 5, DR_DTYPE_UINT32 = 6, &
       DR_DTYPE_UINT64 = 7, DR_DTYPE_FLOAT32 = 8, DR_DTYPE_FLOAT64 = 9, &
       DR_DTYPE_COMPLEX64 = 10, DR_DTYPE_COMPLEX128 = 11, DR_DTYPE_BOOL = 12

  !> Execution paths (enum dr_path), reported in dr_plan_stats%path.
  integer, parameter, public :: DR_PATH_LOCAL = 0, DR_PATH_EXCHANGE = 1

  !> A reusable reshape plan. Create with dr_plan_create, free with
  !> dr_plan_destroy (no finalizer: copies of a plan share one C handle).
  type, public :: dr_plan
    private
    type(c_ptr) :: handle = c_null_ptr
    integer :: dtype = -1
    integer :: new_ndims = 0
  end type dr_plan

  !> Traffic statistics of a plan (struct dr_plan_stats).
  type, bind(c), public :: dr_plan_stats
    integer(c_int) :: path
    integer(c_int64_t) :: bytes_sent, bytes_received, bytes_copied_locally
    integer(c_int32_t) :: peers_sent, peers_received
  end type dr_plan_stats

  !> call dr_reshape(a, gshape, split, comm, new_gshape, new_split, b
  !>                 [, nout] [, local_len] [, stat])
  !> One-shot collective reshape of the local part `a` of a global array of
  !> shape `gshape` split along `split` into `b`, this rank's part of the array
  !> of shape `new_gshape` (one entry may be -1) split along `new_split`
  !> (balanced slabs). `nout` returns the number of elements written to `b`.
  !> `local_len` (this rank's extent along `split`) defaults to
  !> size(a, split) when rank(a) == size(gshape), otherwise to
  !> size(a) / (product of the other global extents).
  interface dr_reshape
    module procedure reshape_r32, reshape_r64, reshape_i32, reshape_i64, reshape_c64, &
                     reshape_c128, reshape_r32_int, reshape_r64_int, reshape_i32_int, &
                     reshape_i64_int, reshape_c64_int, reshape_c128_int
  end interface dr_reshape

  !> call dr_plan_create(dtype, gshape, split, comm, local_len, new_gshape, new_split, plan
  !>                     [, new_local_len] [, stat])
  !> Collective. new_local_len = -1 (default) means balanced slabs; it is ignored
  !> (any value, on any rank) when the output is not split (new_split = 0).
  interface dr_plan_create
    module procedure plan_create_f08, plan_create_int
  end interface dr_plan_create

  !> call dr_plan_execute(plan, a, b [, stat]); collective.
  interface dr_plan_execute
    module procedure execute_r32, execute_r64, execute_i32, execute_i64, execute_c64, execute_c128
  end interface dr_plan_execute

  ! ---- the C functions (comm-taking ones through fortran/distreshape_fshim.c) ----
  interface
    integer(c_int) function c_reshape(a, a_ndims, a_shape, dtype, ndims, gshape, split, comm, &
        local_len, new_ndims, new_gshape, new_split, b, b_ndims, b_shape, new_local_elems) &
        bind(c, name="dr_reshape_f")
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: a, b
      integer(c_int), value :: dtype
      integer, value :: comm
      integer(c_int32_t), value :: a_ndims, ndims, split, new_ndims, new_split, b_ndims
      integer(c_int64_t), intent(in) :: a_shape(*), gshape(*), new_gshape(*), b_shape(*)
      integer(c_int64_t), value :: local_len
      integer(c_int64_t), intent(out) :: new_local_elems
    end function c_reshape

    integer(c_int) function c_plan_create(dtype, ndims, gshape, split, comm, local_len, &
        new_ndims, new_gshape, new_split, new_local_len, plan) bind(c, name="dr_plan_create_f")
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      integer(c_int), value :: dtype
      integer, value :: comm
      integer(c_int32_t), value :: ndims, split, new_ndims, new_split
      integer(c_int64_t), intent(in) :: gshape(*), new_gshape(*)
      integer(c_int64_t), value :: local_len, new_local_len
      type(c_ptr), intent(out) :: plan
    end function c_plan_create

    integer(c_int) function c_plan_output(plan, new_gshape, new_local_len, new_local_elems) &
        bind(c, name="dr_plan_output")
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: plan
      integer(c_int64_t), intent(out) :: new_gshape(*), new_local_len, new_local_elems
    end function c_plan_output

    integer(c_int) function c_plan_input_slab(plan, len, offset, elems) &
        bind(c, name="dr_plan_input_slab")
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: plan
      integer(c_int64_t), intent(out) :: len, offset, elems
    end function c_plan_input_slab

    integer(c_int) function c_plan_output_slab(plan, len, offset, elems) &
        bind(c, name="dr_plan_output_slab")
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: plan
      integer(c_int64_t), intent(out) :: len, offset, elems
    end function c_plan_output_slab

    integer(c_int) function c_plan_execute(plan, a, a_ndims, a_shape, b, b_ndims, b_shape) &
        bind(c, name="dr_fortran_plan_execute")
      import :: c_ptr, c_int, c_int32_t, c_int64_t
      type(c_ptr), value :: plan, a, b
      integer(c_int32_t), value :: a_ndims, b_ndims
      integer(c_int64_t), intent(in) :: a_shape(*), b_shape(*)
    end function c_plan_execute

    integer(c_int) function c_plan_stats_get(plan, stats) bind(c, name="dr_plan_stats_get")
      import :: c_ptr, c_int, dr_plan_stats
      type(c_ptr), value :: plan
      type(dr_plan_stats), intent(out) :: stats
    end function c_plan_stats_get

    integer(c_int) function c_plan_describe(plan, buf, len, needed) bind(c, name="dr_plan_describe")
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: plan, buf
      integer(c_size_t), value :: len
      integer(c_size_t), intent(out) :: needed
    end function c_plan_describe

    subroutine c_plan_destroy(plan) bind(c, name="dr_plan_destroy")
      import :: c_ptr
      type(c_ptr), value :: plan
    end subroutine c_plan_destroy

    integer(c_int) function c_balanced_slab(extent, nranks, rank, len, offset) &
        bind(c, name="dr_balanced_slab")
      import :: c_int, c_int32_t, c_int64_t
      integer(c_int64_t), value :: extent
      integer(c_int32_t), value :: nranks, rank
      integer(c_int64_t), intent(out) :: len, offset
    end function c_balanced_slab

    type(c_ptr) function c_status_string(status) bind(c, name="dr_status_string")
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function c_status_string

    type(c_ptr) function c_last_error_message() bind(c, name="dr_last_error_message")
      import :: c_ptr
    end function c_last_error_message

    type(c_ptr) function c_version() bind(c, name="dr_version")
      import :: c_ptr
    end function c_version

    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function c_strlen
  end interface

contains

  ! ======================= helpers =======================

  !> This rank's extent along `split`, derived from the local array's shape
  !> (see dr_reshape) unless given explicitly.
  pure integer(int64) function local_extent(ashape, gshape, split, local_len)
    integer(int64), intent(in) :: ashape(:), gshape(:)
    integer, intent(in) :: split
    integer(int64), intent(in), optional :: local_len
    integer(int64) :: others
    if (present(local_len)) then
      local_extent = local_len
    else if (split < 1 .or. split > size(gshape)) then
      local_extent = 0          ! not split (ignored) or invalid (reported by the library)
    else if (size(ashape) == size(gshape)) then
      local_extent = ashape(split)
    else
      others = product(gshape) / max(gshape(split), 1_int64)
      local_extent = 0
      if (others > 0) local_extent = product(ashape) / others
    end if
  end function local_extent

  !> Copy a NUL-terminated C string into an allocatable Fortran string.
  function f_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    call c_f_pointer(p, chars, [c_strlen(p)])
    allocate(character(size(chars)) :: s)
    do i = 1, size(chars)
      s(i:i) = chars(i)
    end do
  end function f_string

  !> Hand a status to the caller: store it in `stat`, or stop on failure.
  subroutine finish(status, stat)
    integer(c_int), intent(in) :: status
    integer, intent(out), optional :: stat
    character(:), allocatable :: message
    if (present(stat)) then
      stat = status
    else if (status /= DR_SUCCESS) then
      message = 'distreshape: ' // dr_last_error_message()
      error stop message
    end if
  end subroutine finish

  !> Shared body of all dr_reshape specifics. The library checks the arrays'
  !> shapes against the plan and words its messages in Fortran terms.
  subroutine reshape_core(dtype, a, ashape, gshape, split, fcomm, new_gshape, new_split, &
                          b, bshape, nout, local_len, stat)
    integer, intent(in) :: dtype, split, new_split
    type(c_ptr), intent(in) :: a, b
    integer(int64), intent(in) :: ashape(:), gshape(:), new_gshape(:), bshape(:)
    integer, intent(in) :: fcomm
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    integer(c_int64_t) :: written
    integer(c_int) :: status
    status = c_reshape(a, size(ashape, kind=c_int32_t), ashape, int(dtype, c_int), &
                       size(gshape, kind=c_int32_t), gshape, int(split, c_int32_t), fcomm, &
                       local_extent(ashape, gshape, split, local_len), &
                       size(new_gshape, kind=c_int32_t), new_gshape, int(new_split, c_int32_t), &
                       b, size(bshape, kind=c_int32_t), bshape, written)
    if (status == DR_SUCCESS .and. present(nout)) nout = written
    call finish(status, stat)
  end subroutine reshape_core

  ! ======================= dr_reshape specifics =======================
  ! Each specific only supplies the element type, the data addresses and the
  ! integer communicator handle (comm%MPI_VAL for mpi_f08).

  subroutine reshape_r32(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    real(real32), dimension(..), contiguous, target, intent(in) :: a
    real(real32), dimension(..), contiguous, target, intent(inout) :: b
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_FLOAT32, c_loc(a), shape(a, int64), gshape, split, comm%MPI_VAL, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_r32

  subroutine reshape_r64(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    real(real64), dimension(..), contiguous, target, intent(in) :: a
    real(real64), dimension(..), contiguous, target, intent(inout) :: b
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_FLOAT64, c_loc(a), shape(a, int64), gshape, split, comm%MPI_VAL, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_r64

  subroutine reshape_i32(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    integer(int32), dimension(..), contiguous, target, intent(in) :: a
    integer(int32), dimension(..), contiguous, target, intent(inout) :: b
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_INT32, c_loc(a), shape(a, int64), gshape, split, comm%MPI_VAL, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_i32

  subroutine reshape_i64(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    integer(int64), dimension(..), contiguous, target, intent(in) :: a
    integer(int64), dimension(..), contiguous, target, intent(inout) :: b
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_INT64, c_loc(a), shape(a, int64), gshape, split, comm%MPI_VAL, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_i64

  subroutine reshape_c64(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    complex(real32), dimension(..), contiguous, target, intent(in) :: a
    complex(real32), dimension(..), contiguous, target, intent(inout) :: b
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_COMPLEX64, c_loc(a), shape(a, int64), gshape, split, comm%MPI_VAL, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_c64

  subroutine reshape_c128(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    complex(real64), dimension(..), contiguous, target, intent(in) :: a
    complex(real64), dimension(..), contiguous, target, intent(inout) :: b
    type(MPI_Comm), intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_COMPLEX128, c_loc(a), shape(a, int64), gshape, split, comm%MPI_VAL, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_c128

  ! ---- the same with an integer communicator handle (`use mpi`) ----

  subroutine reshape_r32_int(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    real(real32), dimension(..), contiguous, target, intent(in) :: a
    real(real32), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_FLOAT32, c_loc(a), shape(a, int64), gshape, split, comm, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_r32_int

  subroutine reshape_r64_int(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    real(real64), dimension(..), contiguous, target, intent(in) :: a
    real(real64), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_FLOAT64, c_loc(a), shape(a, int64), gshape, split, comm, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_r64_int

  subroutine reshape_i32_int(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    integer(int32), dimension(..), contiguous, target, intent(in) :: a
    integer(int32), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_INT32, c_loc(a), shape(a, int64), gshape, split, comm, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_i32_int

  subroutine reshape_i64_int(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    integer(int64), dimension(..), contiguous, target, intent(in) :: a
    integer(int64), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_INT64, c_loc(a), shape(a, int64), gshape, split, comm, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_i64_int

  subroutine reshape_c64_int(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    complex(real32), dimension(..), contiguous, target, intent(in) :: a
    complex(real32), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_COMPLEX64, c_loc(a), shape(a, int64), gshape, split, comm, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_c64_int

  subroutine reshape_c128_int(a, gshape, split, comm, new_gshape, new_split, b, nout, local_len, stat)
    complex(real64), dimension(..), contiguous, target, intent(in) :: a
    complex(real64), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(in) :: comm
    integer(int64), intent(in) :: gshape(:), new_gshape(:)
    integer, intent(in) :: split, new_split
    integer(int64), intent(out), optional :: nout
    integer(int64), intent(in), optional :: local_len
    integer, intent(out), optional :: stat
    call reshape_core(DR_DTYPE_COMPLEX128, c_loc(a), shape(a, int64), gshape, split, comm, &
                      new_gshape, new_split, c_loc(b), shape(b, int64), nout, local_len, stat)
  end subroutine reshape_c128_int

  ! ======================= plans =======================

  subroutine plan_create_core(dtype, gshape, split, fcomm, local_len, new_gshape, new_split, &
                              plan, new_local_len, stat)
    integer, intent(in) :: dtype, split, new_split, fcomm
    integer(int64), intent(in) :: gshape(:), new_gshape(:), local_len
    type(dr_plan), intent(inout) :: plan
    integer(int64), intent(in), optional :: new_local_len
    integer, intent(out), optional :: stat
    integer(c_int64_t) :: target_len
    type(c_ptr) :: handle
    integer(c_int) :: status
    target_len = -1
    if (present(new_local_len)) target_len = new_local_len
    status = c_plan_create(int(dtype, c_int), size(gshape, kind=c_int32_t), gshape, &
                           int(split, c_int32_t), fcomm, local_len, &
                           size(new_gshape, kind=c_int32_t), new_gshape, &
                           int(new_split, c_int32_t), target_len, handle)
    if (status == DR_SUCCESS) plan = dr_plan(handle, dtype, size(new_gshape))
    call finish(status, stat)
  end subroutine plan_create_core

  subroutine plan_create_f08(dtype, gshape, split, comm, local_len, new_gshape, new_split, &
                             plan, new_local_len, stat)
    integer, intent(in) :: dtype, split, new_split
    integer(int64), intent(in) :: gshape(:), new_gshape(:), local_len
    type(MPI_Comm), intent(in) :: comm
    type(dr_plan), intent(inout) :: plan
    integer(int64), intent(in), optional :: new_local_len
    integer, intent(out), optional :: stat
    call plan_create_core(dtype, gshape, split, comm%MPI_VAL, local_len, new_gshape, new_split, &
                          plan, new_local_len, stat)
  end subroutine plan_create_f08

  subroutine plan_create_int(dtype, gshape, split, comm, local_len, new_gshape, new_split, &
                             plan, new_local_len, stat)
    integer, intent(in) :: dtype, split, new_split
    integer(int64), intent(in) :: gshape(:), new_gshape(:), local_len
    integer, intent(in) :: comm
    type(dr_plan), intent(inout) :: plan
    integer(int64), intent(in), optional :: new_local_len
    integer, intent(out), optional :: stat
    call plan_create_core(dtype, gshape, split, comm, local_len, new_gshape, new_split, &
                          plan, new_local_len, stat)
  end subroutine plan_create_int

  !> Local query of the plan's output: resolved global shape (Fortran order),
  !> this rank's extent along the new split dimension and the global index of
  !> its first element there (`new_offset`, 1-based, so the slab covers
  !> new_offset to new_offset + new_local_len - 1; with explicit target lengths,
  !> 1 + the lower ranks' lengths), both -1 when not split, and its number of
  !> elements (the size `b` needs in dr_plan_execute).
  subroutine dr_plan_output(plan, new_gshape, new_local_len, new_local_elems, new_offset, stat)
    type(dr_plan), intent(in) :: plan
    integer(int64), allocatable, intent(out), optional :: new_gshape(:)
    integer(int64), intent(out), optional :: new_local_len, new_local_elems, new_offset
    integer, intent(out), optional :: stat
    integer(c_int64_t) :: cshape(max(plan%new_ndims, 1)), len, offset, elems
    integer(c_int) :: status
    status = c_plan_output(plan%handle, cshape, len, elems)
    if (status == DR_SUCCESS) status = c_plan_output_slab(plan%handle, len, offset, elems)
    if (status == DR_SUCCESS) then
      if (present(new_gshape)) new_gshape = cshape(plan%new_ndims:1:-1)
      if (present(new_local_len)) new_local_len = len
      if (present(new_local_elems)) new_local_elems = elems
      if (present(new_offset)) new_offset = merge(offset + 1, -1_int64, offset >= 0)
    end if
    call finish(status, stat)
  end subroutine dr_plan_output

  !> Local query of this rank's input slab: its extent along the split
  !> dimension, the global index of its first element there (1-based), both -1
  !> when not split, and its number of elements (the size `a` needs).
  subroutine dr_plan_input(plan, local_len, offset, local_elems, stat)
    type(dr_plan), intent(in) :: plan
    integer(int64), intent(out), optional :: local_len, offset, local_elems
    integer, intent(out), optional :: stat
    integer(c_int64_t) :: len, first, elems
    integer(c_int) :: status
    status = c_plan_input_slab(plan%handle, len, first, elems)
    if (status == DR_SUCCESS) then
      if (present(local_len)) local_len = len
      if (present(offset)) offset = merge(first + 1, -1_int64, first >= 0)
      if (present(local_elems)) local_elems = elems
    end if
    call finish(status, stat)
  end subroutine dr_plan_input

  !> Shared body of the dr_plan_execute specifics. A type mismatch between
  !> the arrays and the plan is a programming error and stops the program; the
  !> library checks the arrays' shapes against the plan.
  subroutine execute_core(plan, dtype, a, ashape, b, bshape, stat)
    type(dr_plan), intent(in) :: plan
    integer, intent(in) :: dtype
    type(c_ptr), intent(in) :: a, b
    integer(int64), intent(in) :: ashape(:), bshape(:)
    integer, intent(out), optional :: stat
    if (c_associated(plan%handle) .and. plan%dtype /= dtype) &
      error stop 'distreshape: dr_plan_execute: array type differs from the plan''s dtype'
    call finish(c_plan_execute(plan%handle, a, size(ashape, kind=c_int32_t), ashape, &
                               b, size(bshape, kind=c_int32_t), bshape), stat)
  end subroutine execute_core

  subroutine execute_r32(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    real(real32), dimension(..), contiguous, target, intent(in) :: a
    real(real32), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call execute_core(plan, DR_DTYPE_FLOAT32, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), &
                      stat)
  end subroutine execute_r32

  subroutine execute_r64(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    real(real64), dimension(..), contiguous, target, intent(in) :: a
    real(real64), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call execute_core(plan, DR_DTYPE_FLOAT64, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), &
                      stat)
  end subroutine execute_r64

  subroutine execute_i32(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    integer(int32), dimension(..), contiguous, target, intent(in) :: a
    integer(int32), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call execute_core(plan, DR_DTYPE_INT32, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), &
                      stat)
  end subroutine execute_i32

  subroutine execute_i64(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    integer(int64), dimension(..), contiguous, target, intent(in) :: a
    integer(int64), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call execute_core(plan, DR_DTYPE_INT64, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), &
                      stat)
  end subroutine execute_i64

  subroutine execute_c64(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    complex(real32), dimension(..), contiguous, target, intent(in) :: a
    complex(real32), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call execute_core(plan, DR_DTYPE_COMPLEX64, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), &
                      stat)
  end subroutine execute_c64

  subroutine execute_c128(plan, a, b, stat)
    type(dr_plan), intent(in) :: plan
    complex(real64), dimension(..), contiguous, target, intent(in) :: a
    complex(real64), dimension(..), contiguous, target, intent(inout) :: b
    integer, intent(out), optional :: stat
    call execute_core(plan, DR_DTYPE_COMPLEX128, c_loc(a), shape(a, int64), c_loc(b), shape(b, int64), &
                      stat)
  end subroutine execute_c128

  !> Local query of the plan's traffic statistics.
  subroutine dr_plan_stats_get(plan, stats, stat)
    type(dr_plan), intent(in) :: plan
    type(dr_plan_stats), intent(out) :: stats
    integer, intent(out), optional :: stat
    call finish(c_plan_stats_get(plan%handle, stats), stat)
  end subroutine dr_plan_stats_get

  !> Human-readable description of the plan (local).
  function dr_plan_describe(plan, stat) result(text)
    type(dr_plan), intent(in) :: plan
    integer, intent(out), optional :: stat
    character(:), allocatable :: text
    character(kind=c_char), allocatable, target :: buf(:)
    integer(c_size_t) :: needed
    integer(c_int) :: status
    status = c_plan_describe(plan%handle, c_null_ptr, 0_c_size_t, needed)
    if (status == DR_SUCCESS) then
      allocate(buf(needed + 1))
      status = c_plan_describe(plan%handle, c_loc(buf), needed + 1, needed)
    end if
    text = ''
    if (status == DR_SUCCESS) text = transfer(buf(1:needed), repeat(' ', int(needed)))
    call finish(status, stat)
  end function dr_plan_describe

  !> Free the plan; destroying a never-created or destroyed plan is a no-op.
  subroutine dr_plan_destroy(plan)
    type(dr_plan), intent(inout) :: plan
    call c_plan_destroy(plan%handle)
    plan = dr_plan()
  end subroutine dr_plan_destroy

  ! ======================= utilities =======================

  !> Balanced slab of `extent` for `rank` of `nranks` (pure, no MPI): its
  !> length and 0-based offset (elements before it along the dimension).
  subroutine dr_balanced_slab(extent, nranks, rank, len, offset, stat)
    integer(int64), intent(in) :: extent
    integer, intent(in) :: nranks, rank
    integer(int64), intent(out) :: len, offset
    integer, intent(out), optional :: stat
    call finish(c_balanced_slab(extent, int(nranks, c_int32_t), int(rank, c_int32_t), len, offset), &
                stat)
  end subroutine dr_balanced_slab

  !> Name of a status code.
  function dr_status_string(status) result(s)
    integer, intent(in) :: status
    character(:), allocatable :: s
    s = f_string(c_status_string(int(status, c_int)))
  end function dr_status_string

  !> This thread's last failure message, naming argument, value and rank.
  function dr_last_error_message() result(s)
    character(:), allocatable :: s
    s = f_string(c_last_error_message())
  end function dr_last_error_message

  !> Library version string.
  function dr_version() result(s)
    character(:), allocatable :: s
    s = f_string(c_version())
  end function dr_version

end module distreshape
