/* The grid-layout calls of the C ABI: local argument errors of dr_layout_create
 * and dr_layout_set_lengths; plan errors agreed on every rank with the rank named
 * (a grid of the wrong size, a grid axis used twice, lengths that do not add up on
 * one rank, layouts that differ on one rank, NULL layouts); a plan between layouts
 * executed out of place, in place and non-blocking, every element checked against
 * its global index, with the boxes and the resolved shape queried; x-pencils to
 * y-pencils on the 2-D grid of MPI_Dims_create (2x3 at 6 ranks, 7x1 at 7, 4x2 at
 * 8: more ranks than rows), each box against the balanced blocks of the rank's
 * row-major grid coordinates. */
#include "harness.h"

/* The array: (NROWS, NCOLS) int64. */
enum { NROWS = 11, NCOLS = 6 };

static dr_layout *layout(int32_t ndims, const int64_t *shape, int32_t grid_ndims,
                         const int32_t *grid, const int32_t *axes)
{
    dr_layout *made = NULL;
    CHECK_STATUS(dr_layout_create(ndims, shape, grid_ndims, grid, axes, &made), DR_SUCCESS);
    return made;
}

static void local_errors(void)
{
    const int64_t shape[2] = {NROWS, NCOLS};
    const int32_t grid[1] = {test_nranks}, axes[2] = {0, DR_SPLIT_NONE}, bad_axes[2] = {0, -3};
    dr_layout *made = NULL;
    CHECK_STATUS(dr_layout_create(2, shape, 1, grid, axes, NULL), DR_ERROR_NULL_POINTER);
    CHECK_STATUS(dr_layout_create(2, NULL, 1, grid, axes, &made), DR_ERROR_NULL_POINTER);
    CHECK_STATUS(dr_layout_create(2, shape, 1, grid, bad_axes, &made), DR_ERROR_INVALID_SPLIT);
    CHECK(strstr(dr_last_error_message(), "axis_grid[1] = -3") != NULL);
    CHECK_STATUS(dr_layout_create(99, shape, 1, grid, axes, &made), DR_ERROR_INVALID_SHAPE);
    made = layout(2, shape, 1, grid, axes);
    const int64_t lengths[1] = {NROWS};
    CHECK_STATUS(dr_layout_set_lengths(made, 1, lengths), DR_ERROR_INVALID_SPLIT);
    CHECK(strstr(dr_last_error_message(), "axis = 1 is not split") != NULL);
    CHECK_STATUS(dr_layout_set_lengths(made, 5, lengths), DR_ERROR_INVALID_SPLIT);
    CHECK_STATUS(dr_layout_set_lengths(NULL, 0, lengths), DR_ERROR_NULL_POINTER);
    dr_layout_destroy(made);
    dr_layout_destroy(NULL);
}

/* `dr_plan_create_layouts(in, out)` must fail with `want` on every rank, the
 * message naming a rank and holding `text`. */
static void agreed(const char *what, dr_layout *in, dr_layout *out, dr_status want, const char *text)
{
    dr_plan *plan = NULL;
    if (!CHECK_STATUS(dr_plan_create_layouts(DR_DTYPE_INT64, in, out, MPI_COMM_WORLD, &plan), want)) {
        fprintf(stderr, "rank %d: case %s\n", test_rank, what);
        dr_plan_destroy(plan);
        return;
    }
    const char *message = dr_last_error_message();
    CHECK_WHAT(strstr(message, text) != NULL, what);
    CHECK_WHAT(strstr(message, "rank ") != NULL, what);
}

static void agreed_errors(void)
{
    const int64_t shape[2] = {NROWS, NCOLS};
    const int32_t grid[1] = {test_nranks}, too_big[1] = {test_nranks + 1};
    const int32_t rows[2] = {0, DR_SPLIT_NONE}, twice[2] = {0, 0}, cols[2] = {DR_SPLIT_NONE, 0};
    dr_layout *good = layout(2, shape, 1, grid, rows);
    dr_layout *wrong_size = layout(2, shape, 1, too_big, rows);
    agreed("grid of the wrong size", good, wrong_size, DR_ERROR_INVALID_DISTRIBUTION, "grid_dims");
    dr_layout *used_twice = layout(2, shape, 1, grid, twice);
    agreed("grid axis used twice", used_twice, good, DR_ERROR_INVALID_SPLIT, "grid axis 0");
    /* Lengths that do not add up, on the last rank only. */
    dr_layout *lengths = layout(2, shape, 1, grid, rows);
    int64_t *l = calloc((size_t)test_nranks, sizeof *l);
    l[0] = test_rank == test_nranks - 1 ? NROWS + 1 : NROWS;
    CHECK_STATUS(dr_layout_set_lengths(lengths, 0, l), DR_SUCCESS);
    agreed("lengths that do not add up on the last rank", good, lengths, DR_ERROR_INVALID_DISTRIBUTION, "add up to");
    CHECK_NAMES_RANK(test_nranks - 1);
    if (test_nranks > 1) {
        dr_layout *odd = test_rank == 1 ? layout(2, shape, 1, grid, cols) : layout(2, shape, 1, grid, rows);
        agreed("layouts that differ on rank 1", good, odd, DR_ERROR_INCONSISTENT_ARGUMENTS, "differ between ranks");
        dr_layout_destroy(odd);
    }
    dr_layout *null_on_0 = test_rank == 0 ? NULL : good;
    agreed("a NULL layout on rank 0", null_on_0, good, DR_ERROR_NULL_POINTER, "in_layout is NULL");
    CHECK_NAMES_RANK(0);
    free(l);
    dr_layout_destroy(good);
    dr_layout_destroy(wrong_size);
    dr_layout_destroy(used_twice);
    dr_layout_destroy(lengths);
}

/* The number of the `n` elements of `got` that are not `want`'s. */
static int64_t wrong_elements(const int64_t *got, const int64_t *want, int64_t n)
{
    int64_t wrong = 0;
    for (int64_t k = 0; k < n; k++) wrong += got[k] != want[k];
    return wrong;
}

/* Rows of (NROWS, NCOLS) on a p x 1 grid -> (NCOLS, -1) = (6, 11), columns over
 * the 1-D grid: every element checked, three ways. */
static void executions(void)
{
    const int64_t shape[2] = {NROWS, NCOLS}, reshaped[2] = {NCOLS, -1};
    const int32_t grid[2] = {test_nranks, 1}, line[1] = {test_nranks};
    const int32_t rows[2] = {0, 1}, cols[2] = {DR_SPLIT_NONE, 0};
    dr_layout *in = layout(2, shape, 2, grid, rows), *out = layout(2, reshaped, 1, line, cols);
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create_layouts(DR_DTYPE_INT64, in, out, MPI_COMM_WORLD, &plan), DR_SUCCESS);
    dr_layout_destroy(in);
    dr_layout_destroy(out);
    int64_t in_off[2], in_len[2], out_off[2], out_len[2], resolved[2], out_elems;
    CHECK_STATUS(dr_plan_input_box(plan, in_off, in_len), DR_SUCCESS);
    CHECK_STATUS(dr_plan_output_box(plan, out_off, out_len), DR_SUCCESS);
    CHECK_STATUS(dr_plan_output(plan, resolved, NULL, &out_elems), DR_SUCCESS);
    int64_t rlen, roff, clen, coff;
    CHECK_STATUS(dr_balanced_slab(NROWS, test_nranks, test_rank, &rlen, &roff), DR_SUCCESS);
    CHECK_STATUS(dr_balanced_slab(NROWS, test_nranks, test_rank, &clen, &coff), DR_SUCCESS);
    CHECK_EQ(in_off[0], roff, "input box offset");
    CHECK_EQ(in_len[0], rlen, "input box rows");
    CHECK_EQ(in_len[1], NCOLS, "input box columns");
    CHECK_EQ(resolved[1], NROWS, "the -1 resolved");
    CHECK_EQ(out_off[1], coff, "output box offset");
    CHECK_EQ(out_len[0] * out_len[1], out_elems, "output elements");
    int64_t n_in = rlen * NCOLS, cap = (n_in > out_elems ? n_in : out_elems) + 1;
    int64_t *a = malloc((size_t)cap * sizeof *a), *b = malloc((size_t)cap * sizeof *b);
    int64_t *want = malloc((size_t)cap * sizeof *want);
    /* The output box holds rows 0..NCOLS of (NCOLS, NROWS), columns [coff, coff+clen):
     * flat index i*NROWS + coff + j, which the reshape keeps. */
    for (int64_t i = 0, k = 0; i < NCOLS; i++)
        for (int64_t j = 0; j < clen; j++, k++) want[k] = i * NROWS + coff + j;
    test_fill_i64(a, n_in, roff * NCOLS);
    CHECK_STATUS(dr_plan_execute(plan, a, b, cap), DR_SUCCESS);
    CHECK_EQ(wrong_elements(b, want, out_elems), 0, "wrong elements out of place");
    test_fill_i64(a, n_in, roff * NCOLS);
    CHECK_STATUS(dr_plan_execute(plan, a, a, cap), DR_SUCCESS);
    CHECK_EQ(wrong_elements(a, want, out_elems), 0, "wrong elements in place");
    test_fill_i64(a, n_in, roff * NCOLS);
    dr_request *request = NULL;
    CHECK_STATUS(dr_plan_execute_begin(plan, a, b, cap, &request), DR_SUCCESS);
    CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
    CHECK_EQ(wrong_elements(b, want, out_elems), 0, "wrong elements non-blocking");
    dr_plan_destroy(plan);
    free(a);
    free(b);
    free(want);
}

/* The pencils: (PX, PY, PZ). */
enum { PX = 5, PY = 7, PZ = 6 };

/* This rank's balanced block of `extent` over grid axis `g` of `grid` (row-major,
 * the last axis fastest): its offset and extent. */
static void grid_block(int64_t extent, const int32_t grid[2], int g, int64_t *offset, int64_t *len)
{
    int coord = g == 0 ? test_rank / grid[1] : test_rank % grid[1];
    CHECK_STATUS(dr_balanced_slab(extent, grid[g], coord, len, offset), DR_SUCCESS);
}

/* The global flat index of each element of the box (offsets, extents) of a
 * (PX, PY, PZ) array, in the box's C order, into `flat`. */
static void box_indices(const int64_t off[3], const int64_t len[3], int64_t *flat)
{
    int64_t k = 0;
    for (int64_t i = 0; i < len[0]; i++)
        for (int64_t j = 0; j < len[1]; j++)
            for (int64_t l = 0; l < len[2]; l++, k++)
                flat[k] = ((off[0] + i) * PY + off[1] + j) * PZ + off[2] + l;
}

/* x-pencils -> y-pencils on the MPI_Dims_create grid: the boxes against the
 * balanced blocks, every element out of place. */
static void pencils(void)
{
    const int64_t shape[3] = {PX, PY, PZ};
    int32_t grid[2];
    int dims[2] = {0, 0};
    MPI_Dims_create(test_nranks, 2, dims);
    grid[0] = dims[0];
    grid[1] = dims[1];
    const int32_t x_axes[3] = {DR_SPLIT_NONE, 0, 1}, y_axes[3] = {0, DR_SPLIT_NONE, 1};
    dr_layout *x = layout(3, shape, 2, grid, x_axes), *y = layout(3, shape, 2, grid, y_axes);
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create_layouts(DR_DTYPE_INT64, x, y, MPI_COMM_WORLD, &plan), DR_SUCCESS);
    dr_layout_destroy(x);
    dr_layout_destroy(y);
    int64_t in_off[3] = {0}, in_len[3] = {PX, 0, 0}, out_off[3] = {0}, out_len[3] = {0, PY, 0};
    grid_block(PY, grid, 0, &in_off[1], &in_len[1]);
    grid_block(PZ, grid, 1, &in_off[2], &in_len[2]);
    grid_block(PX, grid, 0, &out_off[0], &out_len[0]);
    grid_block(PZ, grid, 1, &out_off[2], &out_len[2]);
    int64_t got_off[3], got_len[3];
    CHECK_STATUS(dr_plan_input_box(plan, got_off, got_len), DR_SUCCESS);
    for (int a = 0; a < 3; a++) {
        CHECK_EQ(got_off[a], in_off[a], "pencils: input box offset");
        CHECK_EQ(got_len[a], in_len[a], "pencils: input box extent");
    }
    CHECK_STATUS(dr_plan_output_box(plan, got_off, got_len), DR_SUCCESS);
    for (int a = 0; a < 3; a++) {
        CHECK_EQ(got_off[a], out_off[a], "pencils: output box offset");
        CHECK_EQ(got_len[a], out_len[a], "pencils: output box extent");
    }
    int64_t n_in = in_len[0] * in_len[1] * in_len[2], n_out = out_len[0] * out_len[1] * out_len[2];
    int64_t *a = malloc((size_t)(n_in + 1) * sizeof *a), *b = malloc((size_t)(n_out + 1) * sizeof *b);
    int64_t *want = malloc((size_t)(n_out + 1) * sizeof *want);
    box_indices(in_off, in_len, a);
    box_indices(out_off, out_len, want);
    for (int64_t k = 0; k < n_out; k++) b[k] = -1;
    CHECK_STATUS(dr_plan_execute(plan, a, b, n_out), DR_SUCCESS);
    CHECK_EQ(wrong_elements(b, want, n_out), 0, "pencils: wrong elements");
    dr_plan_destroy(plan);
    free(a);
    free(b);
    free(want);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    local_errors();
    agreed_errors();
    executions();
    pencils();
    return test_finish("layouts_test");
}
