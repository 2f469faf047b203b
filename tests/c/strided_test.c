/* Strided local storage through the C ABI (dr_plan_create_strided,
 * dr_plan_create_strided_configured and dr_plan_create_strided_counted): each
 * side's box stored inside a larger
 * buffer at the strides of a padded array, the pointer at the box's first
 * element, with
 *   - a halo of 1 or 2 on every axis,
 *   - the pencil's own axis fastest (FFT-axis-contiguous pencils),
 *   - padding on the last axis (a real-to-complex 2(N/2+1)),
 *   - a leading dimension, row-major and column-major (2-D),
 *   - empty boxes (more ranks than rows);
 * through pencil transposes x->y, y->z, z->x on every 2-D grid of the rank
 * count (7x6x5 and 9x7, uneven), slabs to pencils and a reshape (7x6x5 to
 * (10, -1) in column-major storage with a leading dimension). Every buffer is
 * filled with sentinels, the input's box with global indices; after each
 * execution (blocking, then begin/wait) every output element is checked, every
 * sentinel of the output buffer must be untouched and the whole input buffer
 * unchanged. Each case runs under several option sets (defaults, tiny messages,
 * slots and run budgets, each way long runs at a stride may travel).
 *
 * Refusals: overlapping or non-positive strides on one rank only are
 * DR_ERROR_INVALID_STRIDES on every rank, naming the rank; in place on a plan one
 * rank made with strides is DR_ERROR_INVALID_STRIDES on every rank; an output
 * capacity below the span on one rank, and an input shorter than its span, are
 * DR_ERROR_BUFFER_TOO_SMALL on every rank; with counted strides, a wrong or
 * negative count, or a NULL pointer with a count, on one rank only is refused on
 * every rank. dr_plan_spans and dr_plan_strides are checked on every plan. */
#include "harness.h"

enum { MAXD = 3 };

/* What a gap holds: never a global index. */
#define SENTINEL ((int64_t)-777777)

/* One side's layout: shape, grid and the grid axis splitting each array axis. */
typedef struct {
    int nd;
    int64_t shape[MAXD];
    int grid_nd;
    int32_t grid[2];
    int32_t axes[MAXD];
} side;

/* How a side's box is stored: `halo` cells before and after it on every axis,
 * `extra_last` more cells after it on the array's last axis, `extra_fast` more on
 * the fastest axis of the storage (a leading dimension), the axes ordered with
 * `fast` fastest (-1: C order), or column-major; `dense` passes NULL strides. */
typedef struct {
    int halo;
    int extra_last, extra_fast;
    int fast;
    int colmajor;
    int dense;
    const char *name;
} spec;

/* A box in its buffer. */
typedef struct {
    int nd;
    int64_t off[MAXD], ext[MAXD];
    int64_t stride[MAXD];
    int64_t total; /* elements in the buffer */
    int64_t first; /* the box's first element in the buffer */
    int64_t span;  /* 1 + sum (ext-1)*stride, 0 for an empty box */
    int64_t *buf;
} store;

/* This rank's box of `s` (balanced blocks over the rank's row-major grid coordinates). */
static void box_of(const side *s, int64_t off[MAXD], int64_t ext[MAXD])
{
    int coord[2] = {0, 0};
    int r = test_rank;
    for (int g = s->grid_nd - 1; g >= 0; g--) {
        coord[g] = r % s->grid[g];
        r /= s->grid[g];
    }
    for (int k = 0; k < s->nd; k++) {
        if (s->axes[k] == DR_SPLIT_NONE) {
            off[k] = 0;
            ext[k] = s->shape[k];
        } else {
            int g = s->axes[k];
            CHECK_STATUS(dr_balanced_slab(s->shape[k], s->grid[g], coord[g], &ext[k], &off[k]),
                         DR_SUCCESS);
        }
    }
}

/* The buffer of this rank's box of `s` stored as `sp`, filled with sentinels. */
static void store_make(store *st, const side *s, const spec *sp)
{
    memset(st, 0, sizeof *st);
    st->nd = s->nd;
    box_of(s, st->off, st->ext);
    int order[MAXD], n = 0;
    if (sp->colmajor) {
        for (int k = s->nd - 1; k >= 0; k--) order[n++] = k;
    } else {
        for (int k = 0; k < s->nd; k++)
            if (k != sp->fast) order[n++] = k;
        if (sp->fast >= 0) order[n++] = sp->fast;
    }
    int64_t lo[MAXD], padded[MAXD];
    for (int k = 0; k < s->nd; k++) {
        int h = sp->dense ? 0 : sp->halo;
        lo[k] = h;
        padded[k] = st->ext[k] + 2 * h;
        if (!sp->dense && k == s->nd - 1) padded[k] += sp->extra_last;
        if (!sp->dense && k == order[s->nd - 1]) padded[k] += sp->extra_fast;
    }
    int64_t weight = 1;
    for (int i = s->nd - 1; i >= 0; i--) {
        st->stride[order[i]] = weight;
        weight *= padded[order[i]];
    }
    st->total = weight;
    st->first = 0;
    st->span = 1;
    int empty = 0;
    for (int k = 0; k < s->nd; k++) {
        st->first += lo[k] * st->stride[k];
        st->span += (st->ext[k] - 1) * st->stride[k];
        empty |= st->ext[k] == 0;
    }
    if (empty) st->span = 0;
    st->buf = malloc((size_t)(st->total + 1) * sizeof *st->buf);
    for (int64_t i = 0; i < st->total + 1; i++) st->buf[i] = SENTINEL;
}

/* Calls f(buffer position, global flat index) for every element of the box. */
#define FOR_BOX(st, s, pos, flat, body)                                                           \
    do {                                                                                          \
        int64_t idx_[MAXD] = {0, 0, 0};                                                           \
        int64_t count_ = 1;                                                                       \
        for (int k_ = 0; k_ < (st)->nd; k_++) count_ *= (st)->ext[k_];                            \
        for (int64_t e_ = 0; e_ < count_; e_++) {                                                 \
            int64_t pos = (st)->first, flat = 0;                                                  \
            for (int k_ = 0; k_ < (st)->nd; k_++) {                                               \
                pos += idx_[k_] * (st)->stride[k_];                                               \
                flat = flat * (s)->shape[k_] + (st)->off[k_] + idx_[k_];                          \
            }                                                                                     \
            body;                                                                                 \
            for (int k_ = (st)->nd - 1; k_ >= 0; k_--) {                                          \
                if (++idx_[k_] < (st)->ext[k_]) break;                                            \
                idx_[k_] = 0;                                                                     \
            }                                                                                     \
        }                                                                                         \
    } while (0)

/* The buffer with every box element at its global flat index, the gaps sentinels. */
static int64_t *expected(const store *st, const side *s)
{
    int64_t *want = malloc((size_t)(st->total + 1) * sizeof *want);
    for (int64_t i = 0; i < st->total + 1; i++) want[i] = SENTINEL;
    FOR_BOX(st, s, pos, flat, want[pos] = flat);
    return want;
}

/* A case's context, printed with its failures. */
static char where[256];

/* Compares a whole buffer with `want`: wrong box elements and touched gaps counted apart. */
static void compare(const char *what, const int64_t *got, const int64_t *want, int64_t total)
{
    int64_t wrong = 0, touched = 0, first_bad = -1;
    for (int64_t i = 0; i < total + 1; i++) {
        if (got[i] == want[i]) continue;
        if (first_bad < 0) first_bad = i;
        if (want[i] == SENTINEL)
            touched++;
        else
            wrong++;
    }
    if (wrong || touched) {
        fprintf(stderr,
                "rank %d: FAIL %s: %s: %" PRId64 " wrong element(s), %" PRId64
                " gap cell(s) touched; first at %" PRId64 " (got %" PRId64 ", want %" PRId64 ")\n",
                test_rank, where, what, wrong, touched, first_bad, got[first_bad], want[first_bad]);
        test_failures++;
    }
}

/* The option sets every case runs under. */
enum { NCONFIGS = 7, COUNTED = 6 };
static const char *config_name[NCONFIGS] = {
    "defaults", "tiny messages, slots and runs", "strided sends", "strided slots", "run messages",
    "direct reads", "counted strides"};

/* Creates the strided plan under option set `config` (the last through
 * dr_plan_create_strided_counted, with `nd` strides per side or 0 for NULL). */
static dr_status create(int config, dr_layout *in, const int64_t *in_strides, dr_layout *out,
                        const int64_t *out_strides, const int nd[2], dr_plan **plan)
{
    if (config == COUNTED)
        return dr_plan_create_strided_counted(DR_DTYPE_INT64, in, in_strides, in_strides ? nd[0] : 0, out,
                                              out_strides, out_strides ? nd[1] : 0, MPI_COMM_WORLD, NULL,
                                              plan);
    if (config == 0)
        return dr_plan_create_strided(DR_DTYPE_INT64, in, in_strides, out, out_strides,
                                      MPI_COMM_WORLD, NULL, plan);
    if (config == 1) {
        dr_plan_options o;
        CHECK_STATUS(dr_plan_options_default(&o), DR_SUCCESS);
        o.max_message_bytes = 40;
        o.slot_bytes = 24;
        o.run_budget = 2;
        o.window = 1;
        return dr_plan_create_strided(DR_DTYPE_INT64, in, in_strides, out, out_strides,
                                      MPI_COMM_WORLD, &o, plan);
    }
    dr_options *o = NULL;
    CHECK_STATUS(dr_options_create(&o), DR_SUCCESS);
    int sends = config == 2, slots = config == 3, runs = config == 4;
    CHECK_STATUS(dr_options_set(o, DR_OPTION_STRIDED_SENDS, sends), DR_SUCCESS);
    CHECK_STATUS(dr_options_set(o, DR_OPTION_STRIDED_SLOTS, slots), DR_SUCCESS);
    CHECK_STATUS(dr_options_set(o, DR_OPTION_RUN_MESSAGES, runs), DR_SUCCESS);
    if (config == 5) CHECK_STATUS(dr_options_set(o, DR_OPTION_DIRECT_READS, 1), DR_SUCCESS);
    dr_status status = dr_plan_create_strided_configured(DR_DTYPE_INT64, in, in_strides, out,
                                                         out_strides, MPI_COMM_WORLD, o, plan);
    CHECK_STATUS(dr_options_free(&o), DR_SUCCESS);
    return status;
}

static dr_layout *layout_of(const side *s)
{
    dr_layout *made = NULL;
    CHECK_STATUS(dr_layout_create(s->nd, s->shape, s->grid_nd, s->grid, s->axes, &made), DR_SUCCESS);
    return made;
}

/* The output side's shape with its -1 resolved by the input's element count. */
static side resolved(const side *in, const side *out)
{
    side r = *out;
    int64_t n = 1, known = 1;
    for (int k = 0; k < in->nd; k++) n *= in->shape[k];
    for (int k = 0; k < out->nd; k++)
        if (out->shape[k] >= 0) known *= out->shape[k];
    for (int k = 0; k < out->nd; k++)
        if (out->shape[k] < 0) r.shape[k] = n / known;
    return r;
}

/* One case: `in` stored as `isp` to `out` stored as `osp`, under every option set,
 * blocking and begin/wait, every element, gap and input cell checked. */
static void run_case(const char *name, const side *in, const spec *isp, const side *out_given,
                     const spec *osp)
{
    side out = resolved(in, out_given);
    dr_layout *lin = layout_of(in), *lout = layout_of(out_given);
    store a, b;
    store_make(&a, in, isp);
    store_make(&b, &out, osp);
    FOR_BOX(&a, in, pos, flat, a.buf[pos] = flat);
    int64_t *input_copy = malloc((size_t)(a.total + 1) * sizeof *input_copy);
    memcpy(input_copy, a.buf, (size_t)(a.total + 1) * sizeof *input_copy);
    int64_t *want = expected(&b, &out);
    for (int config = 0; config < NCONFIGS; config++) {
        snprintf(where, sizeof where, "%s, in %s, out %s, %s", name, isp->name, osp->name,
                 config_name[config]);
        dr_plan *plan = NULL;
        const int nd[2] = {in->nd, out.nd};
        dr_status made = create(config, lin, isp->dense ? NULL : a.stride, lout,
                                osp->dense ? NULL : b.stride, nd, &plan);
        if (!CHECK_STATUS(made, DR_SUCCESS)) {
            fprintf(stderr, "rank %d: case %s\n", test_rank, where);
            continue;
        }
        /* The boxes, spans and strides the plan reports. */
        int64_t off[MAXD], ext[MAXD], strides_in[MAXD], strides_out[MAXD], span_in = -1, span_out = -1;
        CHECK_STATUS(dr_plan_input_box(plan, off, ext), DR_SUCCESS);
        for (int k = 0; k < in->nd; k++) {
            CHECK_EQ(off[k], a.off[k], where);
            CHECK_EQ(ext[k], a.ext[k], where);
        }
        CHECK_STATUS(dr_plan_output_box(plan, off, ext), DR_SUCCESS);
        for (int k = 0; k < out.nd; k++) {
            CHECK_EQ(off[k], b.off[k], where);
            CHECK_EQ(ext[k], b.ext[k], where);
        }
        CHECK_STATUS(dr_plan_spans(plan, &span_in, &span_out), DR_SUCCESS);
        CHECK_EQ(span_in, a.span, where);
        CHECK_EQ(span_out, b.span, where);
        CHECK_STATUS(dr_plan_spans(plan, NULL, &span_out), DR_SUCCESS);
        CHECK_STATUS(dr_plan_strides(plan, strides_in, strides_out), DR_SUCCESS);
        for (int k = 0; k < in->nd; k++) CHECK_EQ(strides_in[k], a.stride[k], where);
        for (int k = 0; k < out.nd; k++) CHECK_EQ(strides_out[k], b.stride[k], where);
        CHECK_STATUS(dr_plan_strides(plan, NULL, strides_out), DR_SUCCESS);

        /* Blocking, with all of the buffer from the pointer as capacity. */
        for (int64_t i = 0; i < b.total + 1; i++) b.buf[i] = SENTINEL;
        if (!CHECK_STATUS(dr_plan_execute(plan, a.buf + a.first, b.buf + b.first, b.total - b.first),
                          DR_SUCCESS))
            fprintf(stderr, "rank %d: case %s\n", test_rank, where);
        compare("blocking: output buffer", b.buf, want, b.total);
        compare("blocking: input buffer", a.buf, input_copy, a.total);

        /* Non-blocking, the capacity exactly the span, the input's length its span. */
        for (int64_t i = 0; i < b.total + 1; i++) b.buf[i] = SENTINEL;
        dr_request *request = NULL;
        if (!CHECK_STATUS(dr_plan_execute_begin_sized(plan, a.buf + a.first, a.span, b.buf + b.first,
                                                      b.span, &request),
                          DR_SUCCESS))
            fprintf(stderr, "rank %d: case %s\n", test_rank, where);
        int done = 0;
        CHECK_STATUS(dr_request_test(&request, &done), DR_SUCCESS);
        CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
        CHECK(request == NULL);
        compare("begin/wait: output buffer", b.buf, want, b.total);
        compare("begin/wait: input buffer", a.buf, input_copy, a.total);

        /* Again with dr_plan_execute_begin: a plan executes repeatedly. */
        for (int64_t i = 0; i < b.total + 1; i++) b.buf[i] = SENTINEL;
        CHECK_STATUS(dr_plan_execute_begin(plan, a.buf + a.first, b.buf + b.first, b.span, &request),
                     DR_SUCCESS);
        CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
        compare("begin/wait again: output buffer", b.buf, want, b.total);
        compare("begin/wait again: input buffer", a.buf, input_copy, a.total);
        dr_plan_destroy(plan);
    }
    free(want);
    free(input_copy);
    free(a.buf);
    free(b.buf);
    dr_layout_destroy(lin);
    dr_layout_destroy(lout);
}

/* The storages a case runs through, for a side whose pencil axis is `fast`. */
static spec halo2_c = {2, 0, 0, -1, 0, 0, "halo 2, C order"};
static spec dense = {0, 0, 0, -1, 0, 1, "NULL strides"};

static spec fast_axis(int fast, int halo, int extra_last, const char *name)
{
    spec s = {halo, extra_last, 0, fast, 0, 0, name};
    return s;
}

/* The 2-D grids of P: (1, P), ..., (P, 1). */
static int grids_2d(int32_t grids[][2])
{
    int n = 0;
    for (int r = 1; r <= test_nranks; r++)
        if (test_nranks % r == 0) {
            grids[n][0] = r;
            grids[n][1] = test_nranks / r;
            n++;
        }
    return n;
}

/* The pencil of axis `a` of a 3-D array on a 2-D grid: the other axes split in order. */
static side pencil3(const int64_t shape[3], const int32_t grid[2], int a)
{
    side s = {3, {shape[0], shape[1], shape[2]}, 2, {grid[0], grid[1]}, {0, 0, 0}};
    int g = 0;
    for (int k = 0; k < 3; k++) s.axes[k] = k == a ? DR_SPLIT_NONE : g++;
    return s;
}

/* x->y, y->z and z->x on every 2-D grid of P, 7x6x5: (a) the input with a halo of
 * 2 in C order, the output stored pencil-axis-contiguous; the input
 * pencil-axis-contiguous with a halo of 1, the output pencil-axis-contiguous with
 * a halo of 2 and padding on the last axis; (b) NULL input strides, the output in
 * C order padded on its last axis to 2(n/2+1) (an r2c array). */
static void pencils_3d(void)
{
    const int64_t shape[3] = {7, 6, 5};
    int32_t grids[64][2];
    int ngrids = grids_2d(grids);
    for (int g = 0; g < ngrids; g++) {
        for (int from = 0; from < 3; from++) {
            int to = (from + 1) % 3;
            side in = pencil3(shape, grids[g], from), out = pencil3(shape, grids[g], to);
            char name[96];
            snprintf(name, sizeof name, "3-D pencils %c->%c on %dx%d", "xyz"[from], "xyz"[to],
                     grids[g][0], grids[g][1]);
            spec out_fast = fast_axis(to, 0, 0, "pencil axis fastest");
            run_case(name, &in, &halo2_c, &out, &out_fast);
            spec in_fast = fast_axis(from, 1, 0, "halo 1, pencil axis fastest");
            spec out_fast_pad = fast_axis(to, 2, 3, "halo 2, pencil axis fastest, last axis padded");
            run_case(name, &in, &in_fast, &out, &out_fast_pad);
            int64_t off[MAXD], ext[MAXD];
            box_of(&out, off, ext);
            spec r2c = {0, (int)(2 * (ext[2] / 2 + 1) - ext[2]), 0, -1, 0, 0,
                        "C order, last axis padded to 2(n/2+1)"};
            run_case(name, &in, &dense, &out, &r2c);
        }
    }
}

/* x->y and back on a 1-D grid, 9x7: the same storages in 2-D. */
static void pencils_2d(void)
{
    side x = {2, {9, 7}, 1, {test_nranks, 1}, {DR_SPLIT_NONE, 0}};
    side y = {2, {9, 7}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE}};
    spec y_fast = fast_axis(1, 0, 0, "y fastest (C order)"), x_fast = fast_axis(0, 0, 0, "x fastest");
    spec x_fast_halo = fast_axis(0, 2, 1, "halo 2, x fastest, last axis padded");
    run_case("2-D x->y", &x, &halo2_c, &y, &y_fast);
    run_case("2-D x->y", &x, &x_fast, &y, &halo2_c);
    run_case("2-D y->x", &y, &halo2_c, &x, &x_fast_halo);
    run_case("2-D y->x", &y, &dense, &x, &x_fast);
}

/* Slabs (axis 0 over P) with a halo of 2 to x-pencils stored x-fastest, on every
 * 2-D grid; and back from z-pencils with padding to slabs with NULL strides. */
static void slabs_to_pencils(void)
{
    const int64_t shape[3] = {7, 6, 5};
    side slabs = {3, {7, 6, 5}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE, DR_SPLIT_NONE}};
    int32_t grids[64][2];
    int ngrids = grids_2d(grids);
    for (int g = 0; g < ngrids; g++) {
        char name[96];
        snprintf(name, sizeof name, "slabs -> x-pencils on %dx%d", grids[g][0], grids[g][1]);
        side x = pencil3(shape, grids[g], 0), z = pencil3(shape, grids[g], 2);
        spec x_fast = fast_axis(0, 0, 0, "x fastest");
        run_case(name, &slabs, &halo2_c, &x, &x_fast);
        snprintf(name, sizeof name, "z-pencils on %dx%d -> slabs", grids[g][0], grids[g][1]);
        spec z_pad = fast_axis(2, 1, 2, "halo 1, last axis padded");
        run_case(name, &z, &z_pad, &slabs, &dense);
    }
}

/* A reshape: 7x6x5 z-pencils with a halo of 2 to (10, -1) = (10, 21) split by
 * columns, stored column-major with a leading dimension of 10 + 3 (a Fortran
 * array, a ScaLAPACK local matrix). */
static void reshape(void)
{
    const int64_t shape[3] = {7, 6, 5};
    int dims[2] = {0, 0};
    MPI_Dims_create(test_nranks, 2, dims);
    const int32_t grid[2] = {dims[0], dims[1]};
    side z = pencil3(shape, grid, 2);
    side cols = {2, {10, -1}, 1, {test_nranks, 1}, {DR_SPLIT_NONE, 0}};
    spec lld = {0, 0, 3, -1, 1, 0, "column-major, leading dimension +3"};
    run_case("reshape (7,6,5) -> (10,-1)", &z, &halo2_c, &cols, &lld);
    spec rows_ld = {0, 0, 2, -1, 0, 0, "row-major, leading dimension +2"};
    side rows = {2, {-1, 14}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE}};
    run_case("reshape (7,6,5) -> (-1,14)", &z, &dense, &rows, &rows_ld);
}

/* Leading dimensions in 2-D: 9x7 rows (row-major, lda = 7 + 3) to columns
 * (column-major, ldb = 9 + 2), and back. */
static void leading_dimensions(void)
{
    side rows = {2, {9, 7}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE}};
    side cols = {2, {9, 7}, 1, {test_nranks, 1}, {DR_SPLIT_NONE, 0}};
    spec lda = {0, 0, 3, -1, 0, 0, "row-major, lda = 7 + 3"};
    spec ldb = {0, 0, 2, -1, 1, 0, "column-major, ldb = 9 + 2"};
    run_case("leading dimensions rows -> columns", &rows, &lda, &cols, &ldb);
    run_case("leading dimensions columns -> rows", &cols, &ldb, &rows, &lda);
}

/* Empty boxes: (2, 3) rows over P to columns over P (more ranks than rows at
 * P >= 3, than columns at P >= 4), halos and column-major storage on both
 * sides; and (1, 13) to (13, 1) through a reshape. */
static void empty_boxes(void)
{
    side rows = {2, {2, 3}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE}};
    side cols = {2, {2, 3}, 1, {test_nranks, 1}, {DR_SPLIT_NONE, 0}};
    spec col_halo = {1, 0, 0, -1, 1, 0, "halo 1, column-major"};
    run_case("empty boxes rows -> columns", &rows, &halo2_c, &cols, &col_halo);
    run_case("empty boxes columns -> rows", &cols, &col_halo, &rows, &dense);
    side wide = {2, {1, 13}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE}};
    side tall = {2, {13, -1}, 1, {test_nranks, 1}, {DR_SPLIT_NONE, 0}};
    run_case("empty boxes (1,13) rows -> (13,1) columns", &wide, &halo2_c, &tall, &col_halo);
}

/* A plan refused with DR_ERROR_INVALID_STRIDES on every rank, the message naming
 * `rank` and holding `text`. */
static void refused(const char *what, dr_layout *in, const int64_t *in_strides, dr_layout *out,
                    const int64_t *out_strides, int rank, const char *text)
{
    dr_plan *plan = NULL;
    const int configs[3] = {0, 1, COUNTED}, nd[2] = {2, 2};
    for (int c = 0; c < 3; c++) {
        dr_status got = create(configs[c], in, in_strides, out, out_strides, nd, &plan);
        if (!CHECK_STATUS(got, DR_ERROR_INVALID_STRIDES)) {
            fprintf(stderr, "rank %d: refusal: %s\n", test_rank, what);
            dr_plan_destroy(plan);
            plan = NULL;
            continue;
        }
        CHECK_WHAT(plan == NULL, what);
        CHECK_NAMES_RANK(rank);
        CHECK_WHAT(strstr(dr_last_error_message(), text) != NULL, what);
    }
}

/* A (3, 40) array in columns (split along axis 1) and in rows (along axis 0):
 * every rank's column box has 3 rows and at least 5 columns at P <= 8. */
static void columns_and_rows(dr_layout **cols, dr_layout **rows)
{
    const int64_t shape[2] = {3, 40};
    const int32_t grid[1] = {test_nranks}, cols_axes[2] = {DR_SPLIT_NONE, 0};
    const int32_t rows_axes[2] = {0, DR_SPLIT_NONE};
    CHECK_STATUS(dr_layout_create(2, shape, 1, grid, cols_axes, cols), DR_SUCCESS);
    CHECK_STATUS(dr_layout_create(2, shape, 1, grid, rows_axes, rows), DR_SUCCESS);
}

/* Strides refused on one rank only; in place refused; short buffers refused. */
static void refusals(void)
{
    dr_layout *cols = NULL, *rows = NULL;
    columns_and_rows(&cols, &rows);
    side cside = {2, {3, 40}, 1, {test_nranks, 1}, {DR_SPLIT_NONE, 0}};
    int64_t off[MAXD], ext[MAXD];
    box_of(&cside, off, ext);
    const int last = test_nranks - 1;
    int64_t good[2] = {ext[1] + 4, 1};
    /* Two elements at one address on the last rank: both axes stride 1. */
    int64_t overlap[2] = {1, 1};
    refused("overlapping input strides on the last rank", cols,
            test_rank == last ? overlap : good, rows, NULL, last, "input_strides");
    /* Rows of 3 stepping over only 2 columns: (1,0) and (0,2) share an address. */
    int64_t short_step[2] = {2, 1};
    refused("rows stepping into each other on the last rank", cols,
            test_rank == last ? short_step : good, rows, NULL, last, "input_strides[0] = 2");
    /* Output strides, zero on rank 0. */
    side rside = {2, {3, 40}, 1, {test_nranks, 1}, {0, DR_SPLIT_NONE}};
    int64_t roff[MAXD], rext[MAXD];
    box_of(&rside, roff, rext);
    int64_t out_good[2] = {41, 1}, zero[2] = {40, 0};
    refused("a zero output stride on rank 0", cols, NULL, rows, test_rank == 0 && rext[0] > 0 ? zero : out_good,
            0, "output_strides[1] = 0");
    int64_t negative[2] = {-40, 1}, rows0, off0;
    CHECK_STATUS(dr_balanced_slab(3, test_nranks, 0, &rows0, &off0), DR_SUCCESS);
    if (rows0 > 1) /* the same on every rank */
        refused("a negative output stride on rank 0", cols, NULL, rows,
                test_rank == 0 ? negative : out_good, 0, "output_strides[0] = -40");

    /* In place on a plan only rank 0 made with strides: refused on every rank. */
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_plan_create_strided(DR_DTYPE_INT64, cols, test_rank == 0 ? good : NULL, rows,
                                        NULL, MPI_COMM_WORLD, NULL, &plan),
                 DR_SUCCESS);
    int64_t in_span = 0, out_span = 0;
    CHECK_STATUS(dr_plan_spans(plan, &in_span, &out_span), DR_SUCCESS);
    CHECK_EQ(in_span, test_rank == 0 ? 2 * good[0] + ext[1] : 3 * ext[1], "in span");
    CHECK_EQ(out_span, rext[0] * 40, "out span");
    int64_t n = (in_span > out_span ? in_span : out_span) + 64;
    int64_t *buf = malloc((size_t)n * sizeof *buf), *other = malloc((size_t)n * sizeof *other);
    for (int64_t i = 0; i < n; i++) buf[i] = other[i] = SENTINEL;
    CHECK_STATUS(dr_plan_execute(plan, buf, buf, n), DR_ERROR_INVALID_STRIDES);
    CHECK(strstr(dr_last_error_message(), "in place") != NULL);
    dr_request *request = NULL;
    CHECK_STATUS(dr_plan_execute_begin(plan, buf, buf, n, &request), DR_ERROR_INVALID_STRIDES);
    CHECK(request == NULL);
    int64_t untouched = 0;
    for (int64_t i = 0; i < n; i++) untouched += buf[i] == SENTINEL;
    CHECK_EQ(untouched, n, "in place refused: the buffer untouched");

    /* An output capacity one below the span on the last rank holding rows: every
     * rank refuses. */
    const int short_rank = (test_nranks < 3 ? test_nranks : 3) - 1;
    int collective = test_plan_is_collective(plan);
    int64_t cap = test_rank == short_rank ? out_span - 1 : out_span;
    dr_status want = collective || test_rank == short_rank ? DR_ERROR_BUFFER_TOO_SMALL : DR_SUCCESS;
    if (CHECK_STATUS(dr_plan_execute(plan, buf, other, cap), want) && want != DR_SUCCESS)
        CHECK_NAMES_RANK(short_rank);
    CHECK_STATUS(dr_plan_execute_begin(plan, buf, other, cap, &request), want);
    CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
    /* An input shorter than its span on rank 0. */
    int64_t in_elems = test_rank == 0 ? in_span - 1 : in_span;
    want = collective || test_rank == 0 ? DR_ERROR_BUFFER_TOO_SMALL : DR_SUCCESS;
    if (CHECK_STATUS(dr_plan_execute_sized(plan, buf, in_elems, other, out_span), want) &&
        want != DR_SUCCESS) {
        CHECK_NAMES_RANK(0);
        CHECK(strstr(dr_last_error_message(), "rank 0's input spans") != NULL);
    }
    /* The exact spans are enough. */
    CHECK_STATUS(dr_plan_execute_sized(plan, buf, in_span, other, out_span), DR_SUCCESS);
    dr_plan_destroy(plan);
    free(buf);
    free(other);
    dr_layout_destroy(cols);
    dr_layout_destroy(rows);
}

/* dr_plan_create_strided_counted refuses a count of strides that is not the
 * axis count (before reading anything: however large), a negative count and a
 * NULL pointer with a count, on one rank only, on every rank, naming that rank. */
static dr_status counted(const dr_layout *in, const int64_t *in_strides, int64_t in_count,
                         const dr_layout *out, const int64_t *out_strides, int64_t out_count)
{
    dr_plan *plan = NULL;
    dr_status status = dr_plan_create_strided_counted(DR_DTYPE_INT64, in, in_strides, in_count, out,
                                                      out_strides, out_count, MPI_COMM_WORLD, NULL, &plan);
    CHECK(status == DR_SUCCESS ? plan != NULL : plan == NULL);
    dr_plan_destroy(plan);
    return status;
}

static void counted_refusals(void)
{
    dr_layout *cols = NULL, *rows = NULL;
    columns_and_rows(&cols, &rows);
    const int last = test_nranks - 1;
    const int64_t good[2] = {64, 1};
    /* One stride for two axes on the last rank. */
    if (CHECK_STATUS(counted(cols, good, test_rank == last ? 1 : 2, rows, NULL, 0), DR_ERROR_INVALID_STRIDES)) {
        CHECK_NAMES_RANK(last);
        CHECK(strstr(dr_last_error_message(), "in_count = 1: ") != NULL);
    }
    /* Counts no array holds, on the last rank. */
    const int64_t huge[2] = {INT64_MAX, (int64_t)1 << 40};
    for (int k = 0; k < 2; k++)
        if (CHECK_STATUS(counted(cols, good, test_rank == last ? huge[k] : 2, rows, NULL, 0),
                         DR_ERROR_INVALID_STRIDES))
            CHECK_NAMES_RANK(last);
    /* A negative output count on rank 0. */
    if (CHECK_STATUS(counted(cols, NULL, 0, rows, good, test_rank == 0 ? -1 : 2), DR_ERROR_INVALID_STRIDES)) {
        CHECK_NAMES_RANK(0);
        CHECK(strstr(dr_last_error_message(), "out_count = -1") != NULL);
    }
    /* Two strides announced at NULL on rank 0. */
    if (CHECK_STATUS(counted(cols, test_rank == 0 ? NULL : good, 2, rows, NULL, 0), DR_ERROR_NULL_POINTER)) {
        CHECK_NAMES_RANK(0);
        CHECK(strstr(dr_last_error_message(), "in_strides is NULL") != NULL);
    }
    /* A count of 0 is C order whatever the pointer; the right counts plan. */
    CHECK_STATUS(counted(cols, good, 0, rows, NULL, 0), DR_SUCCESS);
    CHECK_STATUS(counted(cols, good, 2, rows, good, 2), DR_SUCCESS);
    dr_layout_destroy(cols);
    dr_layout_destroy(rows);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    pencils_3d();
    pencils_2d();
    slabs_to_pencils();
    reshape();
    leading_dimensions();
    empty_boxes();
    refusals();
    counted_refusals();
    return test_finish("strided_test");
}
