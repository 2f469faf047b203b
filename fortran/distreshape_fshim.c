/* C shim behind the Fortran module `distreshape`.
 *
 * Fortran passes MPI communicators as integer handles (MPI_Fint: the MPI_VAL
 * component of mpi_f08's type(MPI_Comm), or an old-style `integer` handle from
 * `use mpi`). These wrappers convert the handle with MPI_Comm_f2c (a macro in
 * some MPIs, so it cannot be called from Rust) and forward everything else to
 * the library's Fortran entry points (src/fortran/mod.rs), which take shapes and
 * dimensions as the Fortran caller wrote them.
 *
 * The strided plans' procedures take assumed-rank arrays, which Fortran passes
 * as C descriptors (ISO_Fortran_binding.h): these wrappers read each into a
 * struct dr_fortran_array for the library (src/fortran/strided.rs), so that
 * array sections and halo interiors reach it as they are, never copied; so do
 * the batches' arrays, whose last dimension indexes the fields, and the fused
 * executions' fields. */
#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include "distreshape.h"

/* A Fortran array as the library reads it (ArrayDescriptor in
 * src/fortran/strided.rs, which must match): the address of its first element,
 * its rank, and each axis's extent and byte stride, Fortran order. */
struct dr_fortran_array {
    void *base;
    int32_t rank;
    int64_t extents[CFI_MAX_RANK];
    int64_t strides[CFI_MAX_RANK];
};

/* The module's type(fortran_array) mirrors this struct with 15 axes. */
_Static_assert(CFI_MAX_RANK == 15, "fortran/distreshape.f90's fortran_array has 15 axes");

/* The library's Fortran entry points (src/fortran/mod.rs and strided.rs), not in
 * distreshape.h: they take the caller's Fortran notation and arrays. */
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
dr_status dr_fortran_plan_create_strided(dr_dtype dtype, const dr_layout *in_layout,
                                         const struct dr_fortran_array *in_mold,
                                         const dr_layout *out_layout,
                                         const struct dr_fortran_array *out_mold, MPI_Comm comm,
                                         const dr_options *options, dr_plan **plan);
dr_status dr_fortran_plan_execute_strided_typed(const dr_plan *plan, dr_dtype dtype,
                                                const struct dr_fortran_array *a,
                                                const struct dr_fortran_array *b);
dr_status dr_fortran_plan_execute_strided_begin_typed(const dr_plan *plan, dr_dtype dtype,
                                                      const struct dr_fortran_array *a,
                                                      const struct dr_fortran_array *b,
                                                      dr_request **request);
dr_status dr_fortran_plan_execute_batch_typed(const dr_plan *plan, dr_dtype dtype,
                                              const struct dr_fortran_array *a,
                                              const struct dr_fortran_array *b);
dr_status dr_fortran_plan_execute_batch_begin_typed(const dr_plan *plan, dr_dtype dtype,
                                                    const struct dr_fortran_array *a,
                                                    const struct dr_fortran_array *b,
                                                    dr_request **request);

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

/* dr_reshape for the module: everything as the Fortran caller wrote it, the
 * communicator an integer handle. */
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

/* dr_plan_create_configured for the module, in Fortran notation. */
dr_status dr_plan_create_f(dr_dtype dtype, int32_t ndims, const int64_t *gshape, int32_t split,
                           MPI_Fint comm, int64_t local_len, int32_t new_ndims,
                           const int64_t *new_gshape, int32_t new_split, int64_t new_local_len,
                           const dr_options *options, dr_plan **plan)
{
    return dr_fortran_plan_create(dtype, ndims, gshape, split, comm_from_fortran(comm), local_len,
                                  new_ndims, new_gshape, new_split, new_local_len, options, plan);
}

/* dr_plan_create_layouts_configured for the module. */
dr_status dr_plan_create_layouts_f(dr_dtype dtype, const dr_layout *in_layout,
                                   const dr_layout *out_layout, MPI_Fint comm,
                                   const dr_options *options, dr_plan **plan)
{
    return dr_plan_create_layouts_configured(dtype, in_layout, out_layout,
                                             comm_from_fortran(comm), options, plan);
}

/* The array `desc` describes: its first element's address, its rank, and per
 * axis (Fortran order) its extent and its byte stride (the descriptor's sm). */
static struct dr_fortran_array array_of(const CFI_cdesc_t *desc)
{
    struct dr_fortran_array array = {desc->base_addr, desc->rank, {0}, {0}};
    for (int k = 0; k < desc->rank; k++) {
        array.extents[k] = desc->dim[k].extent;
        array.strides[k] = desc->dim[k].sm;
    }
    return array;
}

/* dr_plan_create_strided for the module: each side's strides are its mold's
 * (any array of that side's box shape laid out as the data will be). */
dr_status dr_plan_create_strided_f(dr_dtype dtype, const dr_layout *in_layout,
                                   const CFI_cdesc_t *in_mold, const dr_layout *out_layout,
                                   const CFI_cdesc_t *out_mold, MPI_Fint comm,
                                   const dr_options *options, dr_plan **plan)
{
    struct dr_fortran_array in = array_of(in_mold), out = array_of(out_mold);
    return dr_fortran_plan_create_strided(dtype, in_layout, &in, out_layout, &out,
                                          comm_from_fortran(comm), options, plan);
}

/* dr_plan_execute for the module on a strided plan: the arrays as they are,
 * checked against the plan's element type, boxes and strides by the library. */
dr_status dr_plan_execute_strided_f(const dr_plan *plan, dr_dtype dtype, const CFI_cdesc_t *a,
                                    CFI_cdesc_t *b)
{
    struct dr_fortran_array in = array_of(a), out = array_of(b);
    return dr_fortran_plan_execute_strided_typed(plan, dtype, &in, &out);
}

/* dr_plan_execute_begin for the module on a strided plan, as
 * dr_plan_execute_strided_f. */
dr_status dr_plan_execute_strided_begin_f(const dr_plan *plan, dr_dtype dtype,
                                          const CFI_cdesc_t *a, CFI_cdesc_t *b,
                                          dr_request **request)
{
    struct dr_fortran_array in = array_of(a), out = array_of(b);
    return dr_fortran_plan_execute_strided_begin_typed(plan, dtype, &in, &out, request);
}

/* dr_plan_execute_batch for the module: the arrays as they are, the fields
 * along their last dimension, checked against the plan's element type, boxes
 * and strides by the library. */
dr_status dr_plan_execute_batch_f(const dr_plan *plan, dr_dtype dtype, const CFI_cdesc_t *a,
                                  CFI_cdesc_t *b)
{
    struct dr_fortran_array in = array_of(a), out = array_of(b);
    return dr_fortran_plan_execute_batch_typed(plan, dtype, &in, &out);
}

/* dr_plan_execute_batch_begin for the module, as dr_plan_execute_batch_f. */
dr_status dr_plan_execute_batch_begin_f(const dr_plan *plan, dr_dtype dtype,
                                        const CFI_cdesc_t *a, CFI_cdesc_t *b,
                                        dr_request **request)
{
    struct dr_fortran_array in = array_of(a), out = array_of(b);
    return dr_fortran_plan_execute_batch_begin_typed(plan, dtype, &in, &out, request);
}

/* dr_fused_field for the module: the descriptors of a fused field's arrays,
 * read as they are (never copied) for dr_fortran_fused_execute, which checks
 * them against the field's plan. */
void dr_fused_field_f(const CFI_cdesc_t *a, const CFI_cdesc_t *b, struct dr_fortran_array *fa,
                      struct dr_fortran_array *fb)
{
    *fa = array_of(a);
    *fb = array_of(b);
}
