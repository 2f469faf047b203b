/* A distributed 3-D complex FFT: FFTW's 1-D transforms along each axis, with
 * DistReshape transposes between them and every pencil stored with its FFT
 * axis contiguous, so that each batch of 1-D FFTs runs on contiguous lines.
 *
 *   x-pencils  (NX, ly, lz)  stored [y][z][x]   FFTs along x
 *      | DistReshape: strides (1, lz*NX, NX) -> (lz*NY, 1, NY)
 *   y-pencils  (lx, NY, lz)  stored [x][z][y]   FFTs along y
 *      | DistReshape: strides (lz*NY, 1, NY) -> C order
 *   z-pencils  (lx, ly2, NZ) stored [x][y][z]   FFTs along z
 *
 * The pencils are on the 2-D grid of MPI_Dims_create (x-pencils: y over grid
 * axis 0, z over axis 1; y-pencils: x over axis 0, z over axis 1; z-pencils: x
 * over axis 0, y over axis 1). Each transpose is one plan from
 * dr_plan_create_strided, made once; the local permutation to the next FFT
 * axis happens inside the exchange (no copy, no separate permutation pass).
 * The 1-D FFTs are fftw_plan_many_dft plans made with FFTW_ESTIMATE, in place.
 *
 * Check (default): the global array is a deterministic function of the global
 * index; each rank computes FFTW's serial 3-D transform of the whole array and
 * compares its z-pencil with it. The largest relative error,
 * max |distributed - serial| / max |serial| over every rank, must be below 1e-10.
 *
 *   mpiexec -n 4 ./fft3d_c                      (12 x 10 x 9, checked)
 *   mpiexec -n 4 ./fft3d_c 32 24 20             (another shape, checked)
 *   mpiexec -n 4 ./fft3d_c --bench 256 --iters 5
 *
 * --bench N runs N^3 without the serial check and prints the time of one
 * forward transform (x-pencils in, z-pencils out: the slowest rank's, the least
 * of K iterations), and of its transposes and FFTs apart.
 */
#include <distreshape.h>
#include <fftw3.h>
#include <mpi.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                             \
    do {                                                                        \
        dr_status s_ = (call);                                                  \
        if (s_ != DR_SUCCESS) {                                                 \
            fprintf(stderr, "%s failed: %s: %s\n", #call, dr_status_string(s_), \
                    dr_last_error_message());                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                       \
        }                                                                       \
    } while (0)

static int64_t N[3] = {12, 10, 9};

/* The global array's element at flat index i: a deterministic pseudo-random
 * complex number in [-1, 1)^2 (a hash of i), the same on every rank. */
static void value(int64_t i, double out[2])
{
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    out[0] = (double)(h >> 11) / 4503599627370496.0 - 1.0; /* 2^52 */
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    out[1] = (double)(h >> 11) / 4503599627370496.0 - 1.0;
}

/* A batch of `howmany` in-place 1-D FFTs of length n on contiguous lines; NULL
 * when there is none (an empty pencil). */
static fftw_plan lines(fftw_complex *buf, int64_t n, int64_t howmany)
{
    if (howmany == 0 || n == 0) return NULL;
    int len = (int)n;
    fftw_plan p = fftw_plan_many_dft(1, &len, (int)howmany, buf, NULL, 1, len, buf, NULL, 1, len,
                                     FFTW_FORWARD, FFTW_ESTIMATE);
    if (!p) {
        fprintf(stderr, "fftw_plan_many_dft failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void run(fftw_plan p)
{
    if (p) fftw_execute(p);
}

static void *alloc(int64_t elems)
{
    void *p = fftw_malloc((size_t)(elems > 0 ? elems : 1) * sizeof(fftw_complex));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bench = 0, iters = 5, given = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
            bench = 1;
            N[0] = N[1] = N[2] = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (given < 3) {
            N[given++] = atoll(argv[i]);
        }
    }
    if (iters < 1) iters = 1;
    if (N[0] < 1 || N[1] < 1 || N[2] < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: fft3d_c [NX NY NZ] | --bench N [--iters K] (extents of 1 or more)\n");
        MPI_Finalize();
        return 1;
    }
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    const int row = rank / dims[1], col = rank % dims[1];
    const int32_t grid[2] = {dims[0], dims[1]};
    const int32_t x_axes[3] = {DR_SPLIT_NONE, 0, 1}, y_axes[3] = {0, DR_SPLIT_NONE, 1},
                  z_axes[3] = {0, 1, DR_SPLIT_NONE};

    /* The boxes: x-pencil (NX, ly, lz) at (0, oy, oz), y-pencil (lx, NY, lz) at
     * (ox, 0, oz), z-pencil (lx, my, NZ) at (ox, py, 0). */
    int64_t lx, ox, ly, oy, lz, oz, my, py;
    CHECK(dr_balanced_slab(N[1], dims[0], row, &ly, &oy));
    CHECK(dr_balanced_slab(N[2], dims[1], col, &lz, &oz));
    CHECK(dr_balanced_slab(N[0], dims[0], row, &lx, &ox));
    CHECK(dr_balanced_slab(N[1], dims[1], col, &my, &py));

    /* Each pencil's strides: its FFT axis contiguous. */
    const int64_t x_fast[3] = {1, lz * N[0], N[0]};  /* [y][z][x] */
    const int64_t y_fast[3] = {lz * N[1], 1, N[1]};  /* [x][z][y] */
    dr_layout *x_pencils, *y_pencils, *z_pencils;
    CHECK(dr_layout_create(3, N, 2, grid, x_axes, &x_pencils));
    CHECK(dr_layout_create(3, N, 2, grid, y_axes, &y_pencils));
    CHECK(dr_layout_create(3, N, 2, grid, z_axes, &z_pencils));
    dr_plan *x_to_y, *y_to_z;
    CHECK(dr_plan_create_strided(DR_DTYPE_COMPLEX128, x_pencils, x_fast, y_pencils, y_fast,
                                 MPI_COMM_WORLD, NULL, &x_to_y));
    CHECK(dr_plan_create_strided(DR_DTYPE_COMPLEX128, y_pencils, y_fast, z_pencils, NULL,
                                 MPI_COMM_WORLD, NULL, &y_to_z));
    dr_layout_destroy(x_pencils);
    dr_layout_destroy(y_pencils);
    dr_layout_destroy(z_pencils);

    const int64_t nx_elems = N[0] * ly * lz, ny_elems = lx * N[1] * lz, nz_elems = lx * my * N[2];
    fftw_complex *a = alloc(nx_elems), *b = alloc(ny_elems), *c = alloc(nz_elems);
    /* The FFTW plans, made before the data is written (FFTW_ESTIMATE never
     * overwrites the arrays, but a code moving to FFTW_MEASURE would). */
    fftw_plan fx = lines(a, N[0], ly * lz), fy = lines(b, N[1], lx * lz),
              fz = lines(c, N[2], lx * my);

    /* The x-pencil: element (x, y, z) of the box at a[(y*lz + z)*NX + x]. */
    for (int64_t y = 0; y < ly; y++)
        for (int64_t z = 0; z < lz; z++)
            for (int64_t x = 0; x < N[0]; x++)
                value((x * N[1] + oy + y) * N[2] + oz + z, a[(y * lz + z) * N[0] + x]);

    /* The forward transform: x-pencils in, z-pencils out. */
    double t_total = 1e300, best_fft = 1e300, best_transpose = 1e300;
    for (int it = 0; it < (bench ? iters : 1); it++) {
        if (it > 0) /* the data again (not timed): the transform ran in place */
            for (int64_t y = 0; y < ly; y++)
                for (int64_t z = 0; z < lz; z++)
                    for (int64_t x = 0; x < N[0]; x++)
                        value((x * N[1] + oy + y) * N[2] + oz + z, a[(y * lz + z) * N[0] + x]);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run(fx);
        double t1 = MPI_Wtime();
        CHECK(dr_plan_execute(x_to_y, a, b, ny_elems));
        double t2 = MPI_Wtime();
        run(fy);
        double t3 = MPI_Wtime();
        CHECK(dr_plan_execute(y_to_z, b, c, nz_elems));
        double t4 = MPI_Wtime();
        run(fz);
        double t5 = MPI_Wtime();
        double mine[3] = {t5 - t0, (t1 - t0) + (t3 - t2) + (t5 - t4), (t2 - t1) + (t4 - t3)}, slowest[3];
        MPI_Allreduce(mine, slowest, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (slowest[0] < t_total) t_total = slowest[0];
        if (slowest[1] < best_fft) best_fft = slowest[1];
        if (slowest[2] < best_transpose) best_transpose = slowest[2];
    }

    int status = 0;
    if (bench) {
        if (rank == 0)
            printf("fft3d %" PRId64 "^3 complex128, %d ranks (%d x %d pencils), FFTW_ESTIMATE: "
                   "%.6f s per forward FFT (min of %d; FFTs %.6f s, transposes %.6f s, each the min)\n",
                   N[0], size, dims[0], dims[1], t_total, iters, best_fft, best_transpose);
    } else {
        /* The serial 3-D transform of the whole array, on every rank. */
        const int64_t total = N[0] * N[1] * N[2];
        fftw_complex *g = alloc(total);
        fftw_plan serial = fftw_plan_dft_3d((int)N[0], (int)N[1], (int)N[2], g, g, FFTW_FORWARD,
                                            FFTW_ESTIMATE);
        for (int64_t i = 0; i < total; i++) value(i, g[i]);
        fftw_execute(serial);
        double err = 0, scale = 0, mine[2], all[2];
        for (int64_t i = 0; i < total; i++) scale = fmax(scale, hypot(g[i][0], g[i][1]));
        /* The z-pencil: element (x, y, z) of the box at c[(x*my + y)*NZ + z]. */
        for (int64_t x = 0; x < lx; x++)
            for (int64_t y = 0; y < my; y++)
                for (int64_t z = 0; z < N[2]; z++) {
                    const double *want = g[((ox + x) * N[1] + py + y) * N[2] + z];
                    const double *got = c[(x * my + y) * N[2] + z];
                    err = fmax(err, hypot(got[0] - want[0], got[1] - want[1]));
                }
        mine[0] = err;
        mine[1] = scale;
        MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double relative = all[0] / all[1];
        status = !(relative < 1e-10);
        if (rank == 0)
            printf("fft3d (%" PRId64 ", %" PRId64 ", %" PRId64 ") complex128, %d ranks (%d x %d pencils): "
                   "max relative error against FFTW's serial 3-D FFT %.3e: %s\n",
                   N[0], N[1], N[2], size, dims[0], dims[1], relative, status ? "FAILED" : "OK");
        fftw_destroy_plan(serial);
        fftw_free(g);
    }

    if (fx) fftw_destroy_plan(fx);
    if (fy) fftw_destroy_plan(fy);
    if (fz) fftw_destroy_plan(fz);
    fftw_free(a);
    fftw_free(b);
    fftw_free(c);
    dr_plan_destroy(x_to_y);
    dr_plan_destroy(y_to_z);
    fftw_cleanup();
    MPI_Finalize();
    return status;
}
