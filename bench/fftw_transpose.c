/* A distributed 2-D transpose into FFTW's transposed-out layout: DistReshape
 * against FFTW-MPI's fftw_mpi_plan_many_transpose, in the same run.
 *
 * An (N, N) float64 array in rows over P ranks (N divisible by P, so that
 * FFTW's default blocks are the balanced ones) becomes its transpose in rows:
 * rank r holds rows [r N/P, (r+1) N/P) of the transposed array, i.e. columns
 * of the original stored column-major. DistReshape plans it as the same array
 * split on axis 1 instead of axis 0, with the output box (N, N/P) stored at
 * strides (1, N): the transposed rows, no copy.
 *
 * Debian's libfftw3-mpi is built against Open MPI: build the library with
 * Open MPI and this program with mpicc.openmpi, e.g.
 *   MPICC=mpicc.openmpi CARGO_TARGET_DIR=target/openmpi cargo build --release
 *   mpicc.openmpi -O2 -Iinclude bench/fftw_transpose.c -Ltarget/openmpi/release \
 *       -ldistreshape -lfftw3_mpi -lfftw3 -Wl,-rpath,$PWD/target/openmpi/release \
 *       -o target/fftw_transpose
 *   mpiexec.openmpi -n P target/fftw_transpose [N] [REPEAT] [estimate|measure]
 * Rank 0 prints the median over REPEAT runs (each between barriers, the max
 * over ranks) of both, and their ratio; both outputs are checked element by
 * element. */
#include <distreshape.h>
#include <fftw3-mpi.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        dr_status s_ = (call);                                                           \
        if (s_ != DR_SUCCESS) {                                                          \
            fprintf(stderr, "%s: %s\n", dr_status_string(s_), dr_last_error_message()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                \
        }                                                                                \
    } while (0)

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over `n` runs of the max over ranks of `seconds`. */
static double median_of_max(double *seconds, int n)
{
    MPI_Allreduce(MPI_IN_PLACE, seconds, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(seconds, (size_t)n, sizeof *seconds, by_value);
    return seconds[n / 2];
}

/* Every element of the transposed rows `out` (rank's rows from `first`). */
static long wrong_elements(const double *out, ptrdiff_t n, ptrdiff_t rows, ptrdiff_t first)
{
    long wrong = 0;
    for (ptrdiff_t j = 0; j < rows; j++)
        for (ptrdiff_t i = 0; i < n; i++)
            wrong += out[j * n + i] != (double)(i * n + first + j);
    return wrong;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    fftw_mpi_init();
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const ptrdiff_t n = argc > 1 ? atol(argv[1]) : 4096;
    const int repeat = argc > 2 ? atoi(argv[2]) : 9;
    const unsigned flags = argc > 3 && strcmp(argv[3], "measure") == 0 ? FFTW_MEASURE : FFTW_ESTIMATE;
    if (n % nranks != 0) {
        if (rank == 0)
            fprintf(stderr, "N = %td must be divisible by P = %d\n", n, nranks);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ptrdiff_t rows, first, trows, tfirst;
    ptrdiff_t alloc =
        fftw_mpi_local_size_2d_transposed(n, n, MPI_COMM_WORLD, &rows, &first, &trows, &tfirst);
    double *in = fftw_alloc_real((size_t)alloc), *out = fftw_alloc_real((size_t)alloc);
    fftw_plan fftw = fftw_mpi_plan_many_transpose(n, n, 1, FFTW_MPI_DEFAULT_BLOCK,
                                                  FFTW_MPI_DEFAULT_BLOCK, in, out, MPI_COMM_WORLD,
                                                  flags);

    const int64_t shape[2] = {n, n};
    const int32_t grid[1] = {nranks}, by_rows[2] = {0, DR_SPLIT_NONE},
                  by_columns[2] = {DR_SPLIT_NONE, 0};
    dr_layout *rows_layout, *columns_layout;
    CHECK(dr_layout_create(2, shape, 1, grid, by_rows, &rows_layout));
    CHECK(dr_layout_create(2, shape, 1, grid, by_columns, &columns_layout));
    const int64_t transposed[2] = {1, n};
    dr_plan *plan;
    CHECK(dr_plan_create_strided(DR_DTYPE_FLOAT64, rows_layout, NULL, columns_layout, transposed,
                                 MPI_COMM_WORLD, NULL, &plan));
    dr_layout_destroy(rows_layout);
    dr_layout_destroy(columns_layout);

    double *t_fftw = malloc((size_t)repeat * sizeof *t_fftw);
    double *t_dr = malloc((size_t)repeat * sizeof *t_dr);
    long wrong = 0;
    for (int k = 0; k < repeat + 1; k++) {
        for (ptrdiff_t i = 0; i < rows * n; i++)
            in[i] = (double)((first + i / n) * n + i % n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        fftw_execute(fftw);
        double t1 = MPI_Wtime();
        wrong += wrong_elements(out, n, trows, tfirst);
        memset(out, 0, (size_t)(trows * n) * sizeof *out);
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        CHECK(dr_plan_execute(plan, in, out, trows * n));
        double t3 = MPI_Wtime();
        wrong += wrong_elements(out, n, trows, tfirst);
        if (k > 0) /* the first run of each warms up */
            t_fftw[k - 1] = t1 - t0, t_dr[k - 1] = t3 - t2;
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double fftw_s = median_of_max(t_fftw, repeat), dr_s = median_of_max(t_dr, repeat);
    if (rank == 0)
        printf("fftw_transpose: N = %td, P = %d, %s, median of %d: FFTW-MPI %.2f ms, DistReshape "
               "%.2f ms, ratio %.2f, %ld wrong elements\n",
               n, nranks, flags == FFTW_MEASURE ? "FFTW_MEASURE" : "FFTW_ESTIMATE", repeat,
               fftw_s * 1e3, dr_s * 1e3, dr_s / fftw_s, wrong);
    dr_plan_destroy(plan);
    fftw_destroy_plan(fftw);
    fftw_free(in);
    fftw_free(out);
    free(t_fftw);
    free(t_dr);
    fftw_mpi_cleanup();
    MPI_Finalize();
    return wrong != 0;
}
