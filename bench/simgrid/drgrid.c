/* DistReshape's grid layouts against hand-written MPI under SimGrid SMPI (also builds
 * with a real mpicc).
 * usage: drgrid <pencils|bricks|fused> [reps] [n]
 *   pencils: (n, n, n) x-pencils -> y-pencils on a q x q grid (P = q*q; n default 512):
 *            x whole, y over grid axis 0, z over grid axis 1 -> y whole, x over grid axis 0.
 *   bricks:  (n, n, n) bricks on a c x c x c grid (P = c^3) -> x-pencils on the 2-D grid
 *            MPI_Dims_create gives (n default 512).
 *   fused:   three float64 fields x -> y pencils and a float32 scalar y -> x pencils (n default
 *            64), fused into one round (dr_fused_execute) against the batch of the three then
 *            the scalar, and against four executions one after another.
 * Baselines, in the same run: memcpy of the kept elements + MPI_Alltoallv over the world of
 * exactly the per-peer volumes (the boxes' intersections, computed here); for pencils also
 * MPI_Alltoallv on the sub-communicator of the ranks sharing the z block (2DECOMP&FFT's
 * transpose, without its packing, which SimGrid does not time); and the same messages by hand,
 * one MPI_Isend/MPI_Irecv per sharing pair, all at once (pairs). Times are max over ranks of
 * MPI_Wtime differences (simulated under SMPI), best of `reps`. */
#include <mpi.h>
#include <distreshape.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigalloc.h"

/* A layout of the (n, n, n) array: a grid and the grid axis splitting each array axis. */
typedef struct {
  int grid_ndims, grid[3], axis_grid[3];
} spec;

/* Balanced blocks, as the library's layouts are: its own dr_balanced_slab. */
static void slab(int64_t n, int64_t p, int64_t r, int64_t *len, int64_t *off) {
  dr_balanced_slab(n, (int32_t)p, (int32_t)r, len, off);
}

/* Rank `rank`'s box of the (n, n, n) array. */
static void box(const spec *s, int64_t n, int rank, int64_t off[3], int64_t len[3]) {
  for (int a = 0; a < 3; a++) {
    int g = s->axis_grid[a];
    if (g == DR_SPLIT_NONE) { off[a] = 0; len[a] = n; continue; }
    int stride = 1;
    for (int h = g + 1; h < s->grid_ndims; h++) stride *= s->grid[h];
    slab(n, s->grid[g], rank / stride % s->grid[g], &len[a], &off[a]);
  }
}

/* Elements rank `from`'s input box shares with rank `to`'s output box. */
static int64_t volume(const spec *in, const spec *out, int64_t n, int from, int to) {
  int64_t fo[3], fl[3], to_o[3], tl[3], v = 1;
  box(in, n, from, fo, fl);
  box(out, n, to, to_o, tl);
  for (int a = 0; a < 3; a++) {
    int64_t lo = fo[a] > to_o[a] ? fo[a] : to_o[a];
    int64_t hi = fo[a] + fl[a] < to_o[a] + tl[a] ? fo[a] + fl[a] : to_o[a] + tl[a];
    v *= hi > lo ? hi - lo : 0;
  }
  return v;
}

static double tmax(double t) { double m; MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); return m; }

static dr_layout *layout(const spec *s, int64_t n) {
  const int64_t shape[3] = {n, n, n};
  dr_layout *l;
  if (dr_layout_create(3, shape, s->grid_ndims, s->grid, s->axis_grid, &l) != DR_SUCCESS) {
    fprintf(stderr, "layout: %s\n", dr_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return l;
}

/* Best of `reps` of MPI_Alltoallv over `comm` with the counts of the ranks listed in
 * `members` (world ranks, in `comm`'s order), after a memcpy of `keep` elements. */
static double alltoallv(MPI_Comm comm, const int *members, int m, const spec *in, const spec *out,
                        int64_t n, int rank, int64_t keep, double *src, double *dst, int reps) {
  int *sc = calloc(m, sizeof(int)), *sd = calloc(m, sizeof(int)), *rc = calloc(m, sizeof(int)), *rd = calloc(m, sizeof(int));
  int64_t so = 0, ro = 0;
  for (int i = 0; i < m; i++) {
    int q = members[i];
    int64_t s = q == rank ? 0 : volume(in, out, n, rank, q), r = q == rank ? 0 : volume(in, out, n, q, rank);
    sc[i] = (int)s; sd[i] = (int)so; so += s;
    rc[i] = (int)r; rd[i] = (int)ro; ro += r;
  }
  double best = 1e30;
  for (int it = 0; it < reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    memcpy(dst, src, (size_t)keep * 8);
    MPI_Alltoallv(src, sc, sd, MPI_DOUBLE, dst, rc, rd, MPI_DOUBLE, comm);
    double t = tmax(MPI_Wtime() - t0);
    if (t < best) best = t;
  }
  free(sc); free(sd); free(rc); free(rd);
  return best;
}

/* Best of `reps` of the messages written by hand: a memcpy of `keep` elements, then one
 * MPI_Irecv and one MPI_Isend per rank this one shares elements with (the same volumes as
 * the plan's, from and into contiguous buffers), all posted at once and completed by one
 * MPI_Waitall. Unlike MPI_Alltoallv it touches no empty pair, so SMPI simulates it at
 * P = 512 and beyond. */
static double pairs(const spec *in, const spec *out, int64_t n, int rank, int p, int64_t keep,
                    double *src, double *dst, int reps) {
  MPI_Request *req = malloc((size_t)2 * p * sizeof(MPI_Request));
  double best = 1e30;
  for (int it = 0; it < reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    memcpy(dst, src, (size_t)keep * 8);
    int nreq = 0;
    int64_t so = 0, ro = 0;
    for (int q = 0; q < p; q++) {
      int64_t r = q == rank ? 0 : volume(in, out, n, q, rank);
      if (r > 0) MPI_Irecv(dst + ro, (int)r, MPI_DOUBLE, q, 7, MPI_COMM_WORLD, &req[nreq++]);
      ro += r;
    }
    for (int q = 0; q < p; q++) {
      int64_t v = q == rank ? 0 : volume(in, out, n, rank, q);
      if (v > 0) MPI_Isend(src + so, (int)v, MPI_DOUBLE, q, 7, MPI_COMM_WORLD, &req[nreq++]);
      so += v;
    }
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    double t = tmax(MPI_Wtime() - t0);
    if (t < best) best = t;
  }
  free(req);
  return best;
}

static void must(dr_status s, int rank, const char *what) {
  if (s != DR_SUCCESS) { fprintf(stderr, "rank %d: %s: %s\n", rank, what, dr_last_error_message()); MPI_Abort(MPI_COMM_WORLD, 1); }
}

/* Best of `reps` of `run(arg)` between barriers, the max over ranks. */
static double best_of(int reps, void (*run)(void *), void *arg) {
  double best = 1e30;
  for (int it = 0; it < reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    run(arg);
    double t = tmax(MPI_Wtime() - t0);
    if (t < best) best = t;
  }
  return best;
}

/* The fused case's plans and buffers: fields 0-2 through `xy`, field 3 (the scalar) through `yx`. */
typedef struct {
  dr_plan *xy, *yx;
  dr_fused *fused;
  const void *in[4];
  void *out[4];
  int64_t out_elems[2];
  int rank;
} fused_case;

static void run_fused(void *arg) {
  fused_case *c = arg;
  must(dr_fused_execute(c->fused, c->in, c->out), c->rank, "fused");
}

static void run_batch_then_scalar(void *arg) {
  fused_case *c = arg;
  must(dr_plan_execute_batch(c->xy, 3, c->in, c->out, c->out_elems[0]), c->rank, "batch");
  must(dr_plan_execute(c->yx, c->in[3], c->out[3], c->out_elems[1]), c->rank, "scalar");
}

static void run_one_by_one(void *arg) {
  fused_case *c = arg;
  for (int f = 0; f < 3; f++) must(dr_plan_execute(c->xy, c->in[f], c->out[f], c->out_elems[0]), c->rank, "field");
  must(dr_plan_execute(c->yx, c->in[3], c->out[3], c->out_elems[1]), c->rank, "scalar");
}

/* Three float64 fields x -> y and a float32 scalar y -> x, fused, batched, one by one. */
static int fused(int rank, int p, int reps, int64_t n) {
  int d2[2] = {0, 0};
  MPI_Dims_create(p, 2, d2);
  spec x = {2, {d2[0], d2[1], 0}, {DR_SPLIT_NONE, 0, 1}};
  spec y = {2, {d2[0], d2[1], 0}, {0, DR_SPLIT_NONE, 1}};
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  dr_layout *lx = layout(&x, n), *ly = layout(&y, n);
  fused_case c = {.rank = rank};
  must(dr_plan_create_layouts(DR_DTYPE_FLOAT64, lx, ly, comm, &c.xy), rank, "plan x -> y");
  must(dr_plan_create_layouts(DR_DTYPE_FLOAT32, ly, lx, comm, &c.yx), rank, "plan y -> x");
  const dr_plan *plans[4] = {c.xy, c.xy, c.xy, c.yx};
  must(dr_fused_create(4, plans, &c.fused), rank, "fused");
  int64_t in_elems[2], off[3], len[3];
  dr_plan_output(c.xy, NULL, NULL, &c.out_elems[0]);
  dr_plan_output(c.yx, NULL, NULL, &c.out_elems[1]);
  for (int s = 0; s < 2; s++) {
    dr_plan_input_box(s ? c.yx : c.xy, off, len);
    in_elems[s] = len[0] * len[1] * len[2];
  }
  for (int f = 0; f < 4; f++) {
    int s = f == 3, size = s ? 4 : 8;
    void *in = calloc((size_t)in_elems[s] + 1, (size_t)size);
    c.in[f] = in;
    c.out[f] = calloc((size_t)c.out_elems[s] + 1, (size_t)size);
  }
  double tf = best_of(reps, run_fused, &c), tb = best_of(reps, run_batch_then_scalar, &c),
         to = best_of(reps, run_one_by_one, &c);
  if (rank == 0)
    printf("RESULT case=fused P=%d n=%lld fused_s=%.6e batch_then_scalar_s=%.6e one_by_one_s=%.6e "
           "ratio_batch=%.3f ratio_one_by_one=%.3f\n",
           p, (long long)n, tf, tb, to, tf / tb, tf / to);
  dr_fused_destroy(c.fused);
  dr_plan_destroy(c.xy);
  dr_plan_destroy(c.yx);
  dr_layout_destroy(lx);
  dr_layout_destroy(ly);
  for (int f = 0; f < 4; f++) { free((void *)c.in[f]); free(c.out[f]); }
  MPI_Comm_free(&comm);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const char *cas = argc > 1 ? argv[1] : "pencils";
  int reps = argc > 2 ? atoi(argv[2]) : 2;
  if (strcmp(cas, "fused") == 0) {
    fused(rank, p, reps, argc > 3 ? atoll(argv[3]) : 64);
    MPI_Finalize();
    return 0;
  }
  int64_t n = argc > 3 ? atoll(argv[3]) : 512;
  int pencils = strcmp(cas, "pencils") == 0;
  int d2[2] = {0, 0}, d3[3] = {0, 0, 0};
  MPI_Dims_create(p, 2, d2);
  MPI_Dims_create(p, 3, d3);
  spec x = {2, {d2[0], d2[1], 0}, {DR_SPLIT_NONE, 0, 1}};
  spec y = {2, {d2[0], d2[1], 0}, {0, DR_SPLIT_NONE, 1}};
  spec bricks = {3, {d3[0], d3[1], d3[2]}, {0, 1, 2}};
  const spec *in = pencils ? &x : &bricks, *out = pencils ? &y : &x;

  /* SMPI keeps one MPI_COMM_WORLD object for all simulated ranks: plan on a duplicate. */
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  dr_layout *from = layout(in, n), *to = layout(out, n);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  dr_plan *plan;
  dr_status s = dr_plan_create_layouts(DR_DTYPE_FLOAT64, from, to, comm, &plan);
  double tplan = tmax(MPI_Wtime() - t0);
  if (s != DR_SUCCESS) { fprintf(stderr, "rank %d: plan: %s\n", rank, dr_last_error_message()); MPI_Abort(MPI_COMM_WORLD, 1); }
  int64_t in_off[3], in_len[3], in_elems, out_elems;
  dr_plan_input_box(plan, in_off, in_len);
  in_elems = in_len[0] * in_len[1] * in_len[2];
  dr_plan_output(plan, NULL, NULL, &out_elems);
  dr_plan_stats st;
  dr_plan_stats_get(plan, &st);
  double *src = BIGALLOC((size_t)(in_elems + 1) * 8), *dst = BIGALLOC((size_t)(out_elems + 1) * 8);
  memset(src, 1, (size_t)in_elems * 8);
  memset(dst, 0, (size_t)out_elems * 8);

  double tdr = 1e30;
  for (int it = 0; it < reps; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    s = dr_plan_execute(plan, src, dst, out_elems);
    double t = tmax(MPI_Wtime() - t0);
    if (s != DR_SUCCESS) { fprintf(stderr, "rank %d: execute: %s\n", rank, dr_last_error_message()); MPI_Abort(MPI_COMM_WORLD, 1); }
    if (t < tdr) tdr = t;
  }
  int64_t keep = volume(in, out, n, rank, rank);
  int *world = malloc((size_t)p * sizeof(int));
  for (int q = 0; q < p; q++) world[q] = q;
  /* DRGRID_WORLD=0 leaves out the world MPI_Alltoallv: SMPI simulates its P * P pairs (most of
   * them empty for a pencil transpose), which dominates the simulation's real time at P = 1024. */
  const char *world_env = getenv("DRGRID_WORLD");
  int with_world = !(world_env && strcmp(world_env, "0") == 0);
  double ta2a = with_world ? alltoallv(MPI_COMM_WORLD, world, p, in, out, n, rank, keep, src, dst, reps) : -1;
  double tpairs = pairs(in, out, n, rank, p, keep, src, dst, reps);
  /* 2DECOMP&FFT's transpose: x -> y moves data only among the ranks of one z block
   * (the same coordinate along grid axis 1), on their own communicator. */
  double tsub = -1;
  if (pencils) {
    int zc = rank % d2[1];
    MPI_Comm col;
    MPI_Comm_split(MPI_COMM_WORLD, zc, rank, &col);
    int *members = malloc((size_t)d2[0] * sizeof(int));
    for (int i = 0; i < d2[0]; i++) members[i] = i * d2[1] + zc;
    tsub = alltoallv(col, members, d2[0], in, out, n, rank, keep, src, dst, reps);
    free(members);
    MPI_Comm_free(&col);
  }
  long long mine[2] = {st.peers_sent, st.bytes_sent}, mx[2];
  MPI_Allreduce(mine, mx, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf("RESULT case=%s P=%d n=%lld grid_in=%dx%dx%d plan_s=%.6e dr_exec_s=%.6e a2a_s=%.6e ratio=%.3f "
           "sub_a2a_s=%.6e ratio_sub=%.3f pairs_s=%.6e ratio_pairs=%.3f peers_sent_max=%lld bytes_sent_max=%lld\n",
           cas, p, (long long)n, in->grid[0], in->grid[1], in->grid_ndims == 3 ? in->grid[2] : 1, tplan, tdr,
           ta2a, ta2a > 0 ? tdr / ta2a : -1.0, tsub, tsub > 0 ? tdr / tsub : -1.0, tpairs, tdr / tpairs,
           mx[0], mx[1]);
  dr_plan_destroy(plan);
  dr_layout_destroy(from);
  dr_layout_destroy(to);
  MPI_Comm_free(&comm);
  BIGFREE(src); BIGFREE(dst);
  free(world);
  MPI_Finalize();
  return 0;
}
