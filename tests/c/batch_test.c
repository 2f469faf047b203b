/* Batches through the C ABI: dr_plan_execute_batch and dr_plan_execute_batch_begin
 * moving 3 fields (field f holding the global indices plus f * FIELD_OFFSET) out
 * of place, non-blocking (the pointer arrays freed right after begin) and in
 * place, every element of every field checked and the inputs checked unchanged;
 * k = 1 as dr_plan_execute; fields stored as an array of structures (interleaved
 * in one buffer); refusals agreed on every rank: a k that differs on
 * rank 0, k = 0, NULL arrays and a short output in one field; 10000 fields,
 * and two of them sharing an output. */
#include "harness.h"

#define ROWS 37
#define COLS 5
#define FIELDS 3
#define FIELD_OFFSET ((int64_t)1 << 40)

static int64_t in_len, in_off, out_len, out_off;

/* The number of wrong elements of field `f`'s (COLS, out_len) output slab. */
static int64_t wrong_field(const int64_t *out, int f)
{
    int64_t wrong = 0;
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t r = 0; r < out_len; r++)
            wrong += out[c * out_len + r] != c * ROWS + out_off + r + f * FIELD_OFFSET;
    return wrong;
}

/* Field `f`'s input: this rank's rows of the (ROWS, COLS) array. */
static void fill_field(int64_t *in, int f)
{
    test_fill_i64(in, in_len * COLS, in_off * COLS + f * FIELD_OFFSET);
}

/* The fields stored as an array of structures: element (r, c) of every field
 * together, field f at position f of each. Rows to columns of the (ROWS, COLS)
 * array on a strided plan, the FIELDS fields' boxes interleaving in one input
 * and one output buffer (sharing no element, so not refused), every element
 * checked, the input unchanged and the slack after the output untouched; an
 * output field moved onto the next structure's is refused on every rank. */
static void array_of_structures(void)
{
    const int64_t shape[2] = {ROWS, COLS};
    const int32_t grid[1] = {test_nranks}, rows_axes[2] = {0, DR_SPLIT_NONE};
    const int32_t cols_axes[2] = {DR_SPLIT_NONE, 0};
    dr_layout *rows = NULL, *cols = NULL;
    CHECK_STATUS(dr_layout_create(2, shape, 1, grid, rows_axes, &rows), DR_SUCCESS);
    CHECK_STATUS(dr_layout_create(2, shape, 1, grid, cols_axes, &cols), DR_SUCCESS);
    int64_t in_at[2], in_ext[2], out_at[2], out_ext[2];
    CHECK_STATUS(dr_layout_rank_box(rows, test_nranks, test_rank, in_at, in_ext), DR_SUCCESS);
    CHECK_STATUS(dr_layout_rank_box(cols, test_nranks, test_rank, out_at, out_ext), DR_SUCCESS);
    int64_t in_strides[2] = {COLS * FIELDS, FIELDS}, out_strides[2] = {out_ext[1] * FIELDS, FIELDS};
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create_strided(DR_DTYPE_INT64, rows, in_strides, cols, out_strides,
                                        MPI_COMM_WORLD, NULL, &plan),
                 DR_SUCCESS);
    int64_t in_n = in_ext[0] * COLS * FIELDS, out_n = ROWS * out_ext[1] * FIELDS, slack = 8;
    int64_t *in = malloc((size_t)(in_n + 1) * sizeof *in);
    int64_t *out = malloc((size_t)(out_n + slack) * sizeof *out);
    for (int64_t i = 0; i < in_n; i++)
        in[i] = (in_at[0] * COLS + i / FIELDS) + (i % FIELDS) * FIELD_OFFSET;
    for (int64_t i = 0; i < out_n + slack; i++) out[i] = -1;
    const void *ins[FIELDS];
    void *outs[FIELDS];
    for (int f = 0; f < FIELDS; f++) {
        ins[f] = in + f;
        outs[f] = out + f;
    }
    CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, ins, outs, out_n + slack - FIELDS), DR_SUCCESS);
    int64_t wrong = 0, changed = 0, written = 0;
    for (int64_t i = 0; i < out_n; i++) {
        int64_t r = i / FIELDS / out_ext[1], c = out_at[1] + i / FIELDS % out_ext[1];
        wrong += out[i] != r * COLS + c + (i % FIELDS) * FIELD_OFFSET;
    }
    for (int64_t i = 0; i < in_n; i++)
        changed += in[i] != (in_at[0] * COLS + i / FIELDS) + (i % FIELDS) * FIELD_OFFSET;
    for (int64_t i = out_n; i < out_n + slack; i++) written += out[i] != -1;
    CHECK_EQ(wrong, 0, "wrong elements (array of structures)");
    CHECK_EQ(changed, 0, "changed input elements (array of structures)");
    CHECK_EQ(written, 0, "slack written (array of structures)");
    /* Field 1's output on field 0's next structure: refused wherever outputs are held. */
    int collective = test_plan_is_collective(plan), holds = out_n > FIELDS;
    outs[1] = out + FIELDS;
    dr_status want = (collective ? test_any(holds) : holds) ? DR_ERROR_ALIASING : DR_SUCCESS;
    CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, ins, outs, out_n + slack - 2 * FIELDS), want);
    free(in);
    free(out);
    dr_plan_destroy(plan);
    dr_layout_destroy(rows);
    dr_layout_destroy(cols);
}

/* A batch of MANY_FIELDS fields, back to back in one input and one output
 * buffer, every element checked; then the last field's output also field 3's:
 * refused on every rank, naming those two fields (the check sorts the fields'
 * byte ranges, so that many fields apart are told apart quickly). */
#define MANY_FIELDS 10000
static void many_fields(dr_plan *plan)
{
    int64_t in_elems = in_len * COLS, out_elems = out_len * COLS;
    int64_t *in = malloc((size_t)(MANY_FIELDS * in_elems + 1) * sizeof *in);
    int64_t *out = malloc((size_t)(MANY_FIELDS * out_elems + 1) * sizeof *out);
    const void **ins = malloc(MANY_FIELDS * sizeof *ins);
    void **outs = malloc(MANY_FIELDS * sizeof *outs);
    for (int f = 0; f < MANY_FIELDS; f++) {
        fill_field(in + f * in_elems, f);
        ins[f] = in + f * in_elems;
        outs[f] = out + f * out_elems;
    }
    memset(out, 0xEE, (size_t)(MANY_FIELDS * out_elems + 1) * sizeof *out);
    CHECK_STATUS(dr_plan_execute_batch(plan, MANY_FIELDS, ins, (void *const *)outs, out_elems),
                 DR_SUCCESS);
    int64_t wrong = 0;
    for (int f = 0; f < MANY_FIELDS; f++) wrong += wrong_field(out + f * out_elems, f);
    CHECK_EQ(wrong, 0, "wrong elements of many fields");
    int64_t changed = 0;
    for (int f = 0; f < MANY_FIELDS; f++)
        changed += test_wrong_i64(in + f * in_elems, in_elems, in_off * COLS + f * FIELD_OFFSET);
    CHECK_EQ(changed, 0, "changed input elements of many fields");
    CHECK(out[MANY_FIELDS * out_elems] == (int64_t)0xEEEEEEEEEEEEEEEE);
    int holds = out_elems > 0;
    outs[MANY_FIELDS - 1] = outs[3];
    dr_status want = test_any(holds) ? DR_ERROR_ALIASING : DR_SUCCESS;
    CHECK_STATUS(dr_plan_execute_batch(plan, MANY_FIELDS, ins, (void *const *)outs, out_elems),
                 want);
    if (want == DR_ERROR_ALIASING)
        CHECK(strstr(dr_last_error_message(), "fields 3 and 9999") != NULL);
    free(in);
    free(out);
    free(ins);
    free(outs);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    dr_balanced_slab(ROWS, test_nranks, test_rank, &in_len, &in_off);
    dr_balanced_slab(ROWS, test_nranks, test_rank, &out_len, &out_off);
    int64_t gshape[2] = {ROWS, COLS}, new_shape[2] = {COLS, ROWS};
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, in_len, 2, new_shape,
                                1, -1, &plan),
                 DR_SUCCESS);
    int64_t in_elems = in_len * COLS, out_elems = out_len * COLS;
    int64_t room = (in_elems > out_elems ? in_elems : out_elems) + 1;
    int64_t *in[FIELDS], *out[FIELDS];
    for (int f = 0; f < FIELDS; f++) {
        in[f] = malloc((size_t)room * sizeof(int64_t));
        out[f] = malloc((size_t)room * sizeof(int64_t));
        fill_field(in[f], f);
    }

    /* Out of place, twice. */
    for (int pass = 0; pass < 2; pass++) {
        for (int f = 0; f < FIELDS; f++) memset(out[f], 0xEE, (size_t)room * sizeof(int64_t));
        CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, (const void *const *)in,
                                           (void *const *)out, out_elems),
                     DR_SUCCESS);
        for (int f = 0; f < FIELDS; f++) {
            CHECK_EQ(wrong_field(out[f], f), 0, "wrong elements of a field (batch)");
            int64_t changed = test_wrong_i64(in[f], in_elems, in_off * COLS + f * FIELD_OFFSET);
            CHECK_EQ(changed, 0, "changed input elements (batch)");
        }
    }

    /* k = 1 as dr_plan_execute. */
    memset(out[0], 0xEE, (size_t)room * sizeof(int64_t));
    CHECK_STATUS(dr_plan_execute_batch(plan, 1, (const void *const *)in, (void *const *)out,
                                       out_elems),
                 DR_SUCCESS);
    CHECK_EQ(wrong_field(out[0], 0), 0, "wrong elements (batch of one)");

    /* Non-blocking, the pointer arrays freed once begin returns. */
    const void **ins = malloc(FIELDS * sizeof *ins);
    void **outs = malloc(FIELDS * sizeof *outs);
    for (int f = 0; f < FIELDS; f++) {
        ins[f] = in[f];
        outs[f] = out[f];
        memset(out[f], 0xEE, (size_t)room * sizeof(int64_t));
    }
    dr_request *request = NULL;
    CHECK_STATUS(dr_plan_execute_batch_begin(plan, FIELDS, ins, outs, out_elems, &request),
                 DR_SUCCESS);
    free(ins);
    free(outs);
    int done = 0;
    while (!done) CHECK_STATUS(dr_request_test(&request, &done), DR_SUCCESS);
    CHECK(request == NULL);
    for (int f = 0; f < FIELDS; f++)
        CHECK_EQ(wrong_field(out[f], f), 0, "wrong elements of a field (batch begin)");

    /* In place: in[f] == out[f] for every field. */
    for (int f = 0; f < FIELDS; f++) fill_field(out[f], f);
    CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, (const void *const *)out, (void *const *)out,
                                       room),
                 DR_SUCCESS);
    for (int f = 0; f < FIELDS; f++)
        CHECK_EQ(wrong_field(out[f], f), 0, "wrong elements of a field (batch in place)");
    for (int f = 0; f < FIELDS; f++) fill_field(out[f], f);
    CHECK_STATUS(dr_plan_execute_batch_begin(plan, FIELDS, (const void *const *)out,
                                             (void *const *)out, room, &request),
                 DR_SUCCESS);
    CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
    for (int f = 0; f < FIELDS; f++)
        CHECK_EQ(wrong_field(out[f], f), 0, "wrong elements of a field (batch begin in place)");

    /* Refusals, the same status on every rank. */
    const void *const *cin = (const void *const *)in;
    void *const *cout = (void *const *)out;
    if (test_nranks > 1) {
        int64_t k = test_rank == 0 ? 2 : 3;
        CHECK_STATUS(dr_plan_execute_batch(plan, k, cin, cout, out_elems),
                     DR_ERROR_INCONSISTENT_ARGUMENTS);
        CHECK_NAMES_RANK(0);
        CHECK(strstr(dr_last_error_message(), "k = 2") != NULL);
        CHECK_STATUS(dr_plan_execute_batch_begin(plan, k, cin, cout, out_elems, &request),
                     DR_ERROR_INCONSISTENT_ARGUMENTS);
    }
    CHECK_STATUS(dr_plan_execute_batch(plan, 0, cin, cout, out_elems), DR_ERROR_INVALID_SHAPE);
    CHECK(strstr(dr_last_error_message(), "k = 0") != NULL);
    const void *const *maybe_null = test_rank == test_nranks - 1 ? NULL : cin;
    CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, maybe_null, cout, out_elems),
                 DR_ERROR_NULL_POINTER);
    CHECK_NAMES_RANK(test_nranks - 1);
    CHECK_STATUS(dr_plan_execute_batch_begin(plan, FIELDS, cin, cout, out_elems, NULL),
                 DR_ERROR_NULL_POINTER);
    int short_here = test_rank == test_nranks - 1 && out_elems > 0;
    if (test_any(short_here)) {
        CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, cin, cout, out_elems - short_here),
                     DR_ERROR_BUFFER_TOO_SMALL);
        CHECK(strstr(dr_last_error_message(), "field 0") != NULL);
    }
    void *shared[FIELDS] = {out[0], out[0], out[2]};
    CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, cin, (void *const *)shared, out_elems),
                 DR_ERROR_ALIASING);
    CHECK_STATUS(dr_plan_execute_batch(NULL, FIELDS, cin, cout, out_elems), DR_ERROR_NULL_POINTER);

    many_fields(plan);

    /* A batch after the refusals works. */
    for (int f = 0; f < FIELDS; f++) fill_field(in[f], f);
    CHECK_STATUS(dr_plan_execute_batch(plan, FIELDS, cin, cout, out_elems), DR_SUCCESS);
    for (int f = 0; f < FIELDS; f++)
        CHECK_EQ(wrong_field(out[f], f), 0, "wrong elements of a field (after refusals)");

    for (int f = 0; f < FIELDS; f++) {
        free(in[f]);
        free(out[f]);
    }
    dr_plan_destroy(plan);
    array_of_structures();
    return test_finish("batch_test");
}
