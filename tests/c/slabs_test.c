/* dr_plan_input_slab / dr_plan_output_slab: every rank's length and offset along
 * the split axes, for unbalanced input lengths and explicit output lengths (where
 * the offset is a prefix sum no local formula gives), balanced output, and not
 * split; then the output, filled by executing the plan, is checked element by
 * element at the reported offset. */
#include "harness.h"

#define ROWS 23
#define COLS 3

static int rank, nranks;

/* This rank's rows under lengths len(r) = (r * 7 + 3) % 5 rescaled to sum to
 * `extent`: the last rank takes the remainder, so lengths are uneven and some 0. */
static int64_t uneven_len(int r, int64_t extent) {
    int64_t sum = 0, mine = 0;
    for (int q = 0; q < nranks; q++) {
        int64_t len = q == nranks - 1 ? extent - sum : ((q * 7 + 3) % 5) * extent / (5 * nranks);
        if (q == r) mine = len;
        sum += len;
    }
    return mine;
}

static int64_t prefix(int r, int64_t extent) {
    int64_t sum = 0;
    for (int q = 0; q < r; q++) sum += uneven_len(q, extent);
    return sum;
}

/* (ROWS, COLS) split 0 with uneven input -> (COLS, ROWS) split 1 with `target`
 * output lengths (-1: balanced). */
static void check_split_change(int explicit_target) {
    int64_t gshape[2] = {ROWS, COLS}, new_shape[2] = {COLS, ROWS};
    int64_t in_len = uneven_len(rank, ROWS), in_off = prefix(rank, ROWS);
    int64_t want_len, want_off, target = -1;
    dr_balanced_slab(ROWS, nranks, rank, &want_len, &want_off);
    if (explicit_target) {
        target = uneven_len(nranks - 1 - rank, ROWS);
        want_len = target;
        want_off = 0;
        for (int q = 0; q < rank; q++) want_off += uneven_len(nranks - 1 - q, ROWS);
    }
    dr_plan *plan = NULL;
    if (!CHECK_STATUS(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, in_len, 2,
                                     new_shape, 1, target, &plan),
                      DR_SUCCESS))
        return;
    int64_t len, off, elems;
    CHECK(dr_plan_input_slab(plan, &len, &off, &elems) == DR_SUCCESS);
    CHECK_EQ(len, in_len, "input len");
    CHECK_EQ(off, in_off, "input offset");
    CHECK_EQ(elems, in_len * COLS, "input elems");
    CHECK(dr_plan_output_slab(plan, &len, &off, &elems) == DR_SUCCESS);
    CHECK_EQ(len, want_len, "output len");
    CHECK_EQ(off, want_off, "output offset");
    CHECK_EQ(elems, want_len * COLS, "output elems");
    int64_t *in = malloc(sizeof *in * (size_t)(in_len * COLS + 1));
    int64_t *out = malloc(sizeof *out * (size_t)(elems + 1));
    test_fill_i64(in, in_len * COLS, in_off * COLS);
    CHECK_STATUS(dr_plan_execute(plan, in, out, elems), DR_SUCCESS);
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t r = 0; r < len; r++)
            CHECK_EQ(out[c * len + r], c * ROWS + off + r, "element at the reported offset");
    free(in);
    free(out);
    dr_plan_destroy(plan);
}

/* Not split on either side: -1 for length and offset, every element. */
static void check_not_split(void) {
    int64_t gshape[2] = {ROWS, COLS}, new_shape[1] = {ROWS * COLS}, len, off, elems;
    dr_plan *plan = NULL;
    CHECK(dr_plan_create(DR_DTYPE_INT64, 2, gshape, DR_SPLIT_NONE, MPI_COMM_WORLD, 0, 1,
                         new_shape, DR_SPLIT_NONE, -1, &plan) == DR_SUCCESS);
    CHECK(dr_plan_input_slab(plan, &len, &off, &elems) == DR_SUCCESS);
    CHECK_EQ(len, -1, "input not split: len");
    CHECK_EQ(off, -1, "input not split: offset");
    CHECK_EQ(elems, ROWS * COLS, "input not split: elems");
    CHECK(dr_plan_output_slab(plan, &len, &off, NULL) == DR_SUCCESS);
    CHECK_EQ(len, -1, "output not split: len");
    CHECK_EQ(off, -1, "output not split: offset");
    CHECK_STATUS(dr_plan_output_slab(NULL, &len, &off, NULL), DR_ERROR_NULL_POINTER);
    dr_plan_destroy(plan);
}

int main(int argc, char **argv) {
    test_init(&argc, &argv);
    rank = test_rank;
    nranks = test_nranks;
    check_split_change(0);
    check_split_change(1);
    check_not_split();
    return test_finish("slabs test");
}
