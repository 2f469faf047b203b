/* A field with ghost layers, transposed without a copy by the caller.
 *
 * A stencil code holds its x-pencil of a (NX, NY, NZ) field as a C array with
 * one ghost cell on each side of every axis, u[lx + 2][ly + 2][lz + 2], the
 * pencil being the interior u[1..lx][1..ly][1..lz]. Here it
 *   1. fills the interior with each element's global flat index and the ghost
 *      layers with the values a halo exchange would bring (the neighbours'
 *      elements, periodic in every direction: computed here from the global
 *      index, standing in for the code's own exchange),
 *   2. sweeps a 7-point stencil over the interior, v = 6u - (sum of the six
 *      neighbours), into a second ghosted array v whose ghost layers it never
 *      writes (a marker),
 *   3. transposes v's interior to y-pencils stored y-fastest, w[lx][lz][NY] (the
 *      layout a y-direction solver or FFT wants): one plan from
 *      dr_plan_create_strided, the input strides those of the ghosted array with
 *      the pointer at its first interior cell, the output strides (lz*NY, 1,
 *      NY); nothing is copied in or out by the caller,
 *   4. transposes back into a third ghosted array r, whose ghost layers hold a
 *      marker, with the strides swapped.
 * It checks every element of w against the stencil computed from the global
 * indices, that r's interior equals v's, that r's and v's ghost layers still
 * hold their markers (memory outside the box is never touched) and that v is
 * unchanged (the input is never written).
 *
 * The pencils are on the 2-D grid of MPI_Dims_create (x-pencils: y over grid
 * axis 0, z over grid axis 1; y-pencils: x over grid axis 0, z over axis 1).
 *
 *   mpiexec -n 4 ./halo_transpose_c
 */
#include <distreshape.h>
#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every distreshape call returns the same status on every rank, so all ranks
 * take this branch together. */
#define CHECK(call)                                                             \
    do {                                                                        \
        dr_status s_ = (call);                                                  \
        if (s_ != DR_SUCCESS) {                                                 \
            fprintf(stderr, "%s failed: %s: %s\n", #call, dr_status_string(s_), \
                    dr_last_error_message());                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                       \
        }                                                                       \
    } while (0)

enum { NX = 16, NY = 12, NZ = 10, H = 1 };

/* What a ghost cell of v and r holds: never a stencil value. */
static const double MARKER = -1.0e300;

/* The field at global (x, y, z), periodic: its global flat index. */
static double field(int64_t x, int64_t y, int64_t z)
{
    x = (x + NX) % NX;
    y = (y + NY) % NY;
    z = (z + NZ) % NZ;
    return (double)((x * NY + y) * NZ + z);
}

/* The stencil's value at global (x, y, z), in the order the sweep adds. */
static double stencil(int64_t x, int64_t y, int64_t z)
{
    double sum = field(x - 1, y, z) + field(x + 1, y, z) + field(x, y - 1, z) +
                 field(x, y + 1, z) + field(x, y, z - 1) + field(x, y, z + 1);
    return 6.0 * field(x, y, z) - sum;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    const int64_t shape[3] = {NX, NY, NZ};
    const int32_t grid[2] = {dims[0], dims[1]};
    const int32_t x_axes[3] = {DR_SPLIT_NONE, 0, 1}, y_axes[3] = {0, DR_SPLIT_NONE, 1};
    const int row = rank / dims[1], col = rank % dims[1];

    /* This rank's x-pencil (NX, ly, lz) at (0, oy, oz) and y-pencil (lx, NY, lz2)
     * at (ox, 0, oz), from the balanced blocks of its grid coordinates. */
    int64_t ly, oy, lz, oz, lx, ox;
    CHECK(dr_balanced_slab(NY, dims[0], row, &ly, &oy));
    CHECK(dr_balanced_slab(NZ, dims[1], col, &lz, &oz));
    CHECK(dr_balanced_slab(NX, dims[0], row, &lx, &ox));
    const int64_t lxh = NX + 2 * H, lyh = ly + 2 * H, lzh = lz + 2 * H;
    const int64_t ghosted = lxh * lyh * lzh;

    /* The ghosted arrays' strides, and the offset of the first interior cell. */
    const int64_t halo_strides[3] = {lyh * lzh, lzh, 1};
    const int64_t interior = H * (halo_strides[0] + halo_strides[1] + halo_strides[2]);
#define AT(x, y, z) (((int64_t)(x) + H) * halo_strides[0] + ((int64_t)(y) + H) * halo_strides[1] + (int64_t)(z) + H)

    double *u = malloc((size_t)ghosted * sizeof *u), *v = malloc((size_t)ghosted * sizeof *v);
    double *r = malloc((size_t)ghosted * sizeof *r), *v_before = malloc((size_t)ghosted * sizeof *v);
    /* 1. The interior and the ghost layers (x from -1 to NX, and so on). */
    for (int64_t x = -H; x < NX + H; x++)
        for (int64_t y = -H; y < ly + H; y++)
            for (int64_t z = -H; z < lz + H; z++) u[AT(x, y, z)] = field(x, oy + y, oz + z);
    /* 2. The stencil sweep over the interior of v; v's ghost layers are markers. */
    for (int64_t i = 0; i < ghosted; i++) v[i] = r[i] = MARKER;
    for (int64_t x = 0; x < NX; x++)
        for (int64_t y = 0; y < ly; y++)
            for (int64_t z = 0; z < lz; z++) {
                double sum = u[AT(x - 1, y, z)] + u[AT(x + 1, y, z)] + u[AT(x, y - 1, z)] +
                             u[AT(x, y + 1, z)] + u[AT(x, y, z - 1)] + u[AT(x, y, z + 1)];
                v[AT(x, y, z)] = 6.0 * u[AT(x, y, z)] - sum;
            }
    memcpy(v_before, v, (size_t)ghosted * sizeof *v);

    /* 3. and 4.: the plans, x-pencils in the ghosted array <-> y-pencils y-fastest. */
    const int64_t y_fast[3] = {lz * NY, 1, NY};
    dr_layout *x_pencils, *y_pencils;
    CHECK(dr_layout_create(3, shape, 2, grid, x_axes, &x_pencils));
    CHECK(dr_layout_create(3, shape, 2, grid, y_axes, &y_pencils));
    dr_plan *forward, *backward;
    CHECK(dr_plan_create_strided(DR_DTYPE_FLOAT64, x_pencils, halo_strides, y_pencils, y_fast,
                                 MPI_COMM_WORLD, NULL, &forward));
    CHECK(dr_plan_create_strided(DR_DTYPE_FLOAT64, y_pencils, y_fast, x_pencils, halo_strides,
                                 MPI_COMM_WORLD, NULL, &backward));
    dr_layout_destroy(x_pencils);
    dr_layout_destroy(y_pencils);
    int64_t w_span, r_span;
    CHECK(dr_plan_spans(forward, NULL, &w_span));
    CHECK(dr_plan_spans(backward, NULL, &r_span));
    double *w = malloc((size_t)(w_span > 0 ? w_span : 1) * sizeof *w);

    CHECK(dr_plan_execute(forward, v + interior, w, w_span));
    CHECK(dr_plan_execute(backward, w, r + interior, ghosted - interior));

    /* The checks. */
    int64_t wrong_w = 0, wrong_r = 0, touched = 0, changed = 0;
    for (int64_t x = 0; x < lx; x++)
        for (int64_t z = 0; z < lz; z++)
            for (int64_t y = 0; y < NY; y++)
                wrong_w += w[(x * lz + z) * NY + y] != stencil(ox + x, y, oz + z);
    for (int64_t x = -H; x < NX + H; x++)
        for (int64_t y = -H; y < ly + H; y++)
            for (int64_t z = -H; z < lz + H; z++) {
                int64_t at = AT(x, y, z);
                int inside = x >= 0 && x < NX && y >= 0 && y < ly && z >= 0 && z < lz;
                if (inside)
                    wrong_r += r[at] != v[at];
                else
                    touched += r[at] != MARKER || v[at] != MARKER;
                changed += memcmp(&v[at], &v_before[at], sizeof *v) != 0;
            }
    int64_t mine[4] = {wrong_w, wrong_r, touched, changed}, all[4];
    MPI_Allreduce(mine, all, 4, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    int ok = all[0] == 0 && all[1] == 0 && all[2] == 0 && all[3] == 0;
    if (rank == 0) {
        printf("halo_transpose: (%d, %d, %d) doubles, ghost layers of %d, %d x %d pencils\n", NX, NY,
               NZ, H, dims[0], dims[1]);
        printf("  y-pencils (y fastest) wrong: %" PRId64 ", round trip wrong: %" PRId64
               ", ghost cells touched: %" PRId64 ", input cells changed: %" PRId64 "\n",
               all[0], all[1], all[2], all[3]);
        printf("%s\n", ok ? "OK" : "FAILED");
    }
    dr_plan_destroy(forward);
    dr_plan_destroy(backward);
    free(u);
    free(v);
    free(r);
    free(v_before);
    free(w);
    MPI_Finalize();
    return ok ? 0 : 1;
}
