/* Two threads reshape concurrently on two communicators under MPI_THREAD_MULTIPLE:
 * their messages must not mix, and dr_last_error_message must be per thread. */
#include <pthread.h>

#include "harness.h"

#define ROUNDS 20

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
  return test_finish("threads test");
}
