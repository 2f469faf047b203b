/* How to move scattered runs between 2 ranks: the measurement behind the exchange's
 * choice of messages (docs/src/performance/analysis.md).
 *
 *   mpicc.mpich -O2 bench/datatypes.c -o datatypes && mpiexec.mpich -n 2 ./datatypes BLK ROWS
 *
 * Each rank holds ROWS rows of 2*BLK doubles, keeps one half of every row and sends the
 * other half to the other rank, which stores what it receives contiguously (the pattern
 * of a split change: scattered on the sending side, contiguous on the receiving side).
 * Variants, each the best of 8 runs (max over ranks):
 *   contiguous : baseline, memcpy of the kept half + MPI_Sendrecv of contiguous buffers
 *   vector     : one message with an MPI_Type_vector describing the scattered runs
 *   pack+send  : pack the runs into a buffer, then one contiguous message
 *   pipelined  : pack and send 2 MiB pieces, each posted as soon as it is packed
 *   per run    : one message per run, straight between the buffers
 * The kept half is copied run by run in every variant but the baseline. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CONTIGUOUS, VECTOR, PACK, PIPELINED, PER_RUN, VARIANTS };
static const char *names[VARIANTS] = {"contiguous", "vector", "pack+send", "pipelined", "per run"};

static long blk, rows;
static int rank, peer;
static double *in, *out, *packed;
static MPI_Datatype vec;

/* Input offset of row i's half that goes to the other rank (send) or stays (keep). */
static double *half(long i, int send) { return in + i * 2 * blk + ((rank == 0) == send ? blk : 0); }
static double *received(long i) { return out + rows * blk + i * blk; }

static void keep_rows(void) {
  for (long i = 0; i < rows; i++) memcpy(out + i * blk, half(i, 0), blk * 8);
}

static void pack_rows(long a, long b) {
  for (long i = a; i < b; i++) memcpy(packed + i * blk, half(i, 1), blk * 8);
}

static void run(int variant) {
  MPI_Request q[2], *qs;
  long chunk = (2 << 20) / (blk * 8) > 0 ? (2 << 20) / (blk * 8) : 1, n = 0;
  switch (variant) {
  case CONTIGUOUS:
    memcpy(out, in, rows * blk * 8);
    MPI_Sendrecv(packed, rows * blk, MPI_DOUBLE, peer, 0, received(0), rows * blk, MPI_DOUBLE, peer, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return;
  case VECTOR:
    MPI_Irecv(received(0), rows * blk, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(half(0, 1), 1, vec, peer, 1, MPI_COMM_WORLD, &q[1]);
    keep_rows();
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    return;
  case PACK:
    MPI_Irecv(received(0), rows * blk, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &q[0]);
    pack_rows(0, rows);
    MPI_Isend(packed, rows * blk, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &q[1]);
    keep_rows();
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    return;
  case PIPELINED:
    qs = malloc(2 * (rows / chunk + 1) * sizeof *qs);
    for (long a = 0; a < rows; a += chunk) {
      long b = a + chunk < rows ? a + chunk : rows;
      MPI_Irecv(received(a), (b - a) * blk, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &qs[n++]);
    }
    for (long a = 0; a < rows; a += chunk) {
      long b = a + chunk < rows ? a + chunk : rows;
      pack_rows(a, b);
      MPI_Isend(packed + a * blk, (b - a) * blk, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &qs[n++]);
    }
    keep_rows();
    MPI_Waitall(n, qs, MPI_STATUSES_IGNORE);
    free(qs);
    return;
  case PER_RUN:
    qs = malloc(2 * rows * sizeof *qs);
    for (long i = 0; i < rows; i++) MPI_Irecv(received(i), blk, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD, &qs[n++]);
    for (long i = 0; i < rows; i++) MPI_Isend(half(i, 1), blk, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD, &qs[n++]);
    keep_rows();
    MPI_Waitall(n, qs, MPI_STATUSES_IGNORE);
    free(qs);
    return;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  peer = 1 - rank;
  blk = argc > 1 ? atol(argv[1]) : 500;
  rows = argc > 2 ? atol(argv[2]) : 50000;
  in = malloc(rows * 2 * blk * 8);
  out = malloc(rows * 2 * blk * 8);
  packed = malloc(rows * blk * 8);
  for (long i = 0; i < rows * 2 * blk; i++) in[i] = (double)i;
  memset(out, 0, rows * 2 * blk * 8);
  memset(packed, 0, rows * blk * 8);
  MPI_Type_vector((int)rows, (int)blk, (int)(2 * blk), MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  double best[VARIANTS], worst[VARIANTS];
  for (int v = 0; v < VARIANTS; v++) best[v] = 1e30;
  for (int it = 0; it < 8; it++)
    for (int v = 0; v < VARIANTS; v++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      run(v);
      t = MPI_Wtime() - t;
      if (t < best[v]) best[v] = t;
    }
  MPI_Reduce(best, worst, VARIANTS, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("runs of %ld B, %ld runs, %.0f MiB sent per rank:", blk * 8, rows, rows * blk * 8 / 1048576.0);
    for (int v = 0; v < VARIANTS; v++)
      printf(" | %s %.1f ms (%.2fx)", names[v], worst[v] * 1e3, worst[v] / worst[CONTIGUOUS]);
    printf("\n");
  }
  MPI_Type_free(&vec);
  free(in);
  free(out);
  free(packed);
  MPI_Finalize();
  return 0;
}
