/* A pencil-distributed array reshaped: x-pencils of a (NX, NY, NZ) field on a
 * 2-D process grid become a (NX*NY, NZ) matrix in 2-D blocks on the same grid
 * (rows over grid axis 0, columns over grid axis 1), as a code would hand its
 * field to a dense solver; then, with a shape change back and uneven explicit
 * blocks, into (NX, NY, NZ) rows on a 1-D grid. One plan each, one direct
 * exchange each; the output shape is written with -1 and resolved as NumPy
 * does. Every element holds its global flat index, which a reshape keeps, and
 * every element of every rank is checked against the box dr_plan_output_box
 * reports and against the box computed here.
 *
 *   mpiexec -n 4 ./pencil_reshape_c
 */
#include <distreshape.h>
#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        dr_status s_ = (call);                                                   \
        if (s_ != DR_SUCCESS) {                                                  \
            fprintf(stderr, "%s failed: %s: %s\n", #call, dr_status_string(s_),  \
                    dr_last_error_message());                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                        \
        }                                                                        \
    } while (0)

enum { NX = 9, NY = 7, NZ = 10 };

/* Rank `rank`'s coordinates on a row-major grid of `dims[0] x dims[1]`. */
static void coords(int rank, const int dims[2], int c[2]) {
    c[0] = rank / dims[1];
    c[1] = rank % dims[1];
}

/* Checks the plan's output box and every element of `buf` (the box in C order
 * of a `ndims` shape `shape`). */
static int check(const dr_plan *plan, int ndims, const int64_t *shape, const int64_t *off,
                 const int64_t *len, const double *buf, int rank, const char *what) {
    int64_t got_off[3], got_len[3], count = 1;
    CHECK(dr_plan_output_box(plan, got_off, got_len));
    for (int a = 0; a < ndims; a++) {
        if (got_off[a] != off[a] || got_len[a] != len[a]) {
            fprintf(stderr, "rank %d, %s: box axis %d differs\n", rank, what, a);
            return 0;
        }
        count *= len[a];
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t rest = i, flat = 0, idx[3];
        for (int a = ndims - 1; a >= 0; a--) {
            idx[a] = off[a] + rest % len[a];
            rest /= len[a];
        }
        for (int a = 0; a < ndims; a++) flat = flat * shape[a] + idx[a];
        if (buf[i] != (double)flat) {
            fprintf(stderr, "rank %d, %s: element %" PRId64 " is %g, not %" PRId64 "\n", rank,
                    what, i, buf[i], flat);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int dims[2] = {0, 0}, c[2];
    MPI_Dims_create(nranks, 2, dims);
    coords(rank, dims, c);

    /* x-pencils: x whole, y over grid axis 0, z over grid axis 1 (balanced). */
    const int64_t field[3] = {NX, NY, NZ};
    int64_t off[3] = {0, 0, 0}, len[3] = {NX, 0, 0};
    CHECK(dr_balanced_slab(NY, dims[0], c[0], &len[1], &off[1]));
    CHECK(dr_balanced_slab(NZ, dims[1], c[1], &len[2], &off[2]));
    dr_layout *pencils, *to_matrix, *blocks, *rows;
    const int32_t x_pencil[3] = {DR_SPLIT_NONE, 0, 1};
    CHECK(dr_layout_create(3, field, 2, dims, x_pencil, &pencils));
    /* The (NX*NY, NZ) matrix in 2-D blocks, its row count written as -1 where it
     * is an output; as an input, a layout gives its whole shape. */
    const int64_t inferred[2] = {-1, NZ}, matrix[2] = {NX * NY, NZ};
    const int32_t block[2] = {0, 1};
    CHECK(dr_layout_create(2, inferred, 2, dims, block, &to_matrix));
    CHECK(dr_layout_create(2, matrix, 2, dims, block, &blocks));
    /* Rows of the field on a 1-D grid, uneven: rank 0 holds none, the last the most. */
    const int32_t line[1] = {nranks};
    const int32_t by_x[3] = {0, DR_SPLIT_NONE, DR_SPLIT_NONE};
    int64_t *lengths = calloc((size_t)nranks, sizeof *lengths);
    lengths[nranks - 1] = NX;
    if (nranks > 1) {
        lengths[nranks - 1] = NX - NX / 3;
        lengths[nranks / 2] += NX / 3;
    }
    CHECK(dr_layout_create(3, field, 1, line, by_x, &rows));
    CHECK(dr_layout_set_lengths(rows, 0, lengths));

    dr_plan *to_blocks, *to_rows;
    CHECK(dr_plan_create_layouts(DR_DTYPE_FLOAT64, pencils, to_matrix, MPI_COMM_WORLD, &to_blocks));
    CHECK(dr_plan_create_layouts(DR_DTYPE_FLOAT64, blocks, rows, MPI_COMM_WORLD, &to_rows));
    int64_t resolved[2], n_in = len[0] * len[1] * len[2], n_mid, n_out;
    CHECK(dr_plan_output(to_blocks, resolved, NULL, &n_mid));
    CHECK(dr_plan_output(to_rows, NULL, NULL, &n_out));

    double *in = malloc((size_t)(n_in + 1) * sizeof *in);
    double *mid = malloc((size_t)(n_mid + 1) * sizeof *mid);
    double *out = malloc((size_t)(n_out + 1) * sizeof *out);
    for (int64_t i = 0, x = 0; x < len[0]; x++)
        for (int64_t y = 0; y < len[1]; y++)
            for (int64_t z = 0; z < len[2]; z++, i++)
                in[i] = (double)(((off[0] + x) * NY + off[1] + y) * NZ + off[2] + z);
    CHECK(dr_plan_execute(to_blocks, in, mid, n_mid));
    CHECK(dr_plan_execute(to_rows, mid, out, n_out));

    /* The boxes as computed here. */
    int64_t m_off[2], m_len[2], r_off[3] = {0, 0, 0}, r_len[3] = {lengths[rank], NY, NZ};
    CHECK(dr_balanced_slab(NX * NY, dims[0], c[0], &m_len[0], &m_off[0]));
    CHECK(dr_balanced_slab(NZ, dims[1], c[1], &m_len[1], &m_off[1]));
    for (int r = 0; r < rank; r++) r_off[0] += lengths[r];
    int ok = resolved[0] == NX * NY && resolved[1] == NZ;
    ok = ok && check(to_blocks, 2, resolved, m_off, m_len, mid, rank, "pencils -> blocks");
    ok = ok && check(to_rows, 3, field, r_off, r_len, out, rank, "blocks -> rows");
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: (%d, %d, %d) x-pencils on %dx%d -> (%" PRId64 ", %d) blocks -> rows, %d ranks\n",
               all_ok ? "ok" : "FAILED", NX, NY, NZ, dims[0], dims[1], resolved[0], NZ, nranks);
    dr_plan_destroy(to_blocks);
    dr_plan_destroy(to_rows);
    dr_layout_destroy(pencils);
    dr_layout_destroy(to_matrix);
    dr_layout_destroy(blocks);
    dr_layout_destroy(rows);
    free(lengths);
    free(in);
    free(mid);
    free(out);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
