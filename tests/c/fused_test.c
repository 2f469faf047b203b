/* Fused plans through the C ABI (dr_fused_create, dr_fused_execute,
 * dr_fused_execute_agreeing, dr_fused_destroy) on the 2-D grid of
 * MPI_Dims_create:
 *   - the x -> y pencil transpose of a velocity field (float64, its three
 *     components: one plan fused three times) with the y -> x transpose of a
 *     scalar (float32) of other extents, on which more ranks than rows leave
 *     empty boxes;
 *   - the same plan three times alone;
 *   - a plan on strided storage (its input inside a halo of sentinels) fused
 *     with dense ones, and a plan that sends nothing (the identity of a layout,
 *     int64);
 *   - a large transpose (its pairs' traffic beyond the framing's 32 KiB) with
 *     the small scalar;
 *   - in place on one rank (the plans then run one after another) and on every
 *     rank, and the agreeing call with every field's lengths.
 * Field f holds the global C-order indices of its plan's array plus f *
 * FIELD_OFFSET; after every execution every output element is checked, the
 * sentinel past every output and every sentinel of the halos must be
 * untouched, and every input unchanged.
 *
 * Refusals agreed on every rank with one status: NULL arrays, a NULL buffer,
 * a field's output too small (the agreeing call), a caller's error, fields
 * sharing memory, a plan with an execution in flight, plans of two
 * communicators, plans in another order on rank 0, a NULL plan and a NULL
 * output pointer; where no communicator is known (nplans 0, NULL plans) on the
 * ranks that made the error. Last, plans destroyed before the fused object:
 * it still executes them, and destroying it frees them. */
#include "harness.h"

enum { MAXD = 3, MAXF = 8 };

/* What field f's elements hold beyond the global index: f times this (exact
 * in float32 for the small arrays here). */
#define FIELD_OFFSET 1000.0

/* What no execution may write: a halo element, the element past an output. */
#define SENTINEL (-7.0)

/* One side's layout: shape, grid and the grid axis splitting each array axis. */
typedef struct {
    int64_t shape[MAXD];
    int32_t axes[MAXD];
} side;

static int32_t grid[2];

/* This rank's box of `s`: balanced blocks over its row-major grid coordinates. */
static void box_of(const side *s, int64_t off[MAXD], int64_t ext[MAXD])
{
    int coord[2] = {test_rank / grid[1], test_rank % grid[1]};
    for (int k = 0; k < MAXD; k++) {
        if (s->axes[k] == DR_SPLIT_NONE) {
            off[k] = 0;
            ext[k] = s->shape[k];
        } else {
            int g = s->axes[k];
            CHECK_STATUS(dr_balanced_slab(s->shape[k], grid[g], coord[g], &ext[k], &off[k]),
                         DR_SUCCESS);
        }
    }
}

/* A plan of `dtype` from `in` to `out`; the input inside a halo of `halo`
 * elements on every axis (strided storage) when `halo` > 0. */
static dr_plan *plan_of(dr_dtype dtype, side in, side out, int halo, MPI_Comm comm)
{
    dr_layout *a = NULL, *b = NULL;
    dr_plan *plan = NULL;
    CHECK_STATUS(dr_layout_create(MAXD, in.shape, 2, grid, in.axes, &a), DR_SUCCESS);
    CHECK_STATUS(dr_layout_create(MAXD, out.shape, 2, grid, out.axes, &b), DR_SUCCESS);
    if (halo == 0) {
        CHECK_STATUS(dr_plan_create_layouts(dtype, a, b, comm, &plan), DR_SUCCESS);
    } else {
        int64_t off[MAXD], ext[MAXD], strides[MAXD], step = 1;
        box_of(&in, off, ext);
        for (int k = MAXD - 1; k >= 0; k--) {
            strides[k] = step;
            step *= ext[k] + 2 * halo;
        }
        CHECK_STATUS(dr_plan_create_strided(dtype, a, strides, b, NULL, comm, NULL, &plan),
                     DR_SUCCESS);
    }
    dr_layout_destroy(a);
    dr_layout_destroy(b);
    return plan;
}

/* A plan with what the oracle needs of it. */
typedef struct {
    dr_plan *plan;
    dr_dtype dtype;
    side in, out;
    int halo;
} planned;

static planned make(dr_dtype dtype, side in, side out, int halo)
{
    planned p = {plan_of(dtype, in, out, halo, MPI_COMM_WORLD), dtype, in, out, halo};
    return p;
}

static size_t size_of(dr_dtype dtype)
{
    return dtype == DR_DTYPE_FLOAT32 ? 4 : 8;
}

static void put(void *buf, dr_dtype dtype, int64_t at, double v)
{
    switch (dtype) {
    case DR_DTYPE_FLOAT32: ((float *)buf)[at] = (float)v; break;
    case DR_DTYPE_INT64: ((int64_t *)buf)[at] = (int64_t)v; break;
    default: ((double *)buf)[at] = v; break;
    }
}

static double get(const void *buf, dr_dtype dtype, int64_t at)
{
    switch (dtype) {
    case DR_DTYPE_FLOAT32: return ((const float *)buf)[at];
    case DR_DTYPE_INT64: return (double)((const int64_t *)buf)[at];
    default: return ((const double *)buf)[at];
    }
}

/* A field of a plan: its input (inside its halo of sentinels) and its output
 * (its box, then one sentinel), both with room for in place. */
typedef struct {
    const planned *p;
    double add;
    int64_t in_off[MAXD], in_ext[MAXD], in_stride[MAXD], in_first, in_total;
    int64_t out_off[MAXD], out_ext[MAXD], out_elems, in_elems;
    int64_t room; /* elements of the output buffer */
    void *in, *out;
} field;

/* Calls `visit(box, flat, global)` for every element of a box in C order. */
static int64_t global_of(const int64_t shape[MAXD], const int64_t off[MAXD], const int64_t idx[MAXD])
{
    return ((off[0] + idx[0]) * shape[1] + off[1] + idx[1]) * shape[2] + off[2] + idx[2];
}

static void fill_input(field *f)
{
    const planned *p = f->p;
    for (int64_t i = 0; i < f->in_total; i++) put(f->in, p->dtype, i, SENTINEL);
    int64_t idx[MAXD];
    for (idx[0] = 0; idx[0] < f->in_ext[0]; idx[0]++)
        for (idx[1] = 0; idx[1] < f->in_ext[1]; idx[1]++)
            for (idx[2] = 0; idx[2] < f->in_ext[2]; idx[2]++) {
                int64_t at = f->in_first;
                for (int k = 0; k < MAXD; k++) at += idx[k] * f->in_stride[k];
                put(f->in, p->dtype, at, (double)global_of(p->in.shape, f->in_off, idx) + f->add);
            }
}

static field make_field(const planned *p, int number)
{
    field f;
    memset(&f, 0, sizeof f);
    f.p = p;
    f.add = number * FIELD_OFFSET;
    box_of(&p->in, f.in_off, f.in_ext);
    box_of(&p->out, f.out_off, f.out_ext);
    int64_t step = 1;
    f.in_first = 0;
    for (int k = MAXD - 1; k >= 0; k--) {
        f.in_stride[k] = step;
        f.in_first += p->halo * step;
        step *= f.in_ext[k] + 2 * p->halo;
    }
    f.in_total = step;
    f.in_elems = f.in_ext[0] * f.in_ext[1] * f.in_ext[2];
    f.out_elems = f.out_ext[0] * f.out_ext[1] * f.out_ext[2];
    f.room = (f.in_elems > f.out_elems ? f.in_elems : f.out_elems) + 1;
    f.in = malloc((size_t)f.in_total * size_of(p->dtype) + 8);
    f.out = malloc((size_t)f.room * size_of(p->dtype));
    fill_input(&f);
    /* The library's boxes are the oracle's. */
    int64_t off[MAXD], ext[MAXD], in_span = 0, out_span = 0;
    CHECK_STATUS(dr_plan_input_box(p->plan, off, ext), DR_SUCCESS);
    for (int k = 0; k < MAXD; k++) CHECK(off[k] == f.in_off[k] && ext[k] == f.in_ext[k]);
    CHECK_STATUS(dr_plan_output_box(p->plan, off, ext), DR_SUCCESS);
    for (int k = 0; k < MAXD; k++) CHECK(off[k] == f.out_off[k] && ext[k] == f.out_ext[k]);
    CHECK_STATUS(dr_plan_spans(p->plan, &in_span, &out_span), DR_SUCCESS);
    CHECK_EQ(out_span, f.out_elems, "the output span");
    return f;
}

/* Fills the output buffer with sentinels. */
static void clear_output(field *f)
{
    for (int64_t i = 0; i < f->room; i++) put(f->out, f->p->dtype, i, SENTINEL);
}

/* The field's input pointer (its box's first element) and output pointer. */
static const void *input_of(const field *f)
{
    return (const char *)f->in + (size_t)f->in_first * size_of(f->p->dtype);
}

/* The number of wrong elements of the output in `buf` (its box in C order,
 * then, unless in place, one sentinel). */
static int64_t wrong_output(const field *f, const void *buf, int sentinel)
{
    const planned *p = f->p;
    int64_t wrong = 0, idx[MAXD], at = 0;
    for (idx[0] = 0; idx[0] < f->out_ext[0]; idx[0]++)
        for (idx[1] = 0; idx[1] < f->out_ext[1]; idx[1]++)
            for (idx[2] = 0; idx[2] < f->out_ext[2]; idx[2]++)
                wrong += get(buf, p->dtype, at++) !=
                         (double)global_of(p->out.shape, f->out_off, idx) + f->add;
    if (sentinel) wrong += get(buf, p->dtype, f->out_elems) != SENTINEL;
    return wrong;
}

/* The number of elements of the input buffer (halo included) that changed. */
static int64_t changed_input(field *f)
{
    size_t bytes = (size_t)f->in_total * size_of(f->p->dtype);
    void *copy = malloc(bytes + 8);
    memcpy(copy, f->in, bytes);
    fill_input(f);
    int64_t changed = 0;
    for (int64_t i = 0; i < f->in_total; i++)
        changed += get(copy, f->p->dtype, i) != get(f->in, f->p->dtype, i);
    free(copy);
    return changed;
}

static void free_field(field *f)
{
    free(f->in);
    free(f->out);
}

/* Fuses the plans of `fields` and executes them out of place twice, checking
 * every element after each; returns the fused object (the caller destroys it). */
static dr_fused *fuse_and_check(const char *name, field *fields, int n)
{
    const dr_plan *plans[MAXF] = {0};
    const void *in[MAXF] = {0};
    void *out[MAXF] = {0};
    for (int i = 0; i < n; i++) {
        plans[i] = fields[i].p->plan;
        in[i] = input_of(&fields[i]);
        out[i] = fields[i].out;
    }
    dr_fused *fused = NULL;
    CHECK_STATUS(dr_fused_create(n, plans, &fused), DR_SUCCESS);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) clear_output(&fields[i]);
        if (!CHECK_STATUS(dr_fused_execute(fused, in, out), DR_SUCCESS))
            fprintf(stderr, "rank %d: case %s\n", test_rank, name);
        for (int i = 0; i < n; i++) {
            CHECK_EQ(wrong_output(&fields[i], fields[i].out, 1), 0, name);
            CHECK_EQ(changed_input(&fields[i]), 0, name);
        }
    }
    return fused;
}

/* The same through dr_fused_execute_agreeing with every field's lengths. */
static void check_agreeing(const char *name, dr_fused *fused, field *fields, int n)
{
    const void *in[MAXF] = {0};
    void *out[MAXF] = {0};
    int64_t in_elems[MAXF] = {0}, capacities[MAXF] = {0};
    for (int i = 0; i < n; i++) {
        clear_output(&fields[i]);
        in[i] = input_of(&fields[i]);
        out[i] = fields[i].out;
        in_elems[i] = fields[i].in_total - fields[i].in_first;
        capacities[i] = fields[i].out_elems;
    }
    CHECK_STATUS(dr_fused_execute_agreeing(fused, in, in_elems, out, capacities, DR_SUCCESS, NULL),
                 DR_SUCCESS);
    for (int i = 0; i < n; i++) CHECK_EQ(wrong_output(&fields[i], fields[i].out, 1), 0, name);
}

/* In place: field 0 in place on rank `who` (every rank when -1), the others
 * out of place. */
static void check_in_place(const char *name, field *fields, int n, int who)
{
    const dr_plan *plans[MAXF] = {0};
    const void *in[MAXF] = {0};
    void *out[MAXF] = {0};
    for (int i = 0; i < n; i++) {
        plans[i] = fields[i].p->plan;
        clear_output(&fields[i]);
        in[i] = input_of(&fields[i]);
        out[i] = fields[i].out;
    }
    int here = who < 0 || who == test_rank;
    if (here) {
        /* The input box in C order at the start of the output buffer. */
        field *f = &fields[0];
        int64_t idx[MAXD], at = 0;
        for (idx[0] = 0; idx[0] < f->in_ext[0]; idx[0]++)
            for (idx[1] = 0; idx[1] < f->in_ext[1]; idx[1]++)
                for (idx[2] = 0; idx[2] < f->in_ext[2]; idx[2]++)
                    put(f->out, f->p->dtype, at++,
                        (double)global_of(f->p->in.shape, f->in_off, idx) + f->add);
        in[0] = f->out;
    }
    dr_fused *fused = NULL;
    CHECK_STATUS(dr_fused_create(n, plans, &fused), DR_SUCCESS);
    CHECK_STATUS(dr_fused_execute(fused, in, out), DR_SUCCESS);
    for (int i = 0; i < n; i++)
        CHECK_EQ(wrong_output(&fields[i], fields[i].out, !(here && i == 0)), 0, name);
    dr_fused_destroy(fused);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int dims[2] = {0, 0};
    MPI_Dims_create(test_nranks, 2, dims);
    grid[0] = dims[0];
    grid[1] = dims[1];
    const int32_t N = DR_SPLIT_NONE;
    side vx = {{7, 6, 5}, {N, 0, 1}}, vy = {{7, 6, 5}, {0, N, 1}};
    side sy = {{9, 4, 3}, {0, N, 1}}, sx = {{9, 4, 3}, {N, 0, 1}};
    side lx = {{40, 36, 32}, {N, 0, 1}}, ly = {{40, 36, 32}, {0, N, 1}};
    side ix = {{5, 8, 3}, {N, 0, 1}};

    planned velocity = make(DR_DTYPE_FLOAT64, vx, vy, 0);
    planned scalar = make(DR_DTYPE_FLOAT32, sy, sx, 0);
    planned halo = make(DR_DTYPE_FLOAT64, vx, vy, 1);
    planned still = make(DR_DTYPE_INT64, ix, ix, 0);
    planned large = make(DR_DTYPE_FLOAT64, lx, ly, 0);
    dr_plan_stats stats;
    CHECK_STATUS(dr_plan_stats_get(still.plan, &stats), DR_SUCCESS);
    CHECK_EQ(stats.bytes_sent + stats.bytes_received, 0, "the identity plan sends nothing");

    /* The velocity's three components and the scalar, in one round. */
    field vs[4] = {make_field(&velocity, 0), make_field(&velocity, 1), make_field(&velocity, 2),
                   make_field(&scalar, 3)};
    dr_fused *fused = fuse_and_check("velocity and scalar", vs, 4);
    check_agreeing("velocity and scalar, agreeing", fused, vs, 4);

    /* Refusals on this fused object, the same status on every rank. */
    const void *in[4];
    void *out[4];
    int64_t caps[4];
    for (int i = 0; i < 4; i++) {
        in[i] = input_of(&vs[i]);
        out[i] = vs[i].out;
        caps[i] = vs[i].out_elems;
    }
    int last = test_nranks - 1;
    CHECK_STATUS(dr_fused_execute(fused, test_rank == last ? NULL : in, out), DR_ERROR_NULL_POINTER);
    CHECK_NAMES_RANK(last);
    CHECK(strstr(dr_last_error_message(), "in is NULL") != NULL);
    CHECK_STATUS(dr_fused_execute(fused, in, test_rank == 0 ? NULL : out), DR_ERROR_NULL_POINTER);
    CHECK_NAMES_RANK(0);
    void *out_null[4] = {out[0], out[1], out[2], out[3]};
    if (test_rank == last) out_null[3] = NULL;
    if (test_any(test_rank == last && vs[3].out_elems > 0)) {
        CHECK_STATUS(dr_fused_execute(fused, in, out_null), DR_ERROR_NULL_POINTER);
        CHECK(strstr(dr_last_error_message(), "field 3") != NULL);
    }
    int short_here = test_rank == last && vs[1].out_elems > 0;
    int64_t short_caps[4] = {caps[0], caps[1] - short_here, caps[2], caps[3]};
    if (test_any(short_here)) {
        CHECK_STATUS(dr_fused_execute_agreeing(fused, in, NULL, out, short_caps, DR_SUCCESS, NULL),
                     DR_ERROR_BUFFER_TOO_SMALL);
        CHECK(strstr(dr_last_error_message(), "field 1") != NULL);
        CHECK_NAMES_RANK(last);
    }
    int64_t negative[4] = {-1, 0, 0, 0};
    CHECK_STATUS(dr_fused_execute_agreeing(fused, in, test_rank == 0 ? negative : NULL, out, NULL,
                                           DR_SUCCESS, NULL),
                 DR_ERROR_BUFFER_TOO_SMALL);
    CHECK(strstr(dr_last_error_message(), "in_elems[0] = -1") != NULL);
    int failing = test_rank == last;
    CHECK_STATUS(dr_fused_execute_agreeing(fused, failing ? NULL : in, NULL, failing ? NULL : out,
                                           NULL, failing ? DR_ERROR_OUT_OF_MEMORY : DR_SUCCESS,
                                           "the caller's own buffers"),
                 DR_ERROR_OUT_OF_MEMORY);
    CHECK(strstr(dr_last_error_message(), "the caller's own buffers") != NULL);
    void *shared[4] = {out[0], out[0], out[2], out[3]};
    if (test_any(vs[0].out_elems > 0)) {
        CHECK_STATUS(dr_fused_execute(fused, in, shared), DR_ERROR_ALIASING);
        CHECK(strstr(dr_last_error_message(), "fields 0 and 1") != NULL);
    }
    dr_request *request = NULL;
    clear_output(&vs[0]);
    CHECK_STATUS(dr_plan_execute_begin(velocity.plan, in[0], out[0], caps[0], &request),
                 DR_SUCCESS);
    int pending = test_any(request != NULL);
    CHECK_STATUS(dr_fused_execute(fused, in, out),
                 pending ? DR_ERROR_EXECUTION_IN_PROGRESS : DR_SUCCESS);
    CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
    CHECK_STATUS(dr_fused_execute(NULL, in, out), DR_ERROR_NULL_POINTER);
    /* After the refusals it works. */
    for (int i = 0; i < 4; i++) clear_output(&vs[i]);
    CHECK_STATUS(dr_fused_execute(fused, in, out), DR_SUCCESS);
    for (int i = 0; i < 4; i++) CHECK_EQ(wrong_output(&vs[i], vs[i].out, 1), 0, "after refusals");
    dr_fused_destroy(fused);

    /* One plan three times: one batch in the round. */
    dr_fused_destroy(fuse_and_check("the same plan three times", vs, 3));

    /* Strided storage with dense plans, and a plan that sends nothing. */
    field mixed[4] = {make_field(&halo, 0), make_field(&scalar, 1), make_field(&still, 2),
                      make_field(&velocity, 3)};
    fused = fuse_and_check("strided, dense and nothing to send", mixed, 4);
    check_agreeing("strided, dense and nothing to send, agreeing", fused, mixed, 4);
    dr_fused_destroy(fused);
    dr_fused_destroy(fuse_and_check("nothing to send alone", &mixed[2], 1));
    field nothing_first[2] = {make_field(&still, 0), make_field(&scalar, 1)};
    dr_fused_destroy(fuse_and_check("nothing to send, then the scalar", nothing_first, 2));

    /* Long messages (not framed) with the small scalar (framed with nothing). */
    field big[3] = {make_field(&large, 0), make_field(&scalar, 1), make_field(&large, 2)};
    dr_fused_destroy(fuse_and_check("large and small", big, 3));

    /* In place on the last rank only, then on every rank. */
    check_in_place("in place on one rank", vs, 4, last);
    check_in_place("in place everywhere", vs, 4, -1);
    field in_place_scalar[2] = {make_field(&scalar, 0), make_field(&velocity, 1)};
    check_in_place("the scalar in place everywhere", in_place_scalar, 2, -1);

    /* Refusals of creation. */
    const dr_plan *two[2] = {velocity.plan, scalar.plan};
    const dr_plan *swapped[2] = {scalar.plan, velocity.plan};
    dr_fused *refused = NULL;
    if (test_nranks > 1) {
        CHECK_STATUS(dr_fused_create(2, test_rank == 0 ? swapped : two, &refused),
                     DR_ERROR_INCONSISTENT_ARGUMENTS);
        CHECK(refused == NULL);
    }
    const dr_plan *with_null[2] = {velocity.plan, test_rank == last ? NULL : scalar.plan};
    CHECK_STATUS(dr_fused_create(2, with_null, &refused), DR_ERROR_NULL_POINTER);
    CHECK_NAMES_RANK(last);
    CHECK(strstr(dr_last_error_message(), "plans[1] is NULL") != NULL);
    CHECK_STATUS(dr_fused_create(2, two, test_rank == 0 ? NULL : &refused), DR_ERROR_NULL_POINTER);
    CHECK_NAMES_RANK(0);
    CHECK(refused == NULL);
    CHECK_STATUS(dr_fused_create(0, two, &refused), DR_ERROR_INVALID_SHAPE);
    CHECK_STATUS(dr_fused_create(2, NULL, &refused), DR_ERROR_NULL_POINTER);
    const dr_plan *first_null[2] = {NULL, scalar.plan};
    CHECK_STATUS(dr_fused_create(2, first_null, &refused), DR_ERROR_NULL_POINTER);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    dr_plan *other = plan_of(DR_DTYPE_FLOAT32, sy, sx, 0, dup);
    const dr_plan *two_comms[3] = {velocity.plan, scalar.plan, other};
    CHECK_STATUS(dr_fused_create(3, two_comms, &refused), DR_ERROR_INVALID_COMMUNICATOR);
    CHECK(strstr(dr_last_error_message(), "plans[2]") != NULL);
    dr_plan_destroy(other);
    MPI_Comm_free(&dup);
    CHECK_STATUS(dr_plan_execute_begin(velocity.plan, in[0], out[0], caps[0], &request),
                 DR_SUCCESS);
    pending = test_any(request != NULL);
    CHECK_STATUS(dr_fused_create(2, two, &refused),
                 pending ? DR_ERROR_EXECUTION_IN_PROGRESS : DR_SUCCESS);
    CHECK_STATUS(dr_request_wait(&request), DR_SUCCESS);
    dr_fused_destroy(refused);

    /* Plans destroyed before the fused object: it keeps them. */
    planned v2 = make(DR_DTYPE_FLOAT64, vx, vy, 0), s2 = make(DR_DTYPE_FLOAT32, sy, sx, 0);
    field kept[3] = {make_field(&v2, 0), make_field(&s2, 1), make_field(&v2, 2)};
    const dr_plan *kept_plans[3] = {v2.plan, s2.plan, v2.plan};
    fused = NULL;
    CHECK_STATUS(dr_fused_create(3, kept_plans, &fused), DR_SUCCESS);
    dr_plan_destroy(v2.plan);
    CHECK_STATUS(dr_plan_free(&s2.plan), DR_SUCCESS);
    CHECK(s2.plan == NULL);
    const void *kin[3];
    void *kout[3];
    for (int i = 0; i < 3; i++) {
        clear_output(&kept[i]);
        kin[i] = input_of(&kept[i]);
        kout[i] = kept[i].out;
    }
    CHECK_STATUS(dr_fused_execute(fused, kin, kout), DR_SUCCESS);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(wrong_output(&kept[i], kept[i].out, 1), 0, "plans destroyed first");
    dr_fused_destroy(fused);
    dr_fused_destroy(NULL);

    for (int i = 0; i < 4; i++) {
        free_field(&vs[i]);
        free_field(&mixed[i]);
    }
    for (int i = 0; i < 3; i++) {
        free_field(&big[i]);
        free_field(&kept[i]);
    }
    for (int i = 0; i < 2; i++) {
        free_field(&nothing_first[i]);
        free_field(&in_place_scalar[i]);
    }
    dr_plan_destroy(velocity.plan);
    dr_plan_destroy(scalar.plan);
    dr_plan_destroy(halo.plan);
    dr_plan_destroy(still.plan);
    dr_plan_destroy(large.plan);
    return test_finish("fused_test");
}
