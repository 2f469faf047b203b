/* Seed example: reshape a (10, N, 10) array split along dimension 1 into a
 * (10, -1) = (10, 10*N) array split along dimension 1, over all ranks of
 * MPI_COMM_WORLD (C order, dimensions counted from 0).
 *
 * Every element holds its global flat (row-major) index, so after the
 * reshape each rank can check every element it received. Rank 0 prints the
 * plan's description, its traffic and the timings.
 *
 *   mpiexec -n 4 ./seed_c [N]        (N defaults to 100000)
 */
#include <distreshape.h>
#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Every distreshape call returns the same status on every rank, so all ranks
 * take this branch together. */
#define CHECK(call)                                                              \
    do {                                                                         \
        dr_status s_ = (call);                                                   \
        if (s_ != DR_SUCCESS) {                                                  \
            fprintf(stderr, "%s failed: %s: %s\n", #call, dr_status_string(s_),  \
                    dr_last_error_message());                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                        \
        }                                                                        \
    } while (0)

/* Global flat index of the local element number `i` (row-major) of a rank
 * holding rows [offset, offset + local_len) of dimension `split`. */
static int64_t global_index(int ndims, const int64_t *gshape, int split, int64_t local_len,
                            int64_t offset, int64_t i)
{
    int64_t index = 0, stride = 1;
    for (int d = ndims - 1; d >= 0; d--) {
        int64_t n = d == split ? local_len : gshape[d];
        int64_t coord = i % n + (d == split ? offset : 0);
        i /= n;
        index += coord * stride;
        stride *= gshape[d];
    }
    return index;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int64_t n = argc > 1 ? atoll(argv[1]) : 100000;

    /* Input: (10, n, 10) split along 1, balanced slabs of dimension 1. */
    const int64_t gshape[3] = {10, n, 10};
    int64_t len, offset;
    CHECK(dr_balanced_slab(n, nranks, rank, &len, &offset));
    int64_t in_elems = 10 * len * 10;
    double *in = malloc((size_t)(in_elems > 0 ? in_elems : 1) * sizeof *in);
    for (int64_t i = 0; i < in_elems; i++)
        in[i] = (double)global_index(3, gshape, 1, len, offset, i);

    /* Plan the reshape to (10, -1) split along 1 (balanced output). */
    const int64_t new_gshape[2] = {10, -1};
    dr_plan *plan = NULL;
    double t0 = MPI_Wtime();
    CHECK(dr_plan_create(DR_DTYPE_FLOAT64, 3, gshape, 1, MPI_COMM_WORLD, len, 2, new_gshape, 1,
                         -1, &plan));
    double t_plan = MPI_Wtime() - t0;

    /* The plan tells each rank how much output it gets. */
    int64_t resolved[2], new_len, new_elems;
    CHECK(dr_plan_output(plan, resolved, &new_len, &new_elems));
    double *out = malloc((size_t)(new_elems > 0 ? new_elems : 1) * sizeof *out);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    CHECK(dr_plan_execute(plan, in, out, new_elems));
    double t_exec = MPI_Wtime() - t0;

    /* Check every element against its global index in the new shape. */
    int64_t new_offset, balanced_len, errors = 0;
    CHECK(dr_balanced_slab(resolved[1], nranks, rank, &balanced_len, &new_offset));
    if (balanced_len != new_len)
        errors++;
    for (int64_t i = 0; i < new_elems; i++)
        if (out[i] != (double)global_index(2, resolved, 1, new_len, new_offset, i))
            errors++;

    /* The same reshape in one call, without keeping a plan. */
    t0 = MPI_Wtime();
    int64_t written = 0;
    CHECK(dr_reshape(in, DR_DTYPE_FLOAT64, 3, gshape, 1, MPI_COMM_WORLD, len, 2, new_gshape, 1,
                     out, new_elems, &written));
    double t_oneshot = MPI_Wtime() - t0;
    if (written != new_elems)
        errors++;
    for (int64_t i = 0; i < written; i++)
        if (out[i] != (double)global_index(2, resolved, 1, new_len, new_offset, i))
            errors++;

    double times[3] = {t_plan, t_exec, t_oneshot}, max_times[3];
    MPI_Reduce(times, max_times, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int64_t total_errors = 0;
    MPI_Allreduce(&errors, &total_errors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    if (rank == 0) {
        char description[4096];
        CHECK(dr_plan_describe(plan, description, sizeof description, NULL));
        printf("distreshape %s on %d rank(s)\n", dr_version(), nranks);
        printf("(10, %" PRId64 ", 10) split 1 -> (10, %" PRId64 ") split 1\n", n, resolved[1]);
        printf("%s\n", description);
        printf("plan %.6f s, execute %.6f s, one-shot dr_reshape %.6f s (max over ranks)\n",
               max_times[0], max_times[1], max_times[2]);
        printf("%s: %" PRId64 " wrong element(s)\n", total_errors ? "FAILED" : "OK",
               total_errors);
    }

    dr_plan_destroy(plan);
    free(in);
    free(out);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
