/* Two threads reshape concurrently on two communicators under MPI_THREAD_MULTIPLE:
 * their messages must not mix, and dr_last_error_message must be per thread.
 *
 * Then two threads execute one plan at once, which the API forbids but a C caller
 * can do: the plan's lock serializes them, so each call either runs after the
 * other's or, while the other's execution is in flight, fails with
 * DR_ERROR_EXECUTION_IN_PROGRESS on every rank; no execution writes another's
 * output, and every rank runs the same number of executions. Blocking calls from
 * both threads on the exchange path; non-blocking calls from both, and one
 * blocking against one non-blocking, on the local path. (Not non-blocking on the
 * exchange path: a call that waits in the agreement's collective holds the lock,
 * so the other thread cannot post the later windows of its execution in flight,
 * and the ranks could wait for each other forever.) */
#include <pthread.h>

#include "harness.h"

#define ROUNDS 20

/* Executions each thread attempts on the shared plan. */
#define SHARED_ROUNDS 40

struct job {
  MPI_Comm comm;
  int64_t rows, cols; /* (rows, cols) split 0 -> (cols, rows) split 1 */
  int fail_once;      /* make one call fail and check this thread's message */
  int errors;         /* this thread's failed checks (test_failures is not shared) */
};

static int rank_of(MPI_Comm comm) {
  int r;
  MPI_Comm_rank(comm, &r);
  return r;
}

static void *run(void *arg) {
  struct job *job = arg;
  int rank = rank_of(job->comm), size;
  MPI_Comm_size(job->comm, &size);
  int64_t len, off, n = 0;
  dr_balanced_slab(job->rows, size, rank, &len, &off);
  int64_t gshape[2] = {job->rows, job->cols}, new_shape[2] = {job->cols, job->rows};
  int64_t total = job->rows * job->cols;
  double *in = malloc(sizeof(double) * (size_t)(len * job->cols + 1));
  double *out = malloc(sizeof(double) * (size_t)(total + 1));
  for (int64_t i = 0; i < len * job->cols; i++) in[i] = (double)(off * job->cols + i);
  for (int round = 0; round < ROUNDS; round++) {
    dr_status s = dr_reshape(in, DR_DTYPE_FLOAT64, 2, gshape, 0, job->comm, len, 2, new_shape, 1,
                             out, total, &n);
    if (s != DR_SUCCESS) {
      fprintf(stderr, "rank %d: reshape failed: %s\n", rank, dr_last_error_message());
      job->errors++;
      continue;
    }
    int64_t out_len, out_off;
    dr_balanced_slab(job->rows, size, rank, &out_len, &out_off);
    for (int64_t r = 0; r < job->cols; r++)
      for (int64_t c = 0; c < out_len; c++)
        if (out[r * out_len + c] != (double)(r * job->rows + out_off + c)) job->errors++;
    if (job->fail_once && round == ROUNDS / 2) {
      s = dr_reshape(in, DR_DTYPE_FLOAT64, 2, gshape, 0, job->comm, -7, 2, new_shape, 1, out,
                     total, &n);
      if (s != DR_ERROR_INVALID_DISTRIBUTION || !strstr(dr_last_error_message(), "-7")) job->errors++;
    }
  }
  if (!job->fail_once && dr_last_error_message()[0] != '\0') {
    fprintf(stderr, "rank %d: a clean thread sees another thread's message: %s\n", rank,
            dr_last_error_message());
    job->errors++;
  }
  free(in);
  free(out);
  return NULL;
}

/* A plan of a (rows, cols) array, its input filled with global indices, and
 * where its output lies. */
struct shared_plan {
  dr_plan *plan;
  double *in;
  int64_t new_shape[2];
  int new_split;
  int64_t out_len, out_off, out_elems;
};

/* (rows, cols) split 0 -> new_shape split new_split, the input rows of rank r
 * those of rank size - 1 - r in a balanced split (so a split-preserving plan moves
 * rows when size does not divide rows), the output balanced. */
static void make_shared(struct shared_plan *p, int64_t rows, int64_t cols,
                        const int64_t new_shape[2], int new_split) {
  int rank = rank_of(MPI_COMM_WORLD), size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t len, off = 0, l, o;
  for (int r = 0; r < rank; r++) {
    dr_balanced_slab(rows, size, size - 1 - r, &l, &o);
    off += l;
  }
  dr_balanced_slab(rows, size, size - 1 - rank, &len, &o);
  p->in = malloc(sizeof(double) * (size_t)(len * cols + 1));
  for (int64_t i = 0; i < len * cols; i++) p->in[i] = (double)(off * cols + i);
  int64_t gshape[2] = {rows, cols};
  p->new_shape[0] = new_shape[0], p->new_shape[1] = new_shape[1], p->new_split = new_split;
  p->plan = NULL;
  CHECK(dr_plan_create(DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2, p->new_shape,
                       new_split, -1, &p->plan) == DR_SUCCESS);
  dr_plan_output(p->plan, NULL, &p->out_len, &p->out_elems);
  dr_balanced_slab(new_shape[new_split], size, rank, &l, &p->out_off);
}

static void release_shared(struct shared_plan *p) {
  dr_plan_destroy(p->plan);
  free(p->in);
}

/* The number of elements of `out` that do not hold their global index. */
static int64_t wrong_output(const struct shared_plan *p, const double *out) {
  int64_t wrong = 0, n1 = p->new_shape[1];
  for (int64_t i = 0; i < p->out_elems; i++) {
    int64_t r = p->new_split == 0 ? p->out_off + i / n1 : i / p->out_len;
    int64_t c = p->new_split == 0 ? i % n1 : p->out_off + i % p->out_len;
    wrong += out[i] != (double)(r * n1 + c);
  }
  return wrong;
}

/* One thread's calls on the shared plan. */
struct sharer {
  const struct shared_plan *shared;
  int nonblocking; /* dr_plan_execute_begin and dr_request_test, else dr_plan_execute */
  int runs, refused, errors;
};

/* Executes the shared plan into `out` as `t` says, to completion. */
static dr_status execute_shared(const struct sharer *t, double *out) {
  const struct shared_plan *p = t->shared;
  if (!t->nonblocking) return dr_plan_execute(p->plan, p->in, out, p->out_elems);
  dr_request *request = NULL;
  int done = 0;
  dr_status s = dr_plan_execute_begin(p->plan, p->in, out, p->out_elems, &request);
  while (s == DR_SUCCESS && !done) s = dr_request_test(&request, &done);
  return s;
}

static void *share(void *arg) {
  struct sharer *t = arg;
  double *out = malloc(sizeof(double) * (size_t)(t->shared->out_elems + 1));
  for (int round = 0; round < SHARED_ROUNDS; round++) {
    for (int64_t i = 0; i < t->shared->out_elems; i++) out[i] = -1.0;
    dr_status s = execute_shared(t, out);
    if (s == DR_ERROR_EXECUTION_IN_PROGRESS) {
      t->refused++;
    } else if (s != DR_SUCCESS) {
      fprintf(stderr, "rank %d: shared execution failed: %s\n", rank_of(MPI_COMM_WORLD),
              dr_last_error_message());
      t->errors++;
    } else {
      t->runs++;
      t->errors += (int)wrong_output(t->shared, out);
    }
  }
  free(out);
  return NULL;
}

/* Two threads call `plan` at once, non-blocking as `nonblocking` says; returns
 * the calls refused as in progress. Checks every output element, and that every
 * rank ran the same number of executions. */
static int share_plan(const struct shared_plan *plan, const int nonblocking[2]) {
  struct sharer sharers[2];
  pthread_t threads[2];
  for (int t = 0; t < 2; t++) {
    sharers[t] = (struct sharer){plan, nonblocking[t], 0, 0, 0};
    pthread_create(&threads[t], NULL, share, &sharers[t]);
  }
  for (int t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  int runs = sharers[0].runs + sharers[1].runs, least, most;
  MPI_Allreduce(&runs, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&runs, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK_EQ(least, most, "executions run on this rank against the others");
  CHECK_EQ(sharers[0].errors + sharers[1].errors, 0, "wrong elements or failed calls");
  CHECK_EQ(runs + sharers[0].refused + sharers[1].refused, 2 * SHARED_ROUNDS,
           "calls that ran or were refused");
  CHECK(runs > 0); /* the first call of all finds no execution in flight */
  return sharers[0].refused + sharers[1].refused;
}

/* One plan executed by two threads at once (see the top of the file). */
static void two_threads_on_one_plan(void) {
  int64_t transposed[2] = {7, 61}, same[2] = {61, 7};
  struct shared_plan exchange, local;
  make_shared(&exchange, 61, 7, transposed, 1);
  make_shared(&local, 61, 7, same, 0);
  dr_plan_stats stats;
  dr_plan_stats_get(local.plan, &stats);
  CHECK(stats.path == DR_PATH_LOCAL);
  const int blocking[2] = {0, 0}, nonblocking[2] = {1, 1}, mixed[2] = {0, 1};
  CHECK_EQ(share_plan(&exchange, blocking), 0, "blocking calls refused");
  share_plan(&local, nonblocking);
  share_plan(&local, mixed);
  release_shared(&exchange);
  release_shared(&local);
}

int main(int argc, char **argv) {
  if (!test_init_thread(&argc, &argv, MPI_THREAD_MULTIPLE)) {
    fprintf(stderr, "MPI_THREAD_MULTIPLE is not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  struct job jobs[2] = {{MPI_COMM_NULL, 37, 11, 0, 0}, {MPI_COMM_NULL, 13, 29, 1, 0}};
  MPI_Comm_dup(MPI_COMM_WORLD, &jobs[0].comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &jobs[1].comm);
  pthread_t threads[2];
  for (int t = 0; t < 2; t++) pthread_create(&threads[t], NULL, run, &jobs[t]);
  for (int t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  CHECK_EQ(jobs[0].errors, 0, "failed checks in the first thread");
  CHECK_EQ(jobs[1].errors, 0, "failed checks in the second thread");
  MPI_Comm_free(&jobs[0].comm);
  MPI_Comm_free(&jobs[1].comm);
  two_threads_on_one_plan();
  return test_finish("threads test");
}
