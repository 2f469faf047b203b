/* Moves more than 2^31 bytes (and 2^31 elements) in one reshape between 2 ranks:
 * (N,) uint8 all on rank 0 -> balanced, N = 2^32 + 6, so rank 0 sends 2^31 + 3 bytes
 * to rank 1 and holds a local buffer of more than 2^32 elements. Every element is
 * checked (values are the global index mod 251, a prime, so shifts are caught). */
#include "harness.h"

static uint8_t value(int64_t global) { return (uint8_t)(global % 251); }

int main(int argc, char **argv) {
  test_init(&argc, &argv);
  const int64_t n = (INT64_C(1) << 32) + 6;
  int64_t len = test_rank == 0 ? n : 0, out_len, out_off, elems = 0;
  dr_balanced_slab(n, test_nranks, test_rank, &out_len, &out_off);
  uint8_t *in = malloc((size_t)(len > 0 ? len : 1));
  uint8_t *out = malloc((size_t)(out_len > 0 ? out_len : 1));
  if (!in || !out) {
    fprintf(stderr, "rank %d: cannot allocate the test buffers\n", test_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int64_t i = 0; i < len; i++) in[i] = value(i);
  int64_t gshape[1] = {n};
  double t = MPI_Wtime();
  dr_status s = dr_reshape(in, DR_DTYPE_UINT8, 1, gshape, 0, MPI_COMM_WORLD, len, 1, gshape, 0,
                           out, out_len, &elems);
  t = MPI_Wtime() - t;
  CHECK_STATUS(s, DR_SUCCESS);
  CHECK(elems == out_len);
  int64_t wrong = 0;
  for (int64_t i = 0; s == DR_SUCCESS && i < out_len; i++) wrong += out[i] != value(out_off + i);
  CHECK_WHAT(wrong == 0, "every element");
  if (test_rank == 0)
    printf("large test: %" PRId64 " bytes over %d ranks in %.2f s\n", n, test_nranks, t);
  free(in);
  free(out);
  return test_finish("large test");
}
