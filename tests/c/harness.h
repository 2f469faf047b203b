/* The C tests' common frame: MPI set up with this process's rank and the rank
 * count, CHECK macros that print the failing expression with the rank (and the
 * library's last message) and count the failure without aborting, buffers filled
 * with global indices and checked element by element, and the end of a test: the
 * failures summed over the ranks, a nonzero exit status on every rank if any.
 *
 *   int main(int argc, char **argv) {
 *       test_init(&argc, &argv);
 *       CHECK(dr_plan_create(...) == DR_SUCCESS);
 *       CHECK_STATUS(dr_plan_execute(...), DR_ERROR_BUFFER_TOO_SMALL);
 *       CHECK_NAMES_RANK(test_nranks - 1);
 *       return test_finish("my test");
 *   }
 *
 * Header-only (static inline functions): include it in one translation unit. */
#ifndef DISTRESHAPE_TEST_HARNESS_H
#define DISTRESHAPE_TEST_HARNESS_H

#include <distreshape.h>
#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* This process's rank in MPI_COMM_WORLD, the number of ranks, and this rank's
 * failed checks so far. */
static int test_rank, test_nranks, test_failures;

/* MPI_Init_thread with `required` (MPI_THREAD_SINGLE for most tests), the rank and
 * the size of MPI_COMM_WORLD; 0 when MPI gave less than `required`. */
static inline int test_init_thread(int *argc, char ***argv, int required)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, required, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_nranks);
    return provided >= required;
}

/* MPI_Init, the rank and the size of MPI_COMM_WORLD. */
static inline void test_init(int *argc, char ***argv)
{
    test_init_thread(argc, argv, MPI_THREAD_SINGLE);
}

/* Counts a failed check, printing where, what and the library's last message. */
static inline void test_check(int ok, const char *what, const char *file, int line)
{
    if (ok) return;
    fprintf(stderr, "rank %d: FAIL %s:%d: %s (last error: \"%s\")\n", test_rank, file, line, what,
            dr_last_error_message());
    test_failures++;
}

/* Counts a failure unless `got` is `want`, naming both statuses. Returns whether
 * it was. */
static inline int test_check_status(dr_status got, dr_status want, const char *call, const char *file,
                             int line)
{
    if (got == want) return 1;
    fprintf(stderr, "rank %d: FAIL %s:%d: %s returned %d (%s), expected %d (%s); last error: \"%s\"\n",
            test_rank, file, line, call, (int)got, dr_status_string(got), (int)want,
            dr_status_string(want), dr_last_error_message());
    test_failures++;
    return 0;
}

/* Counts a failure unless `got` equals `want`, printing both. */
static inline void test_check_eq(int64_t got, int64_t want, const char *what, const char *file, int line)
{
    if (got == want) return;
    fprintf(stderr, "rank %d: FAIL %s:%d: %s: got %" PRId64 ", want %" PRId64 "\n", test_rank, file,
            line, what, got, want);
    test_failures++;
}

/* True when `message` says "rank R" with R exactly `rank` (not "rank 12" for 1). */
static inline int test_names_rank(const char *message, int rank)
{
    char wanted[32];
    snprintf(wanted, sizeof wanted, "rank %d", rank);
    for (const char *at = strstr(message, wanted); at; at = strstr(at + 1, wanted)) {
        char next = at[strlen(wanted)];
        if (next < '0' || next > '9') return 1;
    }
    return 0;
}

/* The checks: the expression's text is printed when it is false. */
#define CHECK(expr) test_check((expr) != 0, #expr, __FILE__, __LINE__)
/* A check with a description of its own. */
#define CHECK_WHAT(expr, what) test_check((expr) != 0, what, __FILE__, __LINE__)
/* `got` must equal `want` (as int64_t); both are printed otherwise. */
#define CHECK_EQ(got, want, what) test_check_eq((int64_t)(got), (int64_t)(want), what, __FILE__, __LINE__)
/* `call` must return `want`; evaluates to whether it did. */
#define CHECK_STATUS(call, want) test_check_status((call), (want), #call, __FILE__, __LINE__)
/* The last error message must name rank `r`. */
#define CHECK_NAMES_RANK(r)                                                                       \
    test_check(test_names_rank(dr_last_error_message(), (r)), "the message names rank " #r,     \
               __FILE__, __LINE__)

/* Writes the global indices first, first + 1, ... into buf[0..n). */
static inline void test_fill_i64(int64_t *buf, int64_t n, int64_t first)
{
    for (int64_t i = 0; i < n; i++) buf[i] = first + i;
}

/* The number of elements of buf[0..n) that are not first + i. */
static inline int64_t test_wrong_i64(const int64_t *buf, int64_t n, int64_t first)
{
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) wrong += buf[i] != first + i;
    return wrong;
}

/* Writes the global indices first, first + 1, ... as doubles into buf[0..n). */
static inline void test_fill_f64(double *buf, int64_t n, int64_t first)
{
    for (int64_t i = 0; i < n; i++) buf[i] = (double)(first + i);
}

/* The number of elements of buf[0..n) that are not the double first + i. */
static inline int64_t test_wrong_f64(const double *buf, int64_t n, int64_t first)
{
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; i++) wrong += buf[i] != (double)(first + i);
    return wrong;
}

/* 1 on every rank when `mine` is nonzero on any rank (one MPI_Allreduce). */
static inline int test_any(int mine)
{
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

/* Whether `plan` moves data between ranks anywhere: only then are its execution
 * errors agreed (a plan that moves nothing executes without communicating). */
static inline int test_plan_is_collective(const dr_plan *plan)
{
    dr_plan_stats stats;
    memset(&stats, 0, sizeof stats);
    CHECK(dr_plan_stats_get(plan, &stats) == DR_SUCCESS);
    return test_any(stats.bytes_sent + stats.bytes_received > 0);
}

/* Sums the failures over the ranks, prints them on rank 0 with `name`, finalizes
 * MPI and returns the exit status: nonzero on every rank when any rank failed. */
static inline int test_finish(const char *name)
{
    int all = 0;
    MPI_Allreduce(&test_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (test_rank == 0) printf("%s: %d failure(s) on %d rank(s)\n", name, all, test_nranks);
    MPI_Finalize();
    return all != 0;
}

#endif
