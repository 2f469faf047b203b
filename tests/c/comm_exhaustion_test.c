/* When MPI has no communicator left for the library's private duplicate,
 * planning returns DR_ERROR_MPI on every rank instead of aborting, even though
 * the caller's communicator has MPI_ERRORS_ARE_FATAL; once communicators are
 * freed, planning works again. Exits 77 (reported as skipped by ctest) when this
 * MPI does not run out within MAX_COMMS duplicates (Open MPI has no small limit). */
#include <distreshape.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define MAX_COMMS 20000

static MPI_Comm comms[MAX_COMMS];

static dr_status plan_on(MPI_Comm comm, int rank, int nranks) {
    int64_t gshape[2] = {12, 5}, new_shape[2] = {5, 12}, len, off;
    dr_balanced_slab(12, nranks, rank, &len, &off);
    dr_plan *plan = NULL;
    dr_status s = dr_plan_create(DR_DTYPE_FLOAT64, 2, gshape, 0, comm, len, 2, new_shape, 1, -1,
                                 &plan);
    dr_plan_destroy(plan);
    return s;
}

int main(int argc, char **argv) {
    int rank, nranks, failures = 0, all = 0, n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    while (n < MAX_COMMS && MPI_Comm_dup(MPI_COMM_WORLD, &comms[n]) == MPI_SUCCESS) n++;
    int limit_reached = n < MAX_COMMS, everywhere = 0;
    MPI_Allreduce(&limit_reached, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) {
        if (rank == 0) printf("no communicator limit within %d duplicates: skipped\n", MAX_COMMS);
        for (int i = 0; i < n; i++) MPI_Comm_free(&comms[i]);
        MPI_Finalize();
        return 77;
    }
    MPI_Comm last = comms[n - 1];
    MPI_Comm_set_errhandler(last, MPI_ERRORS_ARE_FATAL);
    dr_status s = plan_on(last, rank, nranks);
    if (s != DR_ERROR_MPI || !strstr(dr_last_error_message(), "MPI_Comm_dup")) {
        fprintf(stderr, "rank %d: after %d communicators: %s: %s\n", rank, n,
                dr_status_string(s), dr_last_error_message());
        failures++;
    }
    MPI_Errhandler handler;
    MPI_Comm_get_errhandler(last, &handler);
    if (handler != MPI_ERRORS_ARE_FATAL) {
        fprintf(stderr, "rank %d: the caller's error handler was not restored\n", rank);
        failures++;
    }
    MPI_Errhandler_free(&handler);
    for (int i = 0; i < n - 1; i++) MPI_Comm_free(&comms[i]);
    s = plan_on(last, rank, nranks);
    if (s != DR_SUCCESS) {
        fprintf(stderr, "rank %d: after freeing: %s\n", rank, dr_last_error_message());
        failures++;
    }
    MPI_Comm_free(&last);
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("communicator limit after %d duplicates; comm exhaustion test: %d failures\n", n,
               all);
    MPI_Finalize();
    return all != 0;
}
