/* Faults on one rank only: an allocation failure (through the test hook's limit) and
 * a panic inside the library must give the same status on every rank, never an abort
 * or a hang, and leave the communicator usable. An MPI failure in the middle of an
 * exchange is abandoned cleanly; so is a panic there, and the next execution is
 * whole, for a plan and for fused plans; so is a datatype MPI refuses, whose error
 * MPI raises on MPI_COMM_WORLD's handler. Several plans alive at once on one
 * communicator, executed in any order, must each give the right result. */
#include "harness.h"
#include "test_hooks.h"

static int rank, size;

/* Same status on every rank? */
static int agreed(dr_status s) {
  int mine = (int)s, lo, hi;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* (rows, cols) split 0 -> (cols, rows) split new_split, values checked. */
struct transpose_like {
  int64_t gshape[2], new_shape[2];
  int new_split;
  double *in, *out;
  int64_t in_len, in_off, capacity;
  dr_plan *plan;
};

static dr_status make(struct transpose_like *t, int64_t rows, int64_t cols, int new_split) {
  t->gshape[0] = rows, t->gshape[1] = cols, t->new_shape[0] = cols, t->new_shape[1] = rows;
  t->new_split = new_split;
  dr_balanced_slab(rows, size, rank, &t->in_len, &t->in_off);
  t->capacity = rows * cols;
  t->in = malloc(sizeof(double) * (size_t)(t->in_len * cols + 1));
  t->out = malloc(sizeof(double) * (size_t)(t->capacity + 1));
  for (int64_t i = 0; i < t->in_len * cols; i++) t->in[i] = (double)(t->in_off * cols + i);
  t->plan = NULL;
  return dr_plan_create(DR_DTYPE_FLOAT64, 2, t->gshape, 0, MPI_COMM_WORLD, t->in_len, 2,
                        t->new_shape, new_split, -1, &t->plan);
}

/* The output is the same flat sequence, balanced along new_split. */
static int correct(const struct transpose_like *t) {
  int64_t len, elems, shape[2];
  dr_plan_output(t->plan, shape, &len, &elems);
  int64_t extent = t->new_shape[t->new_split], off, l;
  dr_balanced_slab(extent, size, rank, &l, &off);
  for (int64_t i = 0; i < elems; i++) {
    int64_t r = t->new_split == 0 ? off + i / t->new_shape[1] : i / l;
    int64_t c = t->new_split == 0 ? i % t->new_shape[1] : off + i % l;
    if (t->out[i] != (double)(r * t->new_shape[1] + c)) return 0;
  }
  return 1;
}

/* Executes t's plan with the fault `inject` switches on: each rank that has
 * messages must return `want`, its message naming `what`; the others succeed. */
static void execute_faulty(struct transpose_like *t, void (*inject)(int32_t), dr_status want,
                           const char *what) {
  dr_plan_stats st;
  dr_plan_stats_get(t->plan, &st);
  inject(1);
  dr_status s = dr_plan_execute(t->plan, t->in, t->out, t->capacity);
  inject(0);
  int talks = st.peers_sent + st.peers_received > 0;
  CHECK_WHAT(talks ? s == want : s == DR_SUCCESS, "an exchange faulting mid-way is abandoned");
  CHECK_WHAT(!talks || strstr(dr_last_error_message(), what) != NULL, "message names the fault");
}

static void release(struct transpose_like *t) {
  dr_plan_destroy(t->plan);
  free(t->in);
  free(t->out);
}

int main(int argc, char **argv) {
  test_init(&argc, &argv);
  rank = test_rank;
  size = test_nranks;
  int victim = size - 1; /* not rank 0 when there are several ranks */

  /* Several plans alive at once, executed in mixed order, twice. */
  struct transpose_like a, b, c;
  CHECK_WHAT(make(&a, 23, 7, 0) == DR_SUCCESS, "plan a");
  CHECK_WHAT(make(&b, 5, 40, 1) == DR_SUCCESS, "plan b");
  CHECK_WHAT(make(&c, 64, 3, 1) == DR_SUCCESS, "plan c");
  struct transpose_like *order[6] = {&c, &a, &b, &b, &c, &a};
  for (int i = 0; i < 6; i++) {
    dr_status s = dr_plan_execute(order[i]->plan, order[i]->in, order[i]->out, order[i]->capacity);
    CHECK_WHAT(s == DR_SUCCESS && correct(order[i]), "interleaved plans give the right result");
  }

  /* Allocation failure on one rank: the plan needs O(nranks) memory, so a 1-byte
   * limit fails its allocation; every rank must report DR_ERROR_OUT_OF_MEMORY. */
  if (rank == victim) dr_test_set_allocation_limit(1);
  struct transpose_like d;
  dr_status s = make(&d, 10, 10, 1);
  dr_test_set_allocation_limit(-1);
  CHECK_WHAT(agreed(s) && s == DR_ERROR_OUT_OF_MEMORY, "out of memory on one rank is agreed");
  CHECK_WHAT(d.plan == NULL, "no plan is returned on failure");
  CHECK_WHAT(strstr(dr_last_error_message(), "out of memory") != NULL, "message names out of memory");
  CHECK_NAMES_RANK(victim);
  release(&d);

  /* Out of memory during execution (the in-place staging of the sends). */
  if (rank == victim) dr_test_set_allocation_limit(1);
  double *buf = malloc(sizeof(double) * (size_t)(a.capacity + 1));
  memcpy(buf, a.in, sizeof(double) * (size_t)(a.in_len * a.gshape[1]));
  s = dr_plan_execute(a.plan, buf, buf, a.capacity);
  dr_test_set_allocation_limit(-1);
  CHECK_WHAT(agreed(s) && (size == 1 ? s == DR_SUCCESS : s == DR_ERROR_OUT_OF_MEMORY),
             "out of memory while executing on one rank is agreed");
  if (size > 1) CHECK_NAMES_RANK(victim);
  free(buf);

  /* The box of one rank of a layout of 2^20 ranks, then of 2^31 - 1: found
   * from the rank's coordinates, allocating nothing per rank (under a limit of
   * 1 MiB, below what the block offsets of every coordinate would take). */
  int64_t many_shape[2] = {3 << 20, 2}, box_off[2] = {-1, -1}, box_ext[2] = {-1, -1};
  int32_t many_dims[1] = {1 << 20}, many_axes[2] = {0, DR_SPLIT_NONE};
  dr_layout *many = NULL;
  CHECK(dr_layout_create(2, many_shape, 1, many_dims, many_axes, &many) == DR_SUCCESS);
  dr_test_set_allocation_limit(1 << 20);
  CHECK_STATUS(dr_layout_rank_box(many, 1 << 20, 5, box_off, box_ext), DR_SUCCESS);
  CHECK(box_off[0] == 15 && box_ext[0] == 3 && box_off[1] == 0 && box_ext[1] == 2);
  dr_layout_destroy(many);
  int64_t most_shape[2] = {(int64_t)1 << 40, 2};
  int32_t most_dims[1] = {INT32_MAX};
  CHECK(dr_layout_create(2, most_shape, 1, most_dims, many_axes, &many) == DR_SUCCESS);
  CHECK_STATUS(dr_layout_rank_box(many, INT32_MAX, INT32_MAX - 1, box_off, box_ext), DR_SUCCESS);
  /* 2^40 = 512 (2^31 - 1) + 512: the last rank's block is 512 long, after
   * 512 blocks of 513 and the rest of 512. */
  CHECK(box_off[0] == ((int64_t)1 << 40) - 512 && box_ext[0] == 512 && box_off[1] == 0 &&
        box_ext[1] == 2);
  dr_test_set_allocation_limit(-1);
  dr_layout_destroy(many);

  /* A panic inside the library on one rank. */
  if (rank == victim) dr_test_set_panic(1);
  struct transpose_like e;
  s = make(&e, 10, 10, 1);
  dr_test_set_panic(0);
  CHECK_WHAT(agreed(s) && s == DR_ERROR_INTERNAL, "a panic on one rank is agreed as internal error");
  CHECK_WHAT(strstr(dr_last_error_message(), "panic") != NULL, "message names the panic");
  release(&e);

  /* An MPI failure in the middle of an exchange, on every rank (as when the job's
   * network fails): each rank that has messages returns DR_ERROR_MPI after
   * cancelling them, none hangs, and nothing of that execution reaches a later one
   * (its messages carry another tag). */
  for (int i = 0; i < 3; i++)
    execute_faulty(order[i], dr_test_set_exchange_failure, DR_ERROR_MPI, "injected");

  /* A panic in the middle of an exchange, on every rank that has messages, once
   * they are posted: it is caught (DR_ERROR_INTERNAL), the messages are cancelled,
   * and the next execution is whole, the elements each rank keeps included (every
   * output element is overwritten first). */
  for (int i = 0; i < 3; i++) {
    execute_faulty(order[i], dr_test_set_exchange_panic, DR_ERROR_INTERNAL, "panic");
    for (int64_t k = 0; k < order[i]->capacity; k++) order[i]->out[k] = -1.0;
    s = dr_plan_execute(order[i]->plan, order[i]->in, order[i]->out, order[i]->capacity);
    CHECK_WHAT(s == DR_SUCCESS && correct(order[i]), "the execution after a panic is whole");
  }

  /* A panic in the middle of a fused execution of the three plans, on every rank
   * (each meets the hook at its first wait: a plan's messages, or its frames): it
   * is caught (DR_ERROR_INTERNAL), everything in flight is cancelled, and the next
   * fused execution is whole. */
  const dr_plan *plans[3] = {a.plan, b.plan, c.plan};
  dr_fused *fused = NULL;
  s = dr_fused_create(3, plans, &fused);
  CHECK_WHAT(s == DR_SUCCESS, "the three plans fuse");
  const void *ins[3] = {a.in, b.in, c.in};
  void *outs[3] = {a.out, b.out, c.out};
  dr_test_set_exchange_panic(1);
  s = dr_fused_execute(fused, ins, outs);
  dr_test_set_exchange_panic(0);
  CHECK_WHAT(s == DR_ERROR_INTERNAL && strstr(dr_last_error_message(), "panic") != NULL,
             "a panic mid-way through a fused execution is caught");
  for (int i = 0; i < 3; i++)
    for (int64_t k = 0; k < order[i]->capacity; k++) order[i]->out[k] = -1.0;
  s = dr_fused_execute(fused, ins, outs);
  CHECK_WHAT(s == DR_SUCCESS && correct(&a) && correct(&b) && correct(&c),
             "the fused execution after a panic is whole");
  dr_fused_destroy(fused);

  /* A datatype MPI refuses, on every rank (the test hook hands MPI a count of
   * -1 in place of the constructor, as when MPI's datatype resources run out):
   * MPI raises that on MPI_COMM_WORLD's handler, fatal here, so each rank with
   * messages must return DR_ERROR_MPI naming the constructor, never abort, and
   * the next execution makes the datatype and is whole. A split change of two
   * long rows a rank, whose runs at a stride (128 KiB to each peer) travel as
   * strided sends (through datatypes), the other ways and direct reads off: so
   * every rank with messages makes a datatype before it waits for any. */
  {
    int64_t shape[2] = {2 * size, (int64_t)16384 * size}, rows, row0, cols, col0;
    dr_balanced_slab(shape[0], size, rank, &rows, &row0);
    dr_balanced_slab(shape[1], size, rank, &cols, &col0);
    dr_options *o = NULL;
    CHECK_STATUS(dr_options_create(&o), DR_SUCCESS);
    CHECK_STATUS(dr_options_set(o, DR_OPTION_STRIDED_SENDS, 1), DR_SUCCESS);
    CHECK_STATUS(dr_options_set(o, DR_OPTION_STRIDED_SLOTS, 0), DR_SUCCESS);
    CHECK_STATUS(dr_options_set(o, DR_OPTION_RUN_MESSAGES, 0), DR_SUCCESS);
    CHECK_STATUS(dr_options_set(o, DR_OPTION_DIRECT_READS, 0), DR_SUCCESS);
    dr_plan *split = NULL;
    s = dr_plan_create_configured(DR_DTYPE_FLOAT64, 2, shape, 0, MPI_COMM_WORLD, rows, 2, shape, 1,
                                  cols, o, &split);
    CHECK_STATUS(dr_options_free(&o), DR_SUCCESS);
    CHECK_WHAT(s == DR_SUCCESS, "the split change of long rows");
    int64_t in_len = rows * shape[1], out_len = shape[0] * cols;
    double *in = malloc(sizeof(double) * (size_t)(in_len + 1));
    double *out = malloc(sizeof(double) * (size_t)(out_len + 1));
    for (int64_t i = 0; i < in_len; i++) in[i] = (double)(row0 * shape[1] + i);
    dr_plan_stats st;
    dr_plan_stats_get(split, &st);
    int talks = st.peers_sent + st.peers_received > 0;
    dr_test_set_datatype_failure(1);
    s = dr_plan_execute(split, in, out, out_len);
    dr_test_set_datatype_failure(0);
    CHECK_WHAT(talks ? s == DR_ERROR_MPI : s == DR_SUCCESS,
               "a datatype MPI refuses is an error, not an abort");
    CHECK_WHAT(!talks || strstr(dr_last_error_message(), "MPI_Type_create_hvector") != NULL,
               "message names the constructor");
    for (int64_t i = 0; i < out_len; i++) out[i] = -1.0;
    s = dr_plan_execute(split, in, out, out_len);
    int whole = s == DR_SUCCESS;
    for (int64_t i = 0; whole && i < out_len; i++)
      whole = out[i] == (double)(i / cols * shape[1] + col0 + i % cols);
    CHECK_WHAT(whole, "the execution after a refused datatype is whole");
    dr_plan_destroy(split);
    free(in);
    free(out);
  }

  /* The communicator still works, and the old plans too. */
  for (int i = 0; i < 3; i++) {
    s = dr_plan_execute(order[i]->plan, order[i]->in, order[i]->out, order[i]->capacity);
    CHECK_WHAT(s == DR_SUCCESS && correct(order[i]), "plans still work after the faults");
  }
  release(&a);
  release(&b);
  release(&c);

  return test_finish("faults test");
}
