/* The library's communicators: every plan on one communicator shares one private
 * duplicate, cached on it, so 10 000 plans (or argv[1]) alive at once work (MPICH
 * has about 2048 communicators in all) and each keeps its own messages; the duplicate
 * outlives the caller's communicator while plans use it; the caller's
 * communicator keeps its error handler. Every element is checked. */
#include "harness.h"

#define ROWS 7 /* more ranks than rows at 8+ ranks: some slabs are empty */
#define COLS 3

static int rank, nranks;

/* Plans (ROWS + k, COLS) split 0 -> (COLS, ROWS + k) split 1: a change of the
 * split axis that moves data between ranks whenever there are several. */
static dr_plan *make_plan(MPI_Comm comm, int k) {
    int64_t gshape[2] = {ROWS + k, COLS}, new_shape[2] = {COLS, ROWS + k}, len, off;
    dr_balanced_slab(ROWS + k, nranks, rank, &len, &off);
    dr_plan *plan = NULL;
    dr_status s = dr_plan_create(DR_DTYPE_INT64, 2, gshape, 0, comm, len, 2, new_shape, 1, -1,
                                 &plan);
    CHECK_EQ(s, DR_SUCCESS, k == 0 ? "dr_plan_create" : "dr_plan_create, more rows");
    return plan;
}

/* Executes a plan made by make_plan(k) and checks every element of the output. */
static void execute_and_check(dr_plan *plan, int k) {
    int64_t rows = ROWS + k, len, off, out_len, out_off;
    dr_balanced_slab(rows, nranks, rank, &len, &off);
    dr_balanced_slab(rows, nranks, rank, &out_len, &out_off);
    int64_t in[(ROWS + 16) * COLS], out[(ROWS + 16) * COLS];
    test_fill_i64(in, len * COLS, off * COLS);
    CHECK_STATUS(dr_plan_execute(plan, in, out, COLS * out_len), DR_SUCCESS);
    /* Output (COLS, rows) split 1: local element (c, r) is global (c, out_off + r). */
    for (int64_t c = 0; c < COLS; c++)
        for (int64_t r = 0; r < out_len; r++)
            CHECK_EQ(out[c * out_len + r], c * rows + out_off + r, "element");
}

/* `count` plans alive at once on MPI_COMM_WORLD, each executed (in an order
 * unlike their creation order) and checked. */
static void many_plans(int count) {
    dr_plan **plans = calloc((size_t)count, sizeof *plans);
    double start = MPI_Wtime();
    for (int i = 0; i < count; i++) plans[i] = make_plan(MPI_COMM_WORLD, i % 16);
    double made = MPI_Wtime();
    for (int i = count - 1; i >= 0; i--)
        if (plans[i]) execute_and_check(plans[i], i % 16);
    double executed = MPI_Wtime();
    for (int i = 0; i < count; i++) dr_plan_destroy(plans[i]);
    free(plans);
    if (rank == 0)
        printf("%d plans: made in %.2f s, executed in %.2f s\n", count, made - start,
               executed - made);
}

/* A plan keeps working after the caller frees its communicator; a duplicate the
 * caller makes of a communicator with plans gets its own (the attribute is not
 * copied), and both work. */
static void caller_frees_its_communicator(void) {
    MPI_Comm comm, copy;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    dr_plan *plan = make_plan(comm, 3);
    MPI_Comm_dup(comm, &copy);
    dr_plan *other = make_plan(copy, 5);
    MPI_Comm_free(&comm);
    MPI_Comm_free(&copy);
    if (plan) execute_and_check(plan, 3);
    if (other) execute_and_check(other, 5);
    dr_plan_destroy(plan);
    dr_plan_destroy(other);
}

/* Planning swaps the caller's error handler only for its own calls. */
static void error_handler_is_restored(void) {
    MPI_Comm comm;
    MPI_Errhandler before, after;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    dr_plan_destroy(make_plan(comm, 1));
    MPI_Comm_get_errhandler(comm, &after);
    CHECK_WHAT(after == MPI_ERRORS_ARE_FATAL, "the caller's handler (fatal) is kept");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    dr_plan_destroy(make_plan(comm, 1));
    MPI_Comm_get_errhandler(comm, &before);
    CHECK_WHAT(before == MPI_ERRORS_RETURN, "the caller's handler (return) is kept");
    MPI_Errhandler_free(&after);
    MPI_Errhandler_free(&before);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv) {
    test_init(&argc, &argv);
    rank = test_rank;
    nranks = test_nranks;
    many_plans(argc > 1 ? atoi(argv[1]) : 10000);
    caller_frees_its_communicator();
    error_handler_is_restored();
    return test_finish("comms test");
}
