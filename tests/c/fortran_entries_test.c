/* The Fortran module's entry points in the shared library (not in the header),
 * called as the module's static library calls them: those of the first 0.3
 * modules, kept so that such a module runs against this library, and the
 * typed ones that replaced them, which also check the arrays' element type.
 * Each runs the transpose of a (ROWS, COLS) int64 array split along axis 0
 * into (COLS, ROWS) split along axis 1, the arrays described in Fortran order
 * as the module describes them; every element is checked, and the input
 * unchanged. The typed entry points given DR_DTYPE_FLOAT64 on the last rank
 * refuse with DR_ERROR_INVALID_DTYPE on every rank, nothing written; so does
 * the one in place given a buffer of no elements on the last rank, with
 * DR_ERROR_BUFFER_TOO_SMALL. */
#include "harness.h"

#define ROWS 37
#define COLS 5
#define FIELDS 2
#define SENTINEL (-7)

/* An array as the module's C shim describes it for the library (struct
 * dr_fortran_array of fortran/distreshape_fshim.c). */
struct dr_fortran_array {
    void *base;
    int32_t rank;
    int64_t extents[15];
    int64_t strides[15];
};

dr_status dr_fortran_plan_execute(const dr_plan *plan, const void *a, int32_t a_ndims,
                                  const int64_t *a_shape, void *b, int32_t b_ndims,
                                  const int64_t *b_shape);
dr_status dr_fortran_plan_execute_begin(const dr_plan *plan, const void *a, int32_t a_ndims,
                                        const int64_t *a_shape, void *b, int32_t b_ndims,
                                        const int64_t *b_shape, dr_request **request);
dr_status dr_fortran_plan_execute_strided(const dr_plan *plan, const struct dr_fortran_array *a,
                                          const struct dr_fortran_array *b);
dr_status dr_fortran_plan_execute_strided_begin(const dr_plan *plan,
                                                const struct dr_fortran_array *a,
                                                const struct dr_fortran_array *b,
                                                dr_request **request);
dr_status dr_fortran_plan_execute_batch(const dr_plan *plan, const struct dr_fortran_array *a,
                                        const struct dr_fortran_array *b);
dr_status dr_fortran_plan_execute_batch_begin(const dr_plan *plan,
                                              const struct dr_fortran_array *a,
                                              const struct dr_fortran_array *b,
                                              dr_request **request);
dr_status dr_fortran_plan_execute_typed(const dr_plan *plan, dr_dtype dtype, const void *a,
                                        int32_t a_ndims, const int64_t *a_shape, void *b,
                                        int32_t b_ndims, const int64_t *b_shape);
dr_status dr_fortran_plan_execute_begin_typed(const dr_plan *plan, dr_dtype dtype, const void *a,
                                              int32_t a_ndims, const int64_t *a_shape, void *b,
                                              int32_t b_ndims, const int64_t *b_shape,
                                              dr_request **request);
dr_status dr_fortran_plan_execute_in_place(const dr_plan *plan, dr_dtype dtype, void *buf,
                                           int64_t elems);
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

static int64_t in_len, in_off, out_len, out_off;
static int64_t in_elems, out_elems;

/* A contiguous Fortran array of `rank` axes (Fortran order), int64. */
static struct dr_fortran_array array(void *base, int32_t rank, const int64_t *extents)
{
    struct dr_fortran_array a = {base, rank, {0}, {0}};
    int64_t stride = (int64_t)sizeof(int64_t);
    for (int k = 0; k < rank; k++) {
        a.extents[k] = extents[k];
        a.strides[k] = stride;
        stride *= extents[k];
    }
    return a;
}

/* Field `f` of the input: this rank's rows, global indices plus f * ROWS * COLS. */
static void fill(int64_t *in, int f)
{
    test_fill_i64(in, in_elems, in_off * COLS + (int64_t)f * ROWS * COLS);
}

/* The wrong elements of field `f` of the output (COLS, out_len) C order. */
static int64_t wrong(const int64_t *out, int f)
{
    int64_t count = 0;
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t r = 0; r < out_len; r++)
            count += out[c * out_len + r] != c * ROWS + out_off + r + (int64_t)f * ROWS * COLS;
    return count;
}

/* The elements of out[0..n) that are not the sentinel. */
static int64_t written(const int64_t *out, int64_t n)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += out[i] != SENTINEL;
    return count;
}


/* Runs entry `which` with `dtype` on FIELDS fields (only the batches use
 * more than the first) and returns its status. */
static dr_status run(const dr_plan *plan, int which, dr_dtype dtype, int64_t *in, int64_t *out)
{
    int64_t a_shape[2] = {COLS, in_len}, b_shape[2] = {out_len, COLS};
    int64_t a_fields[3] = {COLS, in_len, FIELDS}, b_fields[3] = {out_len, COLS, FIELDS};
    struct dr_fortran_array a = array(in, 2, a_shape), b = array(out, 2, b_shape);
    struct dr_fortran_array fa = array(in, 3, a_fields), fb = array(out, 3, b_fields);
    dr_request *request = NULL;
    dr_status status = DR_ERROR_INTERNAL;
    switch (which) {
    case 0: return dr_fortran_plan_execute(plan, in, 2, a_shape, out, 2, b_shape);
    case 1:
        status = dr_fortran_plan_execute_begin(plan, in, 2, a_shape, out, 2, b_shape, &request);
        break;
    case 2: return dr_fortran_plan_execute_strided(plan, &a, &b);
    case 3: status = dr_fortran_plan_execute_strided_begin(plan, &a, &b, &request); break;
    case 4: return dr_fortran_plan_execute_batch(plan, &fa, &fb);
    case 5: status = dr_fortran_plan_execute_batch_begin(plan, &fa, &fb, &request); break;
    case 6: return dr_fortran_plan_execute_typed(plan, dtype, in, 2, a_shape, out, 2, b_shape);
    case 7:
        status = dr_fortran_plan_execute_begin_typed(plan, dtype, in, 2, a_shape, out, 2, b_shape,
                                                     &request);
        break;
    case 8: return dr_fortran_plan_execute_strided_typed(plan, dtype, &a, &b);
    case 9:
        status = dr_fortran_plan_execute_strided_begin_typed(plan, dtype, &a, &b, &request);
        break;
    case 10: return dr_fortran_plan_execute_batch_typed(plan, dtype, &fa, &fb);
    case 11:
        status = dr_fortran_plan_execute_batch_begin_typed(plan, dtype, &fa, &fb, &request);
        break;
    }
    if (status == DR_SUCCESS) CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
    return status;
}

static const char *const names[12] = {
    "execute", "execute_begin", "execute_strided", "execute_strided_begin", "execute_batch",
    "execute_batch_begin", "execute_typed", "execute_begin_typed", "execute_strided_typed",
    "execute_strided_begin_typed", "execute_batch_typed", "execute_batch_begin_typed"};

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    dr_balanced_slab(ROWS, test_nranks, test_rank, &in_len, &in_off);
    dr_balanced_slab(ROWS, test_nranks, test_rank, &out_len, &out_off);
    in_elems = in_len * COLS;
    out_elems = out_len * COLS;
    int64_t gshape[2] = {ROWS, COLS}, new_shape[2] = {COLS, ROWS};
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, in_len, 2, new_shape,
                                1, -1, &plan),
                 DR_SUCCESS);
    int collective = test_plan_is_collective(plan);
    int64_t room = (in_elems > out_elems ? in_elems : out_elems) * FIELDS + 1;
    int64_t *in = malloc((size_t)room * sizeof(int64_t));
    int64_t *out = malloc((size_t)room * sizeof(int64_t));
    for (int which = 0; which < 12; which++) {
        int fields = (which % 6) >= 4 ? FIELDS : 1;
        for (int f = 0; f < fields; f++) fill(in + f * in_elems, f);
        for (int64_t i = 0; i < room; i++) out[i] = SENTINEL;
        CHECK_WHAT(run(plan, which, DR_DTYPE_INT64, in, out) == DR_SUCCESS, names[which]);
        for (int f = 0; f < fields; f++) {
            CHECK_WHAT(wrong(out + f * out_elems, f) == 0, names[which]);
            CHECK_WHAT(test_wrong_i64(in + f * in_elems, in_elems,
                                      in_off * COLS + (int64_t)f * ROWS * COLS) == 0,
                       names[which]);
        }
        CHECK_WHAT(written(out + fields * out_elems, room - fields * out_elems) == 0, names[which]);
        if (which < 6) continue;
        /* Another element type on the last rank. */
        for (int64_t i = 0; i < room; i++) out[i] = SENTINEL;
        dr_dtype dtype = test_rank == test_nranks - 1 ? DR_DTYPE_FLOAT64 : DR_DTYPE_INT64;
        int refused = collective || test_rank == test_nranks - 1;
        dr_status got = run(plan, which, dtype, in, out);
        CHECK_WHAT(got == (refused ? DR_ERROR_INVALID_DTYPE : DR_SUCCESS), names[which]);
        if (refused) {
            CHECK_NAMES_RANK(test_nranks - 1);
            CHECK_WHAT(strstr(dr_last_error_message(),
                              "are DR_DTYPE_FLOAT64 but the plan was made for DR_DTYPE_INT64 (8 bytes)") != NULL,
                       "the message names both dtypes");
            CHECK_WHAT(written(out, room) == 0, names[which]);
        }
    }
    /* In place, then another element type on the last rank. */
    int64_t elems = in_elems > out_elems ? in_elems : out_elems;
    fill(in, 0);
    CHECK_STATUS(dr_fortran_plan_execute_in_place(plan, DR_DTYPE_INT64, in, elems), DR_SUCCESS);
    CHECK_EQ(wrong(in, 0), 0, "in place");
    dr_dtype dtype = test_rank == test_nranks - 1 ? DR_DTYPE_FLOAT64 : DR_DTYPE_INT64;
    for (int64_t i = 0; i < elems; i++) in[i] = SENTINEL;
    dr_status got = dr_fortran_plan_execute_in_place(plan, dtype, in, elems);
    if (collective || test_rank == test_nranks - 1) {
        CHECK_STATUS(got, DR_ERROR_INVALID_DTYPE);
        CHECK_NAMES_RANK(test_nranks - 1);
        CHECK_EQ(written(in, elems), 0, "in place, refused");
    }
    /* A buffer of no elements on the last rank, which holds input rows: too
     * small in place, wherever the plan agrees, and nothing read or written. */
    for (int64_t i = 0; i < elems; i++) in[i] = SENTINEL;
    int64_t size = test_rank == test_nranks - 1 ? 0 : elems;
    got = dr_fortran_plan_execute_in_place(plan, DR_DTYPE_INT64, in, size);
    if (collective || test_rank == test_nranks - 1) {
        CHECK_STATUS(got, DR_ERROR_BUFFER_TOO_SMALL);
        CHECK_EQ(written(in, elems), 0, "in place in no elements, refused");
    }
    free(in);
    free(out);
    dr_plan_destroy(plan);
    return test_finish("fortran_entries_test");
}
