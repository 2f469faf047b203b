/* Under MPI_THREAD_FUNNELED, a test or a wait of a request from a thread other
 * than the main one is refused on that rank and does nothing: the request stays
 * in flight (`*done` 0, `*request` unchanged), and the main thread's wait then
 * completes it, every element checked, the plan usable again. The plan is
 * (rows, cols) split 0 -> (cols, rows) split 1 in 64-byte messages, one peer per
 * window: its execution takes many rounds, each posted only when this rank
 * moves it on. */
#include <pthread.h>

#include "harness.h"

#define ROWS 3001
#define COLS 16

/* What the other thread does to the request, and what it saw. */
struct refused {
    dr_request *request;
    int waits;
    int errors;
};

/* Tests (or waits for) the request from this thread: DR_ERROR_MPI naming the
 * thread level and this rank, the request untouched. */
static void *try_elsewhere(void *arg)
{
    struct refused *r = arg;
    dr_request *before = r->request;
    int done = -1;
    dr_status status =
        r->waits ? dr_request_wait(&r->request) : dr_request_test(&r->request, &done);
    const char *message = dr_last_error_message();
    r->errors += status != DR_ERROR_MPI;
    r->errors += strstr(message, "MPI_THREAD_FUNNELED") == NULL || !test_names_rank(message, test_rank);
    r->errors += r->request != before;
    r->errors += !r->waits && done != 0;
    if (r->errors)
        fprintf(stderr, "rank %d: the %s from another thread returned %d, done %d: \"%s\"\n",
                test_rank, r->waits ? "wait" : "test", (int)status, done, message);
    return NULL;
}

/* Begins on the main thread, is refused elsewhere (by a test, then a wait),
 * then waits on the main thread and checks every element. */
static void refused_elsewhere(dr_plan *plan, int64_t len, int64_t off, int64_t new_len,
                              int64_t new_off)
{
    int64_t *in = malloc((size_t)(len * COLS) * sizeof *in);
    int64_t *out = malloc((size_t)(new_len * COLS + 1) * sizeof *out);
    test_fill_i64(in, len * COLS, off * COLS);
    memset(out, 0xff, (size_t)(new_len * COLS + 1) * sizeof *out);
    struct refused r = {NULL, 0, 0};
    CHECK(dr_plan_execute_begin(plan, in, out, new_len * COLS, &r.request) == DR_SUCCESS);
    int in_flight = test_any(r.request != NULL);
    CHECK(test_nranks == 1 || in_flight);
    for (r.waits = 0; r.request != NULL && r.waits < 2; r.waits++) {
        pthread_t other;
        CHECK(pthread_create(&other, NULL, try_elsewhere, &r) == 0);
        CHECK(pthread_join(other, NULL) == 0);
    }
    CHECK_EQ(r.errors, 0, "checks of the refused calls on the other thread");
    CHECK(dr_request_wait(&r.request) == DR_SUCCESS && r.request == NULL);
    int64_t wrong = 0;
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t i = 0; i < new_len; i++) wrong += out[c * new_len + i] != c * ROWS + new_off + i;
    CHECK_EQ(wrong, 0, "wrong elements after the main thread's wait");
    CHECK(out[new_len * COLS] == -1);
    CHECK_EQ(test_wrong_i64(in, len * COLS, off * COLS), 0, "changed input elements");
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    if (!test_init_thread(&argc, &argv, MPI_THREAD_FUNNELED)) {
        fprintf(stderr, "MPI_THREAD_FUNNELED is not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided != MPI_THREAD_FUNNELED) {
        /* The refusal is what FUNNELED calls for; a library that raised the
         * level would allow the calls. */
        if (test_rank == 0) printf("MPI provided %d, not MPI_THREAD_FUNNELED\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int64_t len, off, new_len, new_off;
    dr_balanced_slab(ROWS, test_nranks, test_rank, &len, &off);
    dr_balanced_slab(ROWS, test_nranks, test_rank, &new_len, &new_off);
    dr_plan_options options;
    CHECK(dr_plan_options_default(&options) == DR_SUCCESS);
    options.max_message_bytes = 64;
    options.window = 1;
    int64_t gshape[2] = {ROWS, COLS}, new_shape[2] = {COLS, ROWS};
    dr_plan *plan = NULL;
    CHECK(dr_plan_create_with_options(DR_DTYPE_INT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2,
                                      new_shape, 1, -1, &options, &plan) == DR_SUCCESS);
    refused_elsewhere(plan, len, off, new_len, new_off);
    refused_elsewhere(plan, len, off, new_len, new_off);
    dr_plan_destroy(plan);
    return test_finish("funneled test");
}
