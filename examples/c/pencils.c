/* Pencil decompositions (2-D process grids): the transposes of a spectral
 * code, x-pencils -> y-pencils -> z-pencils and back, each one a DistReshape
 * plan on a row or column sub-communicator of a p_row x p_col process grid.
 *
 * The global array is (NX, NY, NZ) = (17, 13, 11) doubles in C order (z
 * fastest); every element holds its global flat index (x*NY + y)*NZ + z. A
 * pencil is whole along one axis; of the two other axes, the lower one is
 * split over the grid's p_row ranks and the higher one over its p_col ranks
 * (2DECOMP&FFT's orientation), in balanced slabs (dr_balanced_slab):
 *
 *   x-pencil (NX, ly, lz): y over p_row, z over p_col
 *   y-pencil (lx, NY, lz): x over p_row, z over p_col
 *   z-pencil (lx, ly2, NZ): x over p_row, y over p_col (ly2: y in p_col slabs)
 *
 * Each rank stores its pencil as one contiguous C-order block in the global
 * axis order (x, y, z), which is DistReshape's slab layout. A transpose only
 * moves data among the ranks that share the slab of the third axis, and those
 * ranks together hold a sub-array that is whole along the two axes being
 * exchanged and this slab's length along the third. So the transpose is a
 * reshape of that sub-array to its own shape with another split axis:
 *
 *   x -> y on the row communicator (p_row ranks, same z slab):
 *          (NX, NY, lz) split 1 (y) -> (NX, NY, lz) split 0 (x)
 *   y -> z on the column communicator (p_col ranks, same x slab):
 *          (lx, NY, NZ) split 2 (z) -> (lx, NY, NZ) split 1 (y)
 *   z -> y and y -> x: the same with the splits swapped.
 *
 * The plans are made once and executed at every step, as a time-stepping
 * code would; every element is checked after every transpose.
 *
 *   mpiexec -n 6 ./pencils_c     (a 2 x 3 grid; 4 ranks give 2 x 2)
 */
#include <distreshape.h>
#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Every distreshape call returns the same status on every rank, so all ranks
 * take this branch together. */
#define CHECK(call)                                                              \
    do {                                                                         \
        dr_status s_ = (call);                                                   \
        if (s_ != DR_SUCCESS) {                                                  \
            fprintf(stderr, "%s failed: %s: %s\n", #call, dr_status_string(s_),  \
                    dr_last_error_message());                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                        \
        }                                                                        \
    } while (0)

enum { X, Y, Z };
/* Small, unequal extents that the grids do not divide: unbalanced slabs. */
static const int64_t N[3] = {17, 13, 11};
static const char AXIS[3] = {'x', 'y', 'z'};

/* The part of the global array a rank holds: offset and length per axis. */
typedef struct {
    int64_t off[3], len[3];
} block;

/* This rank's block of the pencil whole along `whole`: the lower other axis
 * in the balanced slab of rank me[0] of grid[0] = p_row, the higher one in
 * that of rank me[1] of grid[1] = p_col. */
static block pencil(int whole, const int grid[2], const int me[2])
{
    block b;
    int k = 0;
    for (int d = 0; d < 3; d++) {
        if (d == whole) {
            b.off[d] = 0;
            b.len[d] = N[d];
        } else {
            CHECK(dr_balanced_slab(N[d], grid[k], me[k], &b.len[d], &b.off[d]));
            k++;
        }
    }
    return b;
}

static int64_t elements(const block *b)
{
    return b->len[X] * b->len[Y] * b->len[Z];
}

static double global_index(int64_t x, int64_t y, int64_t z)
{
    return (double)((x * N[Y] + y) * N[Z] + z);
}

static void fill(double *a, const block *b)
{
    int64_t i = 0;
    for (int64_t x = b->off[X]; x < b->off[X] + b->len[X]; x++)
        for (int64_t y = b->off[Y]; y < b->off[Y] + b->len[Y]; y++)
            for (int64_t z = b->off[Z]; z < b->off[Z] + b->len[Z]; z++)
                a[i++] = global_index(x, y, z);
}

static int64_t count_errors(const double *a, const block *b)
{
    int64_t errors = 0, i = 0;
    for (int64_t x = b->off[X]; x < b->off[X] + b->len[X]; x++)
        for (int64_t y = b->off[Y]; y < b->off[Y] + b->len[Y]; y++)
            for (int64_t z = b->off[Z]; z < b->off[Z] + b->len[Z]; z++)
                errors += a[i++] != global_index(x, y, z);
    return errors;
}

/* Plans the transpose from the pencil `in` (whole along `from`) to the one
 * whole along `to`, on `comm`: the ranks that share in's slab of the third
 * axis. Their sub-array is whole along `from` and `to` and in's slab length
 * along the third axis; it is split along `to` (in's slab there) and becomes
 * split along `from`, in the balanced slabs of comm's ranks. `out` is the
 * pencil this rank expects, from dr_balanced_slab. */
static dr_plan *plan_transpose(MPI_Comm comm, const block *in, int from, int to, const block *out)
{
    int64_t sub[3];
    for (int d = 0; d < 3; d++)
        sub[d] = d == from || d == to ? N[d] : in->len[d];
    dr_plan *plan;
    CHECK(dr_plan_create(DR_DTYPE_FLOAT64, 3, sub, to, comm, in->len[to], 3, sub, from, -1,
                         &plan));
    /* The plan's slab (length and offset along `from`) is the expected pencil's;
     * with chosen lengths (new_local_len) only the plan would know the offset. */
    int64_t len, offset, elems;
    CHECK(dr_plan_output_slab(plan, &len, &offset, &elems));
    if (len != out->len[from] || offset != out->off[from] || elems != elements(out)) {
        fprintf(stderr, "%c -> %c: the plan's output is not the expected pencil\n", AXIS[from],
                AXIS[to]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return plan;
}

/* Runs a transpose into `out` and counts the elements that are not where the
 * pencil `expected` puts them. The output is poisoned first, so that data
 * left by the previous step cannot pass the check. */
static int64_t execute_transpose(const dr_plan *plan, const double *in, double *out,
                                 const block *expected)
{
    for (int64_t i = 0; i < elements(expected); i++)
        out[i] = -1;
    CHECK(dr_plan_execute(plan, in, out, elements(expected)));
    return count_errors(out, expected);
}

static double *allocate(const block *b)
{
    return malloc((size_t)(elements(b) > 0 ? elements(b) : 1) * sizeof(double));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nranks;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    /* The process grid: MPI_Dims_create lists the dimensions largest first;
     * take the smaller as p_row (2 x 2 at 4 ranks, 2 x 3 at 6). */
    int dims[2] = {0, 0};
    MPI_Dims_create(nranks, 2, dims);
    const int grid[2] = {dims[1], dims[0]}, periods[2] = {0, 0};
    MPI_Comm cart, comm_row, comm_col;
    MPI_Cart_create(MPI_COMM_WORLD, 2, grid, periods, 0, &cart);
    /* comm_row spans grid dimension 0: the p_row ranks of this rank's grid
     * column. comm_col spans dimension 1: the p_col ranks of its grid row.
     * MPI_Cart_sub numbers the ranks of a 1-D sub-grid by their coordinate,
     * so me[] are this rank's grid coordinates, and the rank order in which
     * DistReshape lays out the slabs is the grid's. */
    MPI_Cart_sub(cart, (const int[2]){1, 0}, &comm_row);
    MPI_Cart_sub(cart, (const int[2]){0, 1}, &comm_col);
    int me[2];
    MPI_Comm_rank(comm_row, &me[0]);
    MPI_Comm_rank(comm_col, &me[1]);

    block xp = pencil(X, grid, me), yp = pencil(Y, grid, me), zp = pencil(Z, grid, me);
    double *xa = allocate(&xp), *ya = allocate(&yp), *za = allocate(&zp);

    /* The four transposes, planned once. */
    dr_plan *x_to_y = plan_transpose(comm_row, &xp, X, Y, &yp);
    dr_plan *y_to_z = plan_transpose(comm_col, &yp, Y, Z, &zp);
    dr_plan *z_to_y = plan_transpose(comm_col, &zp, Z, Y, &yp);
    dr_plan *y_to_x = plan_transpose(comm_row, &yp, Y, X, &xp);

    /* Two steps of a spectral code's round trip (FFTs along the whole axis
     * would go between the transposes); the last lands back in xa. */
    fill(xa, &xp);
    int64_t errors[4] = {0, 0, 0, 0};
    for (int step = 0; step < 2; step++) {
        errors[0] += execute_transpose(x_to_y, xa, ya, &yp);
        errors[1] += execute_transpose(y_to_z, ya, za, &zp);
        errors[2] += execute_transpose(z_to_y, za, ya, &yp);
        errors[3] += execute_transpose(y_to_x, ya, xa, &xp);
    }

    int64_t total[4];
    MPI_Allreduce(errors, total, 4, MPI_INT64_T, MPI_SUM, cart);
    int rank;
    MPI_Comm_rank(cart, &rank);
    if (rank == 0) {
        printf("(%" PRId64 ", %" PRId64 ", %" PRId64 ") on a %d x %d grid, 2 round trips\n", N[X],
               N[Y], N[Z], grid[0], grid[1]);
        const char *names[4] = {"x -> y (comm_row)", "y -> z (comm_col)", "z -> y (comm_col)",
                                "y -> x (comm_row)"};
        for (int t = 0; t < 4; t++)
            printf("%s: %s, %" PRId64 " wrong element(s)\n", names[t], total[t] ? "FAILED" : "OK",
                   total[t]);
    }
    int failed = total[0] || total[1] || total[2] || total[3];

    dr_plan_destroy(x_to_y);
    dr_plan_destroy(y_to_z);
    dr_plan_destroy(z_to_y);
    dr_plan_destroy(y_to_x);
    free(xa);
    free(ya);
    free(za);
    MPI_Comm_free(&comm_row);
    MPI_Comm_free(&comm_col);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return failed;
}
