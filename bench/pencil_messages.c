/* How to move a pencil transpose's runs between pairs of ranks: the measurement behind
 * the exchange's messages (docs/src/performance/analysis.md).
 *
 *   mpicc.mpich -O2 bench/pencil_messages.c -o pencil_messages
 *   mpiexec.mpich -n P ./pencil_messages BLK RUNS      (P even: ranks 2k and 2k+1 pair up)
 *
 * Each rank keeps RUNS runs of BLK bytes and sends RUNS more, back to back in its input,
 * to its partner, which stores them at a stride of 2 BLK in its output (interleaved with
 * the runs it keeps): contiguous on the sending side, scattered on the receiving side, as
 * an x -> y pencil transpose. Variants, each the median of 9 runs of the max over ranks,
 * with completions polled by MPI_Testall and sched_yield (as the library does when the
 * node has more ranks than cores):
 *   bound      : memcpy of the kept bytes + MPI_Alltoallv of contiguous buffers
 *   per run    : one message per run, straight between the buffers (the library's
 *                message per joint run of at least 64 KiB)
 *   recv vector: one message per partner, received with an MPI_Type_vector
 *   send vector: the reverse pattern, sent with an MPI_Type_vector into a contiguous
 *                buffer
 *   slot rounds: rounds of 16 MiB received into a slot, then unpacked (the library's
 *                packed messages, for runs under 64 KiB)
 *   pack rounds: the reverse pattern in rounds of 16 MiB packed into a slot, then sent
 *   both rounds: runs scattered on both sides (stride 2 BLK in the input too), in rounds
 *                of 16 MiB packed into a slot, sent, received into a second slot and
 *                unpacked (the library's packed messages between two scattered boxes)
 * Every variant but the bound copies the kept runs one by one. */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BOUND, PER_RUN, RECV_VECTOR, SEND_VECTOR, SLOT_ROUNDS, PACK_ROUNDS, BOTH_ROUNDS, VARIANTS };
static const char *names[VARIANTS] = {"bound",       "per run",     "recv vector", "send vector",
                                      "slot rounds", "pack rounds", "both rounds"};
enum { REPEATS = 9, SLOT_BYTES = 16 << 20 };

static long blk, runs;
static int rank, size, partner;
static char *in, *out, *contiguous, *slot;
static MPI_Datatype strided;

/* The runs received (or, reversed, sent) at a stride of 2 blk, and those kept. */
static char *scattered(void) { return out + (rank < partner ? blk : 0); }
static char *kept(void) { return out + (rank < partner ? 0 : blk); }

static void wait_yielding(int n, MPI_Request *requests) {
  int done = 0;
  for (;;) {
    MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    if (done) return;
    sched_yield();
  }
}

static void keep_runs(void) {
  for (long i = 0; i < runs; i++) memcpy(kept() + i * 2 * blk, in + i * blk, blk);
}

static void bound(void) {
  int *counts = calloc(size, sizeof *counts), *displs = calloc(size, sizeof *displs);
  counts[partner] = (int)(runs * blk);
  memcpy(contiguous, in, runs * blk);
  MPI_Alltoallv(in + runs * blk, counts, displs, MPI_BYTE, out, counts, displs, MPI_BYTE,
                MPI_COMM_WORLD);
  free(counts);
  free(displs);
}

/* Rounds of at most SLOT_BYTES through the slot: received then unpacked, or (reversed)
 * packed then sent. */
static void slot_rounds(int reversed, MPI_Request *q) {
  long per = SLOT_BYTES / blk > 0 ? SLOT_BYTES / blk : 1;
  for (long i = 0; i < runs; i += per) {
    long n = i + per < runs ? per : runs - i;
    if (reversed) {
      MPI_Irecv(contiguous + i * blk, n * blk, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &q[0]);
      for (long k = 0; k < n; k++) memcpy(slot + k * blk, scattered() + (i + k) * 2 * blk, blk);
      MPI_Isend(slot, n * blk, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &q[1]);
    } else {
      MPI_Irecv(slot, n * blk, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &q[0]);
      MPI_Isend(in + (runs + i) * blk, n * blk, MPI_BYTE, partner, 5, MPI_COMM_WORLD, &q[1]);
    }
    if (i == 0) keep_runs();
    wait_yielding(2, q);
    if (!reversed)
      for (long k = 0; k < n; k++) memcpy(scattered() + (i + k) * 2 * blk, slot + k * blk, blk);
  }
}

/* Rounds of at most SLOT_BYTES, scattered on both sides: the input's runs at a stride of
 * 2 blk packed into the slot and sent, received into `contiguous`, then unpacked. */
static void both_rounds(MPI_Request *q) {
  long per = SLOT_BYTES / blk > 0 ? SLOT_BYTES / blk : 1;
  for (long i = 0; i < runs; i += per) {
    long n = i + per < runs ? per : runs - i;
    MPI_Irecv(contiguous, n * blk, MPI_BYTE, partner, 6, MPI_COMM_WORLD, &q[0]);
    for (long k = 0; k < n; k++) memcpy(slot + k * blk, in + blk + (i + k) * 2 * blk, blk);
    MPI_Isend(slot, n * blk, MPI_BYTE, partner, 6, MPI_COMM_WORLD, &q[1]);
    if (i == 0) keep_runs();
    wait_yielding(2, q);
    for (long k = 0; k < n; k++) memcpy(scattered() + (i + k) * 2 * blk, contiguous + k * blk, blk);
  }
}

static void run(int variant) {
  MPI_Request *q = malloc(2 * (runs + 1) * sizeof *q);
  int n = 0;
  char *sent = in + runs * blk;
  switch (variant) {
  case BOUND:
    bound();
    break;
  case PER_RUN:
    for (long i = 0; i < runs; i++)
      MPI_Irecv(scattered() + i * 2 * blk, blk, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &q[n++]);
    for (long i = 0; i < runs; i++)
      MPI_Isend(sent + i * blk, blk, MPI_BYTE, partner, 1, MPI_COMM_WORLD, &q[n++]);
    keep_runs();
    wait_yielding(n, q);
    break;
  case RECV_VECTOR:
    MPI_Irecv(scattered(), 1, strided, partner, 2, MPI_COMM_WORLD, &q[n++]);
    MPI_Isend(sent, runs * blk, MPI_BYTE, partner, 2, MPI_COMM_WORLD, &q[n++]);
    keep_runs();
    wait_yielding(n, q);
    break;
  case SEND_VECTOR:
    MPI_Irecv(contiguous, runs * blk, MPI_BYTE, partner, 3, MPI_COMM_WORLD, &q[n++]);
    MPI_Isend(scattered(), 1, strided, partner, 3, MPI_COMM_WORLD, &q[n++]);
    keep_runs();
    wait_yielding(n, q);
    break;
  case SLOT_ROUNDS:
  case PACK_ROUNDS:
    slot_rounds(variant == PACK_ROUNDS, q);
    break;
  case BOTH_ROUNDS:
    both_rounds(q);
    break;
  }
  free(q);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size % 2 != 0 || argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: mpiexec -n EVEN ./pencil_messages BLK RUNS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  partner = rank ^ 1;
  blk = atol(argv[1]);
  runs = atol(argv[2]);
  long slot_bytes = runs * blk < SLOT_BYTES ? runs * blk : SLOT_BYTES;
  in = malloc(2 * runs * blk);
  out = malloc(2 * runs * blk);
  contiguous = malloc(runs * blk);
  slot = malloc(slot_bytes);
  memset(in, 1, 2 * runs * blk);
  memset(out, 0, 2 * runs * blk);
  memset(contiguous, 0, runs * blk);
  memset(slot, 0, slot_bytes);
  MPI_Type_vector((int)runs, (int)blk, (int)(2 * blk), MPI_BYTE, &strided);
  MPI_Type_commit(&strided);
  double times[VARIANTS][REPEATS];
  for (int it = 0; it < REPEATS; it++)
    for (int v = 0; v < VARIANTS; v++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      run(v);
      t = MPI_Wtime() - t;
      MPI_Allreduce(&t, &times[v][it], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
  if (rank == 0) {
    printf("P=%d, runs of %ld B, %ld runs sent per rank:", size, blk, runs);
    double median[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
      qsort(times[v], REPEATS, sizeof(double), by_value);
      median[v] = times[v][REPEATS / 2];
      printf(" | %s %.1f ms (%.2fx)", names[v], median[v] * 1e3, median[v] / median[BOUND]);
    }
    printf("\n");
  }
  MPI_Type_free(&strided);
  free(in);
  free(out);
  free(contiguous);
  free(slot);
  MPI_Finalize();
  return 0;
}
