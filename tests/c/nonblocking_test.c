/* Non-blocking execution: begin / compute / wait, a test loop, a second begin
 * while one is in flight, an error on one rank (reported at begin on every rank),
 * in place, and a plan that completes at begin. Every element is checked. */
#include <distreshape.h>
#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 37
#define COLS 5

static int rank, nranks, failures;
static int64_t in_len, in_off, out_len, out_off;

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "rank %d: %s: %s\n", rank, what, dr_last_error_message());
        failures++;
    }
}

/* (ROWS, COLS) split 0 -> (COLS, ROWS) split 1, balanced on both sides. */
static dr_plan *make_plan(void) {
    int64_t gshape[2] = {ROWS, COLS}, new_shape[2] = {COLS, ROWS};
    dr_plan *plan = NULL;
    expect(dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, in_len, 2, new_shape, 1,
                          -1, &plan) == DR_SUCCESS,
           "dr_plan_create");
    return plan;
}

static void fill(int64_t *in) {
    for (int64_t i = 0; i < in_len * COLS; i++) in[i] = in_off * COLS + i;
}

static int64_t wrong_elements(const int64_t *out) {
    int64_t wrong = 0;
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t r = 0; r < out_len; r++) wrong += out[c * out_len + r] != c * ROWS + out_off + r;
    return wrong;
}

/* Some computation to overlap with. */
static double compute(int64_t n) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += 1.0 / (double)(i + 1);
    return sum;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    dr_balanced_slab(ROWS, nranks, rank, &in_len, &in_off);
    dr_balanced_slab(ROWS, nranks, rank, &out_len, &out_off);
    size_t most = (size_t)(ROWS * COLS);
    int64_t *in = calloc(most, sizeof *in), *out = calloc(most, sizeof *out);
    dr_plan *plan = make_plan();
    fill(in);
    /* Only a plan that moves data between ranks agrees on errors (and can be in flight). */
    dr_plan_stats stats;
    dr_plan_stats_get(plan, &stats);
    int moves = stats.bytes_sent + stats.bytes_received > 0, collective = 0;
    MPI_Allreduce(&moves, &collective, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    /* begin / compute / wait */
    dr_request *request = NULL;
    memset(out, 0xff, most * sizeof *out);
    expect(dr_plan_execute_begin(plan, in, out, out_len * COLS, &request) == DR_SUCCESS, "begin");
    volatile double sink = compute(100000);
    expect(dr_request_wait(&request) == DR_SUCCESS && request == NULL, "wait");
    expect(wrong_elements(out) == 0, "elements after begin / compute / wait");

    /* a test loop */
    memset(out, 0xff, most * sizeof *out);
    expect(dr_plan_execute_begin(plan, in, out, out_len * COLS, &request) == DR_SUCCESS, "begin 2");
    int done = 0, tests = 0;
    while (!done && tests < 100000000) {
        sink += compute(100);
        expect(dr_request_test(&request, &done) == DR_SUCCESS, "test");
        tests++;
    }
    expect(done && request == NULL, "the test loop completes and clears the request");
    expect(wrong_elements(out) == 0, "elements after a test loop");
    expect(dr_request_test(&request, &done) == DR_SUCCESS && done, "testing a NULL request");

    /* a second execution while one is in flight: refused on every rank */
    memset(out, 0xff, most * sizeof *out);
    expect(dr_plan_execute_begin(plan, in, out, out_len * COLS, &request) == DR_SUCCESS, "begin 3");
    /* An execution may also complete within begin (small messages): it is in flight
     * only where the request is not NULL, and then refused on every rank. */
    int mine_in_flight = request != NULL, in_flight = 0;
    MPI_Allreduce(&mine_in_flight, &in_flight, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    dr_request *second = NULL;
    dr_status s = dr_plan_execute_begin(plan, in, out, out_len * COLS, &second);
    if (collective && in_flight) {
        expect(s == DR_ERROR_EXECUTION_IN_PROGRESS && second == NULL, "a second begin");
        expect(dr_plan_execute(plan, in, out, out_len * COLS) == DR_ERROR_EXECUTION_IN_PROGRESS,
               "execute during an execution");
    } else { /* nothing was in flight anywhere: the second execution runs */
        expect(s == DR_SUCCESS, "a second begin once the first completed");
        expect(dr_request_wait(&second) == DR_SUCCESS, "wait for the second");
    }
    expect(dr_request_wait(&request) == DR_SUCCESS, "wait 3");
    expect(wrong_elements(out) == 0, "elements after the refused second execution");

    /* an error on the last rank only: every rank fails at begin, nothing starts */
    int last = rank == nranks - 1;
    s = dr_plan_execute_begin(plan, in, out, out_len * COLS - (last && out_len > 0), &request);
    if (collective || (last && out_len > 0))
        expect(s == DR_ERROR_BUFFER_TOO_SMALL && request == NULL, "a short output on one rank");
    expect(dr_request_wait(&request) == DR_SUCCESS, "waiting on the failed begin's request");

    /* in place */
    int64_t *buf = calloc(most, sizeof *buf);
    fill(buf);
    expect(dr_plan_execute_begin(plan, buf, buf, (int64_t)most, &request) == DR_SUCCESS,
           "begin in place");
    expect(dr_request_wait(&request) == DR_SUCCESS, "wait in place");
    expect(wrong_elements(buf) == 0, "elements in place");

    dr_plan_destroy(plan);
    free(in);
    free(out);
    free(buf);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("nonblocking test: %d failures (overlapped work: %.1f)\n", all, (double)sink);
    MPI_Finalize();
    return all != 0;
}
