/* The C API's parity with Rust's: plan options (defaults, small limits that
 * exercise the chunked paths, NULL, a field out of range on one rank agreed on
 * every rank), the one-shot into chosen output lengths (dr_reshape_to), and the
 * executions that take the input's length (dr_plan_execute_sized). Every element
 * is checked; every agreed error names the rank that made it.
 *
 * The array: (8, 6) split along 0 into (4, 12) split along 1, filled with the
 * global (C order) indices, so that output element [i][j] holds i * 12 + j. */
#include "harness.h"

enum { ROWS = 8, COLS = 6, NEW_ROWS = 4, NEW_COLS = 12 };

static const int64_t gshape[2] = {ROWS, COLS}, new_gshape[2] = {NEW_ROWS, NEW_COLS};
static int64_t len, off;
static double in[ROWS * COLS], out[ROWS * COLS + 1];

/* The number of wrong elements of this rank's (NEW_ROWS, new_len) output slab at
 * column new_off. */
static int64_t wrong_output(const double *slab, int64_t new_len, int64_t new_off)
{
    int64_t wrong = 0;
    for (int64_t i = 0; i < NEW_ROWS; i++)
        for (int64_t j = 0; j < new_len; j++)
            wrong += slab[i * new_len + j] != (double)(i * NEW_COLS + new_off + j);
    return wrong;
}

/* Plans with `options`, executes out of place and in place; every element. */
static void execute_with(const dr_plan_options *options, const char *what)
{
    dr_plan *plan = NULL;
    if (!CHECK_STATUS(dr_plan_create_with_options(DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD,
                                                  len, 2, new_gshape, 1, -1, options, &plan),
                      DR_SUCCESS))
        return;
    int64_t new_len, new_off, new_elems;
    CHECK(dr_plan_output_slab(plan, &new_len, &new_off, &new_elems) == DR_SUCCESS);
    memset(out, 0, sizeof out);
    CHECK(dr_plan_execute_sized(plan, in, len * COLS, out, new_elems) == DR_SUCCESS);
    CHECK_WHAT(wrong_output(out, new_len, new_off) == 0, what);
    test_fill_f64(out, len * COLS, off * COLS);
    CHECK(dr_plan_execute_sized(plan, out, len * COLS, out, ROWS * COLS) == DR_SUCCESS);
    CHECK_WHAT(wrong_output(out, new_len, new_off) == 0, what);
    dr_plan_destroy(plan);
}

static void check_options(void)
{
    dr_plan_options o;
    memset(&o, 0x5a, sizeof o);
    CHECK(dr_plan_options_default(&o) == DR_SUCCESS);
    CHECK(o.max_message_bytes == 2147483647 && o.slot_bytes == 16 << 20);
    CHECK(o.run_budget == 262144 && o.window == 64 && o.in_place_budget == -1);
    CHECK(dr_plan_options_default(NULL) == DR_ERROR_NULL_POINTER);
    execute_with(&o, "the default options");
    execute_with(NULL, "NULL options");
    /* Limits small enough that messages are cut, packed and windowed, and in
     * place stages in rounds of a few bytes. */
    o.max_message_bytes = 24;
    o.slot_bytes = 1;
    o.run_budget = 4;
    o.window = 1;
    o.in_place_budget = 0;
    execute_with(&o, "tiny limits");
    o.in_place_budget = 64;
    execute_with(&o, "tiny limits, a 64-byte in-place budget");
    o.max_message_bytes = -1; /* -1: the default, whatever the others */
    o.window = -1;
    execute_with(&o, "-1 for the defaults");
}

/* One field out of range on the last rank: DR_ERROR_INVALID_OPTION everywhere,
 * the message naming the field, its value and that rank; no plan made. */
static void check_bad_option(const char *field, int64_t value)
{
    dr_plan_options o;
    dr_plan_options_default(&o);
    int last = test_rank == test_nranks - 1;
    if (last) {
        if (strcmp(field, "window") == 0) o.window = value;
        if (strcmp(field, "in_place_budget") == 0) o.in_place_budget = value;
        if (strcmp(field, "max_message_bytes") == 0) o.max_message_bytes = value;
        if (strcmp(field, "slot_bytes") == 0) o.slot_bytes = value;
        if (strcmp(field, "run_budget") == 0) o.run_budget = value;
    }
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create_with_options(DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len,
                                             2, new_gshape, 1, -1, &o, &plan),
                 DR_ERROR_INVALID_OPTION);
    CHECK(plan == NULL);
    char wanted[96];
    snprintf(wanted, sizeof wanted, "options.%s = %" PRId64 " is out of range", field, value);
    CHECK_WHAT(strstr(dr_last_error_message(), wanted) != NULL, wanted);
    CHECK_NAMES_RANK(test_nranks - 1);
}

/* The output lengths this test chooses: 2 columns on every rank but the last,
 * which takes the rest (12 - 2 (p - 1), at least 6 at 4 ranks). */
static int64_t chosen_len(int rank)
{
    return rank == test_nranks - 1 ? NEW_COLS - 2 * (test_nranks - 1) : 2;
}

static void check_reshape_to(void)
{
    int64_t new_len = chosen_len(test_rank), new_off = 2 * test_rank, elems = -1;
    memset(out, 0, sizeof out);
    out[NEW_ROWS * new_len] = -1;
    CHECK(dr_reshape_to(in, DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2, new_gshape, 1,
                        new_len, out, NEW_ROWS * new_len, &elems) == DR_SUCCESS);
    CHECK(elems == NEW_ROWS * new_len);
    CHECK_WHAT(wrong_output(out, new_len, new_off) == 0, "dr_reshape_to: chosen lengths");
    CHECK(out[NEW_ROWS * new_len] == -1);
    /* -1: balanced, as dr_reshape */
    int64_t balanced, balanced_off;
    dr_balanced_slab(NEW_COLS, test_nranks, test_rank, &balanced, &balanced_off);
    CHECK(dr_reshape_to(in, DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2, new_gshape, 1,
                        -1, out, ROWS * COLS, &elems) == DR_SUCCESS);
    CHECK_WHAT(wrong_output(out, balanced, balanced_off) == 0, "dr_reshape_to: balanced");
    /* lengths that do not add up (one more on the last rank): agreed everywhere */
    int last = test_rank == test_nranks - 1;
    CHECK_STATUS(dr_reshape_to(in, DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2,
                               new_gshape, 1, new_len + last, out, ROWS * COLS, &elems),
                 DR_ERROR_INVALID_DISTRIBUTION);
    CHECK(strstr(dr_last_error_message(), "new_local_len") != NULL);
    /* an output one element short on the last rank: agreed everywhere */
    CHECK_STATUS(dr_reshape_to(in, DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2,
                               new_gshape, 1, new_len, out, NEW_ROWS * new_len - last, &elems),
                 DR_ERROR_BUFFER_TOO_SMALL);
    CHECK_NAMES_RANK(test_nranks - 1);
}

static void check_execute_sized(void)
{
    dr_plan *plan = NULL;
    CHECK(dr_plan_create(DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2, new_gshape, 1,
                         -1, &plan) == DR_SUCCESS);
    int collective = test_plan_is_collective(plan);
    int64_t new_len, new_off, new_elems;
    CHECK(dr_plan_output_slab(plan, &new_len, &new_off, &new_elems) == DR_SUCCESS);
    int short_input = test_rank == test_nranks - 1 && len > 0;
    memset(out, 0, sizeof out);
    dr_status s = dr_plan_execute_sized(plan, in, len * COLS - short_input, out, new_elems);
    if (collective || short_input) {
        CHECK_STATUS(s, DR_ERROR_BUFFER_TOO_SMALL);
        CHECK_NAMES_RANK(test_nranks - 1);
        CHECK(strstr(dr_last_error_message(), "input") != NULL);
        double zeros[ROWS * COLS + 1] = {0};
        CHECK_WHAT(memcmp(out, zeros, sizeof out) == 0, "nothing written on failure");
    }
    s = dr_plan_execute_sized(plan, in, short_input ? -1 : len * COLS, out, new_elems);
    if (collective || short_input) {
        CHECK_STATUS(s, DR_ERROR_BUFFER_TOO_SMALL);
        CHECK_NAMES_RANK(test_nranks - 1);
    }
    /* a longer input is fine: only this rank's input is read */
    CHECK(dr_plan_execute_sized(plan, in, ROWS * COLS, out, new_elems) == DR_SUCCESS);
    CHECK_WHAT(wrong_output(out, new_len, new_off) == 0, "dr_plan_execute_sized");
    dr_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    dr_balanced_slab(ROWS, test_nranks, test_rank, &len, &off);
    test_fill_f64(in, len * COLS, off * COLS);
    check_options();
    check_bad_option("window", 0);
    check_bad_option("in_place_budget", -2);
    check_bad_option("max_message_bytes", INT64_C(1) << 31);
    check_bad_option("slot_bytes", -5);
    check_bad_option("run_budget", 0);
    check_reshape_to();
    check_execute_sized();
    return test_finish("parity test");
}
