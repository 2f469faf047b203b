/* The redistributions of a 3-D FFT, with native grid layouts: bricks on a 3-D
 * process grid -> x-pencils -> y-pencils -> z-pencils -> bricks, each one
 * DistReshape plan between two layouts of MPI_COMM_WORLD, made once and
 * executed as a time-stepping code would. No sub-communicators: every step is
 * one direct exchange, each element moved once, straight to its owner.
 *
 * The global array is (NX, NY, NZ) = (18, 14, 11) doubles in C order (z
 * fastest); every element holds its global flat index (x*NY + y)*NZ + z, and
 * every element of every rank is checked after every step, against its box
 * (dr_plan_output_box) and against the box computed here with
 * dr_balanced_slab.
 *
 *   bricks:    x, y, z over the three axes of an MPI_Dims_create grid
 *   x-pencils: x whole; y over grid axis 0, z over grid axis 1 of a 2-D grid
 *   y-pencils: y whole; x over grid axis 0, z over grid axis 1
 *   z-pencils: z whole; x over grid axis 0, y over grid axis 1
 *
 *   mpiexec -n 8 ./fft_cycle_c     (2 x 2 x 2 bricks, 4 x 2 pencils)
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

static const int64_t N[3] = {18, 14, 11};

/* A layout's description, kept to compute its boxes independently. */
typedef struct {
    const char *name;
    int32_t grid_ndims;
    int32_t grid[3];
    int32_t axis_grid[3]; /* the grid axis splitting each array axis, or DR_SPLIT_NONE */
} spec;

/* Grid coordinate of `rank` along grid axis `g` (row-major). */
static int coord(const spec *s, int rank, int g) {
    int stride = 1;
    for (int h = g + 1; h < s->grid_ndims; h++) stride *= s->grid[h];
    return rank / stride % s->grid[g];
}

/* The box `rank` holds: balanced blocks along every split axis. */
static void box_of(const spec *s, int rank, int64_t off[3], int64_t len[3]) {
    for (int a = 0; a < 3; a++) {
        int g = s->axis_grid[a];
        if (g == DR_SPLIT_NONE) {
            off[a] = 0;
            len[a] = N[a];
        } else {
            CHECK(dr_balanced_slab(N[a], s->grid[g], coord(s, rank, g), &len[a], &off[a]));
        }
    }
}

static dr_layout *make_layout(const spec *s) {
    dr_layout *layout;
    CHECK(dr_layout_create(3, N, s->grid_ndims, s->grid, s->axis_grid, &layout));
    return layout;
}

/* Fills `buf` with the global indices of the box. */
static void fill(double *buf, const int64_t off[3], const int64_t len[3]) {
    int64_t i = 0;
    for (int64_t x = 0; x < len[0]; x++)
        for (int64_t y = 0; y < len[1]; y++)
            for (int64_t z = 0; z < len[2]; z++, i++)
                buf[i] = (double)(((off[0] + x) * N[1] + off[1] + y) * N[2] + off[2] + z);
}

/* Checks the plan's output box against the one computed here, and every element. */
static int check(const dr_plan *plan, const spec *s, int rank, const double *buf) {
    int64_t off[3], len[3], got_off[3], got_len[3];
    box_of(s, rank, off, len);
    CHECK(dr_plan_output_box(plan, got_off, got_len));
    for (int a = 0; a < 3; a++) {
        if (got_off[a] != off[a] || got_len[a] != len[a]) {
            fprintf(stderr, "rank %d, %s: box axis %d is [%" PRId64 ", +%" PRId64
                    ") but should be [%" PRId64 ", +%" PRId64 ")\n",
                    rank, s->name, a, got_off[a], got_len[a], off[a], len[a]);
            return 0;
        }
    }
    int64_t i = 0;
    for (int64_t x = 0; x < len[0]; x++)
        for (int64_t y = 0; y < len[1]; y++)
            for (int64_t z = 0; z < len[2]; z++, i++) {
                double want = (double)(((off[0] + x) * N[1] + off[1] + y) * N[2] + off[2] + z);
                if (buf[i] != want) {
                    fprintf(stderr, "rank %d, %s: element %" PRId64 " is %g, not %g\n", rank,
                            s->name, i, buf[i], want);
                    return 0;
                }
            }
    return 1;
}

static int64_t elems(const spec *s, int rank) {
    int64_t off[3], len[3];
    box_of(s, rank, off, len);
    return len[0] * len[1] * len[2];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int d3[3] = {0, 0, 0}, d2[2] = {0, 0};
    MPI_Dims_create(nranks, 3, d3);
    MPI_Dims_create(nranks, 2, d2);
    enum { STEPS = 4 };
    const spec layouts[STEPS + 1] = {
        {"bricks", 3, {d3[0], d3[1], d3[2]}, {0, 1, 2}},
        {"x-pencils", 2, {d2[0], d2[1]}, {DR_SPLIT_NONE, 0, 1}},
        {"y-pencils", 2, {d2[0], d2[1]}, {0, DR_SPLIT_NONE, 1}},
        {"z-pencils", 2, {d2[0], d2[1]}, {0, 1, DR_SPLIT_NONE}},
        {"bricks", 3, {d3[0], d3[1], d3[2]}, {0, 1, 2}},
    };

    /* The plans, made once. */
    dr_plan *plans[STEPS];
    int64_t most = 0;
    for (int k = 0; k < STEPS; k++) {
        dr_layout *from = make_layout(&layouts[k]), *to = make_layout(&layouts[k + 1]);
        CHECK(dr_plan_create_layouts(DR_DTYPE_FLOAT64, from, to, MPI_COMM_WORLD, &plans[k]));
        dr_layout_destroy(from);
        dr_layout_destroy(to);
        if (elems(&layouts[k], rank) > most) most = elems(&layouts[k], rank);
    }
    double *a = malloc((size_t)(most + 1) * sizeof *a), *b = malloc((size_t)(most + 1) * sizeof *b);
    int64_t off[3], len[3];
    box_of(&layouts[0], rank, off, len);
    fill(a, off, len);

    /* Three time steps of the cycle, every element checked after every step. */
    int ok = 1;
    for (int step = 0; step < 3 && ok; step++) {
        for (int k = 0; k < STEPS && ok; k++) {
            CHECK(dr_plan_execute(plans[k], a, b, most + 1));
            ok = check(plans[k], &layouts[k + 1], rank, b);
            double *t = a;
            a = b;
            b = t;
        }
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        dr_plan_stats stats;
        CHECK(dr_plan_stats_get(plans[1], &stats));
        printf("%s: bricks %dx%dx%d -> x -> y -> z pencils %dx%d -> bricks on %d ranks, "
               "3 cycles; rank 0 sends %" PRId64 " B to %d peers in x -> y\n",
               all_ok ? "ok" : "FAILED", d3[0], d3[1], d3[2], d2[0], d2[1], nranks,
               stats.bytes_sent, stats.peers_sent);
    }
    for (int k = 0; k < STEPS; k++) dr_plan_destroy(plans[k]);
    free(a);
    free(b);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
