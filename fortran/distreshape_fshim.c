/* C shim behind the Fortran module `distreshape`.
 *
 * Fortran passes MPI communicators as integer handles (MPI_Fint: the MPI_VAL
 * component of mpi_f08's type(MPI_Comm), or an old-style `integer` handle from
 * `use mpi`). These wrappers convert the handle with MPI_Comm_f2c (a macro in
 * some MPIs, so it cannot be called from Rust) and forward everything else to
 * the library's Fortran entry points (src/fortran/mod.rs), which take shapes and
 * dimensions as the Fortran caller wrote them. */
#include <mpi.h>
#include "distreshape.h"

dr_status dr_fortran_reshape(const void *a, int32_t a_ndims, const int64_t *a_shape,
                             dr_dtype dtype, int32_t ndims, const int64_t *gshape, int32_t split,
                             MPI_Comm comm, int64_t local_len, int32_t new_ndims,
                             const int64_t *new_gshape, int32_t new_split, int64_t new_local_len,
                             void *b, int32_t b_ndims, const int64_t *b_shape,
                             int64_t *new_local_elems);
dr_status dr_fortran_plan_create(dr_dtype dtype, int32_t ndims, const int64_t *gshape,
                                 int32_t split, MPI_Comm comm, int64_t local_len,
                                 int32_t new_ndims, const int64_t *new_gshape, int32_t new_split,
                                 int64_t new_local_len, const dr_options *options,
                                 dr_plan **plan);

/* MPI_Comm_f2c is only meaningful while MPI is initialized (Open MPI looks
 * the handle up in a table). Otherwise pass MPI_COMM_NULL; the library then
 * reports DR_ERROR_MPI_NOT_INITIALIZED because that check comes first. */
static MPI_Comm comm_from_fortran(MPI_Fint fcomm)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return (initialized && !finalized) ? MPI_Comm_f2c(fcomm) : MPI_COMM_NULL;
}

dr_status dr_reshape_f(const void *a, int32_t a_ndims, const int64_t *a_shape, dr_dtype dtype,
                       int32_t ndims, const int64_t *gshape, int32_t split, MPI_Fint comm,
                       int64_t local_len, int32_t new_ndims, const int64_t *new_gshape,
                       int32_t new_split, int64_t new_local_len, void *b, int32_t b_ndims,
                       const int64_t *b_shape, int64_t *new_local_elems)
{
    return dr_fortran_reshape(a, a_ndims, a_shape, dtype, ndims, gshape, split,
                              comm_from_fortran(comm), local_len, new_ndims, new_gshape,
                              new_split, new_local_len, b, b_ndims, b_shape, new_local_elems);
}

dr_status dr_plan_create_f(dr_dtype dtype, int32_t ndims, const int64_t *gshape, int32_t split,
                           MPI_Fint comm, int64_t local_len, int32_t new_ndims,
                           const int64_t *new_gshape, int32_t new_split, int64_t new_local_len,
                           const dr_options *options, dr_plan **plan)
{
    return dr_fortran_plan_create(dtype, ndims, gshape, split, comm_from_fortran(comm), local_len,
                                  new_ndims, new_gshape, new_split, new_local_len, options, plan);
}

dr_status dr_plan_create_layouts_f(dr_dtype dtype, const dr_layout *in_layout,
                                   const dr_layout *out_layout, MPI_Fint comm,
                                   const dr_options *options, dr_plan **plan)
{
    return dr_plan_create_layouts_configured(dtype, in_layout, out_layout,
                                             comm_from_fortran(comm), options, plan);
}
