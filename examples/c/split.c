/* Split-changing example: reshape a (1000, 100, 10) array split along
 * dimension 0 into a (100, 10000) array split along dimension 1 (C order,
 * dimensions counted from 0), over all ranks of MPI_COMM_WORLD.
 *
 * Unlike the seed example, the split dimension changes, so this needs the
 * general exchange: each rank sends pieces of its rows to the ranks owning
 * the corresponding columns. Every element holds its global flat index
 * (int64), every received element is checked, and rank 0 prints the plan's
 * description and the timings.
 *
 *   mpiexec -n 4 ./split_c
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

    /* Input: (1000, 100, 10) split along 0 in balanced slabs of rows. */
    const int64_t gshape[3] = {1000, 100, 10};
    int64_t len, offset;
    CHECK(dr_balanced_slab(gshape[0], nranks, rank, &len, &offset));
    int64_t in_elems = len * 100 * 10;
    int64_t *in = malloc((size_t)(in_elems > 0 ? in_elems : 1) * sizeof *in);
    for (int64_t i = 0; i < in_elems; i++)
        in[i] = global_index(3, gshape, 0, len, offset, i);

    /* Output: (100, 10000) split along 1, balanced columns. */
    const int64_t new_gshape[2] = {100, 10000};
    dr_plan *plan = NULL;
    double t0 = MPI_Wtime();
    CHECK(dr_plan_create(DR_DTYPE_INT64, 3, gshape, 0, MPI_COMM_WORLD, len, 2, new_gshape, 1, -1,
                         &plan));
    double t_plan = MPI_Wtime() - t0;

    int64_t resolved[2], new_len, new_elems;
    CHECK(dr_plan_output(plan, resolved, &new_len, &new_elems));
    int64_t *out = malloc((size_t)(new_elems > 0 ? new_elems : 1) * sizeof *out);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    CHECK(dr_plan_execute(plan, in, out, new_elems));
    double t_exec = MPI_Wtime() - t0;

    /* Check every element: this rank holds columns [new_offset, new_offset + new_len). */
    int64_t new_offset, balanced_len, errors = 0;
    CHECK(dr_balanced_slab(resolved[1], nranks, rank, &balanced_len, &new_offset));
    if (balanced_len != new_len)
        errors++;
    for (int64_t i = 0; i < new_elems; i++)
        if (out[i] != global_index(2, resolved, 1, new_len, new_offset, i))
            errors++;

    double times[2] = {t_plan, t_exec}, max_times[2];
    MPI_Reduce(times, max_times, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int64_t total_errors = 0;
    MPI_Allreduce(&errors, &total_errors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    if (rank == 0) {
        char description[4096];
        dr_plan_stats stats;
        CHECK(dr_plan_describe(plan, description, sizeof description, NULL));
        CHECK(dr_plan_stats_get(plan, &stats));
        printf("(1000, 100, 10) split 0 -> (100, 10000) split 1 on %d rank(s)\n", nranks);
        printf("%s\n", description);
        /* The same numbers, for programs that want them rather than text. */
        printf("rank 0: %s path, %" PRId64 " B sent to %d peer(s), %" PRId64
               " B received from %d, %" PRId64 " B copied locally\n",
               stats.path == DR_PATH_LOCAL ? "local" : "exchange", stats.bytes_sent,
               stats.peers_sent, stats.bytes_received, stats.peers_received,
               stats.bytes_copied_locally);
        printf("plan %.6f s, execute %.6f s (max over ranks)\n", max_times[0], max_times[1]);
        printf("%s: %" PRId64 " wrong element(s)\n", total_errors ? "FAILED" : "OK",
               total_errors);
    }

    dr_plan_destroy(plan);
    free(in);
    free(out);
    MPI_Finalize();
    return total_errors ? 1 : 0;
}
