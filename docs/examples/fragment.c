/* The wrapper of the docs' C fragments (```c fragment): the names a fragment
 * uses without declaring them, at file scope, so that the fragment's own
 * declarations (in the function below) shadow them. Compiled, never run. */
#include <distreshape.h>
#include <mpi.h>
#include <stdio.h>

static int rank, nranks, p_row, p_col;
static int64_t n, in_elems, my_rows, new_len, new_off, new_elems, out_capacity;
static int64_t resolved_shape[DR_MAX_DIMS];
static int64_t NX, NY, NZ;
static double *in, *out;
static dr_plan *plan;
static void compute_a_little(void) {}

void doc_fragment(void);
void doc_fragment(void)
{
@FRAGMENT@
}
