/* Non-blocking execution: begin / compute / wait, a test loop, a second begin
 * while one is in flight, an error on one rank (reported at begin on every rank),
 * a short input of the sized begin on one rank, in place, a plan that completes
 * at begin, and plans destroyed (dr_plan_destroy, dr_plan_free) with an execution
 * in flight on every rank: the execution is completed, the request then reports
 * it at once and is freed; two executions in flight waited for in other orders
 * on even and odd ranks (one of them blocking, or both begun), and the first
 * plan on a communicator made during a wait on some ranks only. Every element
 * is checked. */
#include "harness.h"

#define ROWS 37
#define COLS 5
/* The plans destroyed in flight: large enough that their messages are still in
 * flight when begin returns (past the eager limits). */
#define BIG_ROWS 3000
#define BIG_COLS 64

static int64_t in_len, in_off, out_len, out_off;

/* (rows, cols) split 0 -> (cols, rows) split 1, balanced on both sides. */
static dr_plan *make_plan(int64_t rows, int64_t cols, int64_t len)
{
    int64_t gshape[2] = {rows, cols}, new_shape[2] = {cols, rows};
    dr_plan *plan = NULL;
    CHECK(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2, new_shape, 1, -1,
                         &plan) == DR_SUCCESS);
    return plan;
}

/* The number of wrong elements of this rank's (cols, out_len) output slab of
 * the transposed (rows, cols) array filled with global indices. */
static int64_t wrong_transposed(const int64_t *out, int64_t rows, int64_t cols, int64_t len,
                                int64_t off)
{
    int64_t wrong = 0;
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < len; r++) wrong += out[c * len + r] != c * rows + off + r;
    return wrong;
}

static int64_t wrong_elements(const int64_t *out)
{
    return wrong_transposed(out, ROWS, COLS, out_len, out_off);
}

/* Some computation to overlap with. */
static double compute(int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += 1.0 / (double)(i + 1);
    return sum;
}

/* A plan destroyed on every rank with its execution in flight (by dr_plan_free
 * when `free_it`, else dr_plan_destroy): the destruction completes it, so the
 * output is whole; the request is then complete at once (DR_SUCCESS, NULL), by
 * dr_request_wait or by dr_request_test. */
static void destroy_in_flight(int free_it, int by_test)
{
    int64_t len, off, new_len, new_off;
    dr_balanced_slab(BIG_ROWS, test_nranks, test_rank, &len, &off);
    dr_balanced_slab(BIG_ROWS, test_nranks, test_rank, &new_len, &new_off);
    int64_t *in = malloc((size_t)(len * BIG_COLS + 1) * sizeof *in);
    int64_t *out = malloc((size_t)(new_len * BIG_COLS + 1) * sizeof *out);
    test_fill_i64(in, len * BIG_COLS, off * BIG_COLS);
    memset(out, 0xff, (size_t)(new_len * BIG_COLS + 1) * sizeof *out);
    dr_plan *plan = make_plan(BIG_ROWS, BIG_COLS, len);
    dr_request *request = NULL;
    CHECK(dr_plan_execute_begin_sized(plan, in, len * BIG_COLS, out, new_len * BIG_COLS,
                                      &request) == DR_SUCCESS);
    /* In flight somewhere whenever ranks exchange data; report it to show the case ran. */
    int in_flight = test_any(request != NULL);
    if (test_rank == 0)
        printf("destroy (%s) with %s in flight\n", free_it ? "dr_plan_free" : "dr_plan_destroy",
               in_flight ? "an execution" : "nothing");
    CHECK(test_nranks == 1 || in_flight);
    if (free_it) {
        CHECK(dr_plan_free(&plan) == DR_SUCCESS);
        CHECK(plan == NULL);
        CHECK(dr_plan_free(&plan) == DR_SUCCESS); /* NULL: a no-op */
    } else {
        dr_plan_destroy(plan);
    }
    CHECK_WHAT(wrong_transposed(out, BIG_ROWS, BIG_COLS, new_len, new_off) == 0,
               "the destruction completed the execution: every element");
    CHECK(out[new_len * BIG_COLS] == -1); /* nothing written past the output */
    if (by_test) {
        int done = 0;
        CHECK(dr_request_test(&request, &done) == DR_SUCCESS);
        CHECK(done == 1);
    } else {
        CHECK(dr_request_wait(&request) == DR_SUCCESS);
    }
    CHECK_WHAT(request == NULL, "the request of a destroyed plan is over and freed");
    free(in);
    free(out);
}

/* One plan of the rank-order test: (rows, cols) split 0 -> (cols, rows) split 1
 * in 64-byte messages, one peer per window, so that an execution takes many
 * rounds, each posted only when this rank moves the execution on. */
struct ordered {
    int64_t rows, cols, len, off, new_len, new_off;
    int64_t *in, *out;
    dr_plan *plan;
    dr_request *request;
};

static void ordered_make(struct ordered *o, int64_t rows, int64_t cols)
{
    o->rows = rows, o->cols = cols;
    dr_balanced_slab(rows, test_nranks, test_rank, &o->len, &o->off);
    dr_balanced_slab(rows, test_nranks, test_rank, &o->new_len, &o->new_off);
    o->in = malloc((size_t)(o->len * cols + 1) * sizeof *o->in);
    o->out = malloc((size_t)(o->new_len * cols + 1) * sizeof *o->out);
    test_fill_i64(o->in, o->len * cols, o->off * cols);
    memset(o->out, 0xff, (size_t)(o->new_len * cols + 1) * sizeof *o->out);
    dr_plan_options options;
    CHECK(dr_plan_options_default(&options) == DR_SUCCESS);
    options.max_message_bytes = 64;
    options.window = 1;
    int64_t gshape[2] = {rows, cols}, new_shape[2] = {cols, rows};
    o->plan = NULL;
    o->request = NULL;
    CHECK(dr_plan_create_with_options(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, o->len, 2,
                                      new_shape, 1, -1, &options, &o->plan) == DR_SUCCESS);
}

static void ordered_begin(struct ordered *o)
{
    CHECK(dr_plan_execute_begin(o->plan, o->in, o->out, o->new_len * o->cols, &o->request) ==
          DR_SUCCESS);
}

static void ordered_wait(struct ordered *o)
{
    CHECK(dr_request_wait(&o->request) == DR_SUCCESS && o->request == NULL);
}

/* Tests the execution until it completes. */
static void ordered_test_loop(struct ordered *o)
{
    int done = 0;
    while (!done) CHECK(dr_request_test(&o->request, &done) == DR_SUCCESS);
    CHECK(o->request == NULL);
}

/* Checks every element and the element past the output, then frees. */
static void ordered_check_and_free(struct ordered *o, const char *what)
{
    CHECK_WHAT(wrong_transposed(o->out, o->rows, o->cols, o->new_len, o->new_off) == 0, what);
    CHECK_WHAT(o->out[o->new_len * o->cols] == -1, what);
    dr_plan_destroy(o->plan);
    free(o->in);
    free(o->out);
}

/* Two executions in flight, completed in other orders on even and odd ranks:
 * each wait (each test, with `tests`) carries the other execution on, so
 * neither hangs. With `blocking`, the second is a blocking execution that even
 * ranks run before they wait for the first and odd ranks after. */
static void waits_in_other_orders(int blocking, int tests)
{
    void (*complete)(struct ordered *) = tests ? ordered_test_loop : ordered_wait;
    struct ordered a, b;
    ordered_make(&a, 3001, 16);
    ordered_make(&b, 2803, 18);
    int even = test_rank % 2 == 0;
    ordered_begin(&a);
    if (blocking) {
        if (even)
            CHECK(dr_plan_execute(b.plan, b.in, b.out, b.new_len * b.cols) == DR_SUCCESS);
        ordered_wait(&a);
        if (!even)
            CHECK(dr_plan_execute(b.plan, b.in, b.out, b.new_len * b.cols) == DR_SUCCESS);
    } else {
        ordered_begin(&b);
        complete(even ? &b : &a);
        complete(even ? &a : &b);
    }
    ordered_check_and_free(&a, "the first execution, waited for in other orders");
    ordered_check_and_free(&b, "the second execution, waited for in other orders");
}

/* The first plan on a communicator, made by even ranks between a begin and its
 * wait and by odd ranks after: the duplication of the communicator carries the
 * execution in flight on too. */
static void first_plan_on_a_communicator_during_a_wait(void)
{
    struct ordered a;
    ordered_make(&a, 3001, 16);
    MPI_Comm fresh;
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &fresh) == MPI_SUCCESS);
    int even = test_rank % 2 == 0;
    int64_t rows = 5 * test_nranks, len, off, gshape[2] = {rows, 3}, new_shape[1] = {-1};
    dr_balanced_slab(rows, test_nranks, test_rank, &len, &off);
    dr_plan *plan = NULL;
    ordered_begin(&a);
    if (even)
        CHECK(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, fresh, len, 1, new_shape, 0, -1,
                             &plan) == DR_SUCCESS);
    ordered_wait(&a);
    if (!even)
        CHECK(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, fresh, len, 1, new_shape, 0, -1,
                             &plan) == DR_SUCCESS);
    dr_plan_destroy(plan);
    CHECK(MPI_Comm_free(&fresh) == MPI_SUCCESS);
    ordered_check_and_free(&a, "an execution waited for around a communicator's first plan");
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int rank = test_rank, nranks = test_nranks;
    dr_balanced_slab(ROWS, nranks, rank, &in_len, &in_off);
    dr_balanced_slab(ROWS, nranks, rank, &out_len, &out_off);
    size_t most = (size_t)(ROWS * COLS);
    int64_t *in = calloc(most, sizeof *in), *out = calloc(most, sizeof *out);
    dr_plan *plan = make_plan(ROWS, COLS, in_len);
    test_fill_i64(in, in_len * COLS, in_off * COLS);
    /* Only a plan that moves data between ranks agrees on errors (and can be in flight). */
    int collective = test_plan_is_collective(plan);

    /* begin / compute / wait */
    dr_request *request = NULL;
    memset(out, 0xff, most * sizeof *out);
    CHECK(dr_plan_execute_begin(plan, in, out, out_len * COLS, &request) == DR_SUCCESS);
    volatile double sink = compute(100000);
    CHECK(dr_request_wait(&request) == DR_SUCCESS && request == NULL);
    CHECK_WHAT(wrong_elements(out) == 0, "elements after begin / compute / wait");

    /* a test loop */
    memset(out, 0xff, most * sizeof *out);
    CHECK(dr_plan_execute_begin(plan, in, out, out_len * COLS, &request) == DR_SUCCESS);
    int done = 0, tests = 0;
    while (!done && tests < 100000000) {
        sink += compute(100);
        CHECK(dr_request_test(&request, &done) == DR_SUCCESS);
        tests++;
    }
    CHECK_WHAT(done && request == NULL, "the test loop completes and clears the request");
    CHECK_WHAT(wrong_elements(out) == 0, "elements after a test loop");
    CHECK_WHAT(dr_request_test(&request, &done) == DR_SUCCESS && done, "testing a NULL request");

    /* a second execution while one is in flight: refused on every rank */
    memset(out, 0xff, most * sizeof *out);
    CHECK(dr_plan_execute_begin(plan, in, out, out_len * COLS, &request) == DR_SUCCESS);
    /* An execution may also complete within begin (small messages): it is in flight
     * only where the request is not NULL, and then refused on every rank. */
    int in_flight = test_any(request != NULL);
    dr_request *second = NULL;
    dr_status s = dr_plan_execute_begin(plan, in, out, out_len * COLS, &second);
    if (collective && in_flight) {
        CHECK_WHAT(s == DR_ERROR_EXECUTION_IN_PROGRESS && second == NULL, "a second begin");
        CHECK_WHAT(dr_plan_execute(plan, in, out, out_len * COLS) == DR_ERROR_EXECUTION_IN_PROGRESS,
                   "execute during an execution");
    } else { /* nothing was in flight anywhere: the second execution runs */
        CHECK_WHAT(s == DR_SUCCESS, "a second begin once the first completed");
        CHECK_WHAT(dr_request_wait(&second) == DR_SUCCESS, "wait for the second");
    }
    CHECK(dr_request_wait(&request) == DR_SUCCESS);
    CHECK_WHAT(wrong_elements(out) == 0, "elements after the refused second execution");

    /* an error on the last rank only: every rank fails at begin, nothing starts */
    int last = rank == nranks - 1;
    s = dr_plan_execute_begin(plan, in, out, out_len * COLS - (last && out_len > 0), &request);
    if (collective || (last && out_len > 0)) {
        CHECK_WHAT(s == DR_ERROR_BUFFER_TOO_SMALL && request == NULL, "a short output on one rank");
        CHECK_NAMES_RANK(nranks - 1);
    }
    CHECK_WHAT(dr_request_wait(&request) == DR_SUCCESS, "waiting on the failed begin's request");

    /* the sized begin with an input one element short on the last rank */
    int short_input = last && in_len > 0;
    s = dr_plan_execute_begin_sized(plan, in, in_len * COLS - short_input, out, out_len * COLS,
                                    &request);
    if (collective || short_input) {
        CHECK_STATUS(s, DR_ERROR_BUFFER_TOO_SMALL);
        CHECK(request == NULL);
        CHECK_NAMES_RANK(nranks - 1);
    }
    CHECK(dr_request_wait(&request) == DR_SUCCESS);
    memset(out, 0xff, most * sizeof *out);
    CHECK(dr_plan_execute_begin_sized(plan, in, in_len * COLS, out, out_len * COLS, &request) ==
          DR_SUCCESS);
    CHECK(dr_request_wait(&request) == DR_SUCCESS);
    CHECK_WHAT(wrong_elements(out) == 0, "elements after the sized begin");

    /* in place */
    int64_t *buf = calloc(most, sizeof *buf);
    test_fill_i64(buf, in_len * COLS, in_off * COLS);
    CHECK(dr_plan_execute_begin(plan, buf, buf, (int64_t)most, &request) == DR_SUCCESS);
    CHECK(dr_request_wait(&request) == DR_SUCCESS);
    CHECK_WHAT(wrong_elements(buf) == 0, "elements in place");

    dr_plan_destroy(plan);

    /* executions completed in other orders on different ranks */
    waits_in_other_orders(0, 0);
    waits_in_other_orders(1, 0);
    waits_in_other_orders(0, 1);
    first_plan_on_a_communicator_during_a_wait();

    /* plans destroyed with their execution in flight */
    destroy_in_flight(0, 0);
    destroy_in_flight(1, 0);
    destroy_in_flight(1, 1);
    CHECK(dr_plan_free(NULL) == DR_ERROR_NULL_POINTER);

    free(in);
    free(out);
    free(buf);
    if (rank == 0) printf("overlapped work: %.1f\n", (double)sink);
    return test_finish("nonblocking test");
}
