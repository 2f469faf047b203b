/* When MPI has no communicator left for the library's private duplicate,
 * planning returns DR_ERROR_MPI on every rank instead of aborting, even though
 * the caller's communicator has MPI_ERRORS_ARE_FATAL; once communicators are
 * freed, planning works again. Exits 77 (reported as skipped by ctest) when this
 * MPI does not run out within MAX_COMMS duplicates (Open MPI has no small limit). */
#include "harness.h"

#define MAX_COMMS 20000

static MPI_Comm comms[MAX_COMMS];

static dr_status plan_on(MPI_Comm comm) {
    int64_t gshape[2] = {12, 5}, new_shape[2] = {5, 12}, len, off;
    dr_balanced_slab(12, test_nranks, test_rank, &len, &off);
    dr_plan *plan = NULL;
    dr_status s = dr_plan_create(DR_DTYPE_FLOAT64, 2, gshape, 0, comm, len, 2, new_shape, 1, -1,
                                 &plan);
    dr_plan_destroy(plan);
    return s;
}

int main(int argc, char **argv) {
    int n = 0;
    test_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    while (n < MAX_COMMS && MPI_Comm_dup(MPI_COMM_WORLD, &comms[n]) == MPI_SUCCESS) n++;
    int limit_reached = n < MAX_COMMS, everywhere = 0;
    MPI_Allreduce(&limit_reached, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {
        if (test_rank == 0)
            printf("no communicator limit within %d duplicates: skipped\n", MAX_COMMS);
        for (int i = 0; i < n; i++) MPI_Comm_free(&comms[i]);
        MPI_Finalize();
        return 77;
    }
    MPI_Comm last = comms[n - 1];
    MPI_Comm_set_errhandler(last, MPI_ERRORS_ARE_FATAL);
    CHECK_STATUS(plan_on(last), DR_ERROR_MPI);
    CHECK(strstr(dr_last_error_message(), "MPI_Comm_dup") != NULL);
    MPI_Errhandler handler;
    MPI_Comm_get_errhandler(last, &handler);
    CHECK_WHAT(handler == MPI_ERRORS_ARE_FATAL, "the caller's error handler is restored");
    MPI_Errhandler_free(&handler);
    for (int i = 0; i < n - 1; i++) MPI_Comm_free(&comms[i]);
    CHECK_STATUS(plan_on(last), DR_SUCCESS);
    MPI_Comm_free(&last);
    if (test_rank == 0) printf("communicator limit after %d duplicates\n", n);
    return test_finish("comm exhaustion test");
}
