/* DistReshape vs raw MPI_Alltoallv under SimGrid SMPI (also builds with a real mpicc).
 * usage: drsim <seed|split> [reps] [n]
 *   seed : (10, n, 10) split 1 -> (10, -1) split 1, balanced input (nothing moves); n default 1000000
 *   split: (n, n, 64) split 0 -> (n, n, 64) split 1 (exchange path); n default 1024
 * Baseline: memcpy of the elements that stay + MPI_Alltoallv of exactly the per-peer volumes.
 * Prints rank 0's summary; times are max over ranks of MPI_Wtime differences (simulated under SMPI). */
#include <mpi.h>
#include <distreshape.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigalloc.h"

/* Balanced blocks, as the library's layouts are: its own dr_balanced_slab. */
static void slab(int64_t n, int64_t p, int64_t r, int64_t *len, int64_t *off) {
  dr_balanced_slab(n, (int32_t)p, (int32_t)r, len, off);
}

/* Elements rank `from` sends to rank `to` (balanced input and output).
   seed: input rows [o, o+l) of axis 1 of (10, n, 10) are, in each of the 10 outer rows,
   the flat range [10 o, 10 (o+l)) of the output's axis 1 (extent 10 n), where `to`
   holds its balanced slab. split: input rows of axis 0 of (n, n, 64) times the
   output's columns of axis 1, 64 elements each. */
static int64_t volume(int seed, int64_t n, int p, int from, int to) {
  int64_t lf, of, lt, ot;
  slab(n, p, from, &lf, &of);
  if (!seed) { slab(n, p, to, &lt, &ot); return lf * lt * 64; }
  slab(10 * n, p, to, &lt, &ot);
  int64_t lo = 10 * of > ot ? 10 * of : ot, hi = 10 * (of + lf) < ot + lt ? 10 * (of + lf) : ot + lt;
  return hi > lo ? 10 * (hi - lo) : 0;
}

static double tmax(double t, MPI_Comm c) { double m; MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, c); return m; }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const char *cas = argc > 1 ? argv[1] : "split";
  int reps = argc > 2 ? atoi(argv[2]) : 2;
  int seed = strcmp(cas, "seed") == 0;
  int64_t n = argc > 3 ? atoll(argv[3]) : (seed ? 1000000 : 1024);
  int64_t g[3], ng[3]; int nd, nnd, split, nsplit;
  if (seed) { g[0] = 10; g[1] = n; g[2] = 10; nd = 3; split = 1; ng[0] = 10; ng[1] = -1; nnd = 2; nsplit = 1; }
  else { g[0] = n; g[1] = n; g[2] = 64; nd = 3; split = 0; ng[0] = n; ng[1] = n; ng[2] = 64; nnd = 3; nsplit = 1; }
  int64_t len, off, inner = 1;
  slab(g[split], p, rank, &len, &off);
  for (int i = split + 1; i < nd; i++) inner *= g[i];
  int64_t in_elems = len * inner * (split == 1 ? g[0] : 1);
  /* seed: local slab (10, len, 10) = 10*len*10; split: (len, n, 64) */
  if (seed) in_elems = 10 * len * 10;

  /* SMPI keeps one MPI_COMM_WORLD object, attributes included, for all simulated ranks, so
   * the library's per-communicator cache would be shared between them: plan on a duplicate
   * (each rank gets its own object). */
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  dr_plan *plan;
  dr_status s = dr_plan_create(DR_DTYPE_FLOAT64, nd, g, split, comm, len, nnd, ng, nsplit, -1, &plan);
  double tplan = tmax(MPI_Wtime() - t0, MPI_COMM_WORLD);
  if (s != DR_SUCCESS) { fprintf(stderr, "rank %d: plan: %s\n", rank, dr_last_error_message()); MPI_Abort(MPI_COMM_WORLD, 1); }
  int64_t rshape[3], nlen, nelems;
  dr_plan_output(plan, rshape, &nlen, &nelems);
  dr_plan_stats st; dr_plan_stats_get(plan, &st);
  char desc[512]; dr_plan_describe(plan, desc, sizeof desc, NULL);

  size_t inb = (size_t)in_elems * 8, outb = (size_t)nelems * 8;
  double *in = BIGALLOC(inb ? inb : 8), *out = BIGALLOC(outb ? outb : 8);
  memset(in, 1, inb); memset(out, 0, outb);

  /* baseline volumes (elements): exactly what the plan moves between each pair */
  int *sc = calloc(p, sizeof(int)), *sd = calloc(p, sizeof(int)), *rc = calloc(p, sizeof(int)), *rd = calloc(p, sizeof(int));
  int64_t keep = 0, so = 0, ro = 0;
  for (int q = 0; q < p; q++) {
    int64_t sendq = volume(seed, n, p, rank, q), recvq = volume(seed, n, p, q, rank);
    if (q == rank) { keep = sendq; sendq = recvq = 0; }
    sc[q] = (int)sendq; sd[q] = (int)so; so += sendq;
    rc[q] = (int)recvq; rd[q] = (int)ro; ro += recvq;
  }
  long long mine[4] = {st.bytes_sent, st.peers_sent, st.peers_received, 0}, tot[4], mx[4];
  long long bsent = 0; for (int q = 0; q < p; q++) bsent += (long long)sc[q] * 8;
  mine[3] = bsent;
  MPI_Allreduce(mine, tot, 4, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(mine, mx, 4, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);

  double tdr_first = 0, tdr = 1e30, ta2a_first = 0, ta2a = 1e30;
  for (int it = 0; it < reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    s = dr_plan_execute(plan, in, out, nelems);
    double t = tmax(MPI_Wtime() - t0, MPI_COMM_WORLD);
    if (s != DR_SUCCESS) { fprintf(stderr, "rank %d: execute: %s\n", rank, dr_last_error_message()); MPI_Abort(MPI_COMM_WORLD, 1); }
    if (it == 0) tdr_first = t;
    if (t < tdr) tdr = t;
  }
  for (int it = 0; it < reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    /* the kept elements: a memcpy of that many bytes (its position is irrelevant to the cost) */
    memcpy(out, in, (size_t)keep * 8);
    MPI_Alltoallv(in, sc, sd, MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, MPI_COMM_WORLD);
    double t = tmax(MPI_Wtime() - t0, MPI_COMM_WORLD);
    if (it == 0) ta2a_first = t;
    if (t < ta2a) ta2a = t;
  }
  /* Diagnostics (only with DRSIM_DIAG set; slow to simulate at 128 ranks): the same
     per-peer messages as hand-written Irecv/Isend + Waitsome (DRSIM_DIAG=waitall: Waitall), peers in
     ascending rank order (as DistReshape did before its pairwise schedule) or shifted ((rank+i)%p, as pairwise all-to-alls). */
  int diag = getenv("DRSIM_DIAG") != NULL, waitall = diag && strcmp(getenv("DRSIM_DIAG"), "waitall") == 0;
  double tman[2] = {1e30, 1e30};
  MPI_Request *rq = malloc(2 * (size_t)p * sizeof(MPI_Request)); int *idx = malloc(2 * (size_t)p * sizeof(int));
  for (int shifted = 0; shifted < 2 * diag; shifted++)
    for (int it = 0; it < reps; it++) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      int nr = 0;
      for (int i = 0; i < p; i++) { int q = shifted ? (rank + p - i) % p : i; if (rc[q]) MPI_Irecv((char*)out + (size_t)rd[q] * 8, rc[q], MPI_DOUBLE, q, 5, MPI_COMM_WORLD, &rq[nr++]); }
      for (int i = 0; i < p; i++) { int q = shifted ? (rank + i) % p : i; if (sc[q]) MPI_Isend((char*)in + (size_t)sd[q] * 8, sc[q], MPI_DOUBLE, q, 5, MPI_COMM_WORLD, &rq[nr++]); }
      memcpy(out, in, (size_t)keep * 8);
      if (waitall) MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE); else {
      int left = nr, got;
      while (left > 0) { MPI_Waitsome(nr, rq, &got, idx, MPI_STATUSES_IGNORE); left -= got; } }
      double t = tmax(MPI_Wtime() - t0, MPI_COMM_WORLD);
      if (t < tman[shifted]) tman[shifted] = t;
    }
  /* Diagnostic: pairwise schedule, as large-message all-to-alls do: round k exchanges with
     (rank+k)%p and (rank-k+p)%p, `win` rounds in flight at a time (win=1: one peer at a time). */
  double tpair[3] = {1e30, 1e30, 1e30}; int wins[3] = {16, 32, 64};
  for (int w = 0; w < 3 * diag; w++)
    for (int it = 0; it < reps; it++) {
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      memcpy(out, in, (size_t)keep * 8);
      for (int k0 = 1; k0 < p; k0 += wins[w]) {
        int nr = 0;
        for (int k = k0; k < p && k < k0 + wins[w]; k++) {
          int to = (rank + k) % p, from = (rank - k + p) % p;
          if (rc[from]) MPI_Irecv((char*)out + (size_t)rd[from] * 8, rc[from], MPI_DOUBLE, from, 6, MPI_COMM_WORLD, &rq[nr++]);
          if (sc[to]) MPI_Isend((char*)in + (size_t)sd[to] * 8, sc[to], MPI_DOUBLE, to, 6, MPI_COMM_WORLD, &rq[nr++]);
        }
        MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
      }
      double t = tmax(MPI_Wtime() - t0, MPI_COMM_WORLD);
      if (t < tpair[w]) tpair[w] = t;
    }
  free(rq); free(idx);
  if (rank == 0 && diag) {
    printf("MANUAL case=%s P=%d completion=%s ascending_s=%.6e shifted_s=%.6e\n", cas, p, waitall ? "waitall" : "waitsome", tman[0], tman[1]);
    printf("PAIRWISE case=%s P=%d window%d_s=%.6e window%d_s=%.6e window%d_s=%.6e\n", cas, p, wins[0], tpair[0], wins[1], tpair[1], wins[2], tpair[2]);
  }
  if (rank == 0) {
    printf("RESULT case=%s P=%d n=%lld path=%s plan_s=%.6e dr_exec_s=%.6e dr_first_s=%.6e a2a_s=%.6e a2a_first_s=%.6e ratio=%.3f "
           "bytes_sent_total=%lld bytes_sent_max=%lld a2a_bytes_total=%lld peers_sent_max=%lld peers_recv_max=%lld\n",
           cas, p, (long long)n, st.path == DR_PATH_LOCAL ? "local" : "exchange", tplan, tdr, tdr_first, ta2a, ta2a_first,
           ta2a > 0 ? tdr / ta2a : -1.0, tot[0], mx[0], tot[3], mx[1], mx[2]);
    printf("DESCRIBE rank0: %s\n", desc);
  }
  dr_plan_destroy(plan);
  MPI_Comm_free(&comm);
  BIGFREE(in); BIGFREE(out);
  free(sc); free(sd); free(rc); free(rd);
  MPI_Finalize();
  return 0;
}
