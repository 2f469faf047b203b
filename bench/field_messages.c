/* How a batch's message of K = 3 fields in separate buffers should travel: the
 * measurement behind MessageLimits::field_message_bytes
 * (docs/src/performance/grids.md, "Batches").
 *
 *   mpicc.mpich -O2 bench/field_messages.c -o field_messages
 *   mpiexec.mpich -n 2 ./field_messages      (or -n 4: ranks exchange in pairs)
 *
 * Each rank exchanges 2 MiB per field with its partner (rank ^ 1), in messages of
 * S bytes per field (4 KiB to 2 MiB), contiguous at both ends. Variants, each the
 * mean of 20 runs after 3 warm-ups (max over ranks), all measured in one run:
 *   three rounds : one field after another, each a round of its messages
 *                  completed before the next (three executions, no agreement)
 *   hindexed     : one round, each message one MPI_Type_create_hindexed_block
 *                  datatype over the K fields' S bytes (made, committed and freed
 *                  per message, as the exchange does)
 *   per field    : one round, each message K contiguous messages, one per field
 * Printed: the times and each round's ratio to three rounds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K = 3, REPEAT = 20, WARMUP = 3, VARIANTS = 3 };
static const size_t FIELD_BYTES = 2 << 20;

static char *in[K], *out[K];
static MPI_Request *requests;
static int peer;

/* One round of `m` messages of `s` bytes per field, of the fields [first, last). */
static void plain_round(size_t s, int m, int first, int last)
{
    int n = 0;
    for (int i = 0; i < m; i++)
        for (int f = first; f < last; f++) {
            MPI_Irecv(out[f] + i * s, (int)s, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &requests[n++]);
            MPI_Isend(in[f] + i * s, (int)s, MPI_BYTE, peer, 0, MPI_COMM_WORLD, &requests[n++]);
        }
    MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
}

/* The datatype of the K fields' `s` bytes at `offset` in `buffers`, from buffers[0]. */
static MPI_Datatype over_fields(char **buffers, size_t offset, size_t s)
{
    MPI_Aint at[K];
    for (int f = 0; f < K; f++) at[f] = (MPI_Aint)(buffers[f] + offset) - (MPI_Aint)(buffers[0] + offset);
    MPI_Datatype type;
    MPI_Type_create_hindexed_block(K, (int)s, at, MPI_BYTE, &type);
    MPI_Type_commit(&type);
    return type;
}

static void hindexed_round(size_t s, int m)
{
    int n = 0;
    for (int i = 0; i < m; i++) {
        MPI_Datatype to = over_fields(out, i * s, s), from = over_fields(in, i * s, s);
        MPI_Irecv(out[0] + i * s, 1, to, peer, 0, MPI_COMM_WORLD, &requests[n++]);
        MPI_Isend(in[0] + i * s, 1, from, peer, 0, MPI_COMM_WORLD, &requests[n++]);
        MPI_Type_free(&to);
        MPI_Type_free(&from);
    }
    MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
}

static void run(int variant, size_t s, int m)
{
    switch (variant) {
    case 0:
        for (int f = 0; f < K; f++) plain_round(s, m, f, f + 1);
        break;
    case 1: hindexed_round(s, m); break;
    default: plain_round(s, m, 0, K);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (size % 2) MPI_Abort(MPI_COMM_WORLD, 1);
    requests = malloc(sizeof(MPI_Request) * 2 * K * (FIELD_BYTES >> 12));
    for (int f = 0; f < K; f++) {
        in[f] = malloc(FIELD_BYTES);
        out[f] = malloc(FIELD_BYTES);
        memset(in[f], f + 1, FIELD_BYTES);
    }
    for (size_t s = 4 << 10; s <= FIELD_BYTES; s *= 2) {
        int m = (int)(FIELD_BYTES / s);
        double t[VARIANTS] = {0};
        for (int r = 0; r < WARMUP + REPEAT; r++)
            for (int v = 0; v < VARIANTS; v++) {
                for (int f = 0; f < K; f++) memset(out[f], 0, FIELD_BYTES);
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                run(v, s, m);
                double dt = MPI_Wtime() - t0, slowest;
                MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (r >= WARMUP) t[v] += slowest / REPEAT;
                for (int f = 0; f < K; f++)
                    if (out[f][0] != f + 1 || out[f][FIELD_BYTES - 1] != f + 1) MPI_Abort(MPI_COMM_WORLD, 2);
            }
        if (rank == 0)
            printf("P = %d, %7zu B x %3d per field: three rounds %.3f ms, hindexed %.3f ms (%.2f), "
                   "per field %.3f ms (%.2f)\n",
                   size, s, m, t[0] * 1e3, t[1] * 1e3, t[1] / t[0], t[2] * 1e3, t[2] / t[0]);
    }
    for (int f = 0; f < K; f++) {
        free(in[f]);
        free(out[f]);
    }
    free(requests);
    MPI_Finalize();
    return 0;
}
