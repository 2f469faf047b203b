/* Every dr_status a caller can provoke with bad input, through the C ABI.
 *
 * Each case starts from a valid reshape of a (8, 6) array split along 0 into
 * a (4, 12) array split along 1, and spoils ONE argument on ONE rank (the
 * last one, which is non-zero whenever there is more than one rank). Then:
 *  - every rank must return the same, expected status (no hang: ctest has a
 *    timeout),
 *  - the message (dr_last_error_message) must be non-empty and, for errors
 *    one rank finds alone, name that rank,
 *  - the input must be unchanged and the output untouched,
 *  - a correct call right afterwards must still succeed (separate buffers
 *    and in place, every element checked).
 * Not provoked here: DR_ERROR_OUT_OF_MEMORY, DR_ERROR_MPI and
 * DR_ERROR_INTERNAL (no bad argument leads to them), and
 * DR_ERROR_MPI_NOT_INITIALIZED (see not_initialized_test.c). The calls of 0.3
 * (dr_reshape_to, dr_plan_create_with_options, dr_plan_execute_sized) go through
 * the same checks. */
#include "harness.h"

enum { ROWS = 8, COLS = 6, NEW_ROWS = 4, NEW_COLS = 12, ARENA = 2 * ROWS * COLS + 8 };

static int rank, nranks, bad_rank;

/* All arguments of one dr_reshape / dr_plan_create / dr_plan_execute call. */
struct call {
    const void *buf;
    dr_dtype dtype;
    int32_t ndims;
    const int64_t *gshape;
    int32_t split;
    MPI_Comm comm;
    int64_t local_len;
    int32_t new_ndims;
    const int64_t *new_gshape;
    int32_t new_split;
    int64_t new_local_len; /* dr_plan_create and dr_reshape_to only */
    void *out;
    int64_t out_capacity;
    int64_t *new_local_elems;
    dr_plan **plan;        /* dr_plan_create only */
    int64_t in_elems;      /* dr_plan_execute_sized only */
    dr_plan_options options; /* dr_plan_create_with_options only */
};

enum api { RESHAPE, RESHAPE_TO, PLAN_CREATE, PLAN_CREATE_WITH_OPTIONS, PLAN_EXECUTE,
           PLAN_EXECUTE_SIZED };

static const int64_t gshape[2] = {ROWS, COLS};
static const int64_t new_gshape[2] = {NEW_ROWS, NEW_COLS};
static const int64_t other_new_gshape[2] = {NEW_COLS, NEW_ROWS};
static const int64_t two_inferred[2] = {-1, -1};
static const int64_t too_many_dims[DR_MAX_DIMS + 1] = {ROWS, COLS, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                       1,    1,    1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                       1,    1,    1, 1, 1, 1, 1, 1, 1, 1, 1};
static const int64_t negative_extent[2] = {ROWS, -COLS};
static const int64_t overflowing[2] = {INT64_MAX, 2};
static const int64_t empty_gshape[2] = {0, COLS};
static const int64_t inferred_with_zero[2] = {-1, 0};
static double arena[ARENA];          /* input at the front, output behind it */
static int64_t elems_written;
static dr_plan *created_plan;

static void check(int ok, const char *case_name, const char *what)
{
    if (!ok) {
        printf("rank %d: FAIL %s: %s\n", rank, case_name, what);
        test_failures++;
    }
}

/* A valid call: this rank's balanced rows of the input, output behind it. */
static struct call valid_call(void)
{
    int64_t len, offset, new_len, new_offset;
    dr_balanced_slab(ROWS, nranks, rank, &len, &offset);
    dr_balanced_slab(NEW_COLS, nranks, rank, &new_len, &new_offset);
    struct call c = {arena, DR_DTYPE_FLOAT64, 2, gshape, 0, MPI_COMM_WORLD, len, 2, new_gshape, 1,
                     -1, arena + ROWS * COLS, NEW_ROWS * new_len, &elems_written, &created_plan,
                     len * COLS, {0, 0, 0, 0, 0}};
    dr_plan_options_default(&c.options);
    return c;
}

/* Input: global flat indices of this rank's rows; output: sentinel -1. */
static void fill_arena(void)
{
    int64_t len, offset;
    dr_balanced_slab(ROWS, nranks, rank, &len, &offset);
    for (int i = 0; i < ARENA; i++)
        arena[i] = i < len * COLS ? (double)(offset * COLS + i) : -1.0;
}

static dr_status run(enum api api, const struct call *c, const dr_plan *plan)
{
    switch (api) {
    case RESHAPE:
        return dr_reshape(c->buf, c->dtype, c->ndims, c->gshape, c->split, c->comm, c->local_len,
                          c->new_ndims, c->new_gshape, c->new_split, c->out, c->out_capacity,
                          c->new_local_elems);
    case RESHAPE_TO:
        return dr_reshape_to(c->buf, c->dtype, c->ndims, c->gshape, c->split, c->comm,
                             c->local_len, c->new_ndims, c->new_gshape, c->new_split,
                             c->new_local_len, c->out, c->out_capacity, c->new_local_elems);
    case PLAN_CREATE:
        return dr_plan_create(c->dtype, c->ndims, c->gshape, c->split, c->comm, c->local_len,
                              c->new_ndims, c->new_gshape, c->new_split, c->new_local_len,
                              c->plan);
    case PLAN_CREATE_WITH_OPTIONS:
        return dr_plan_create_with_options(c->dtype, c->ndims, c->gshape, c->split, c->comm,
                                           c->local_len, c->new_ndims, c->new_gshape,
                                           c->new_split, c->new_local_len, &c->options, c->plan);
    case PLAN_EXECUTE:
        return dr_plan_execute(plan, c->buf, c->out, c->out_capacity);
    case PLAN_EXECUTE_SIZED:
        return dr_plan_execute_sized(plan, c->buf, c->in_elems, c->out, c->out_capacity);
    }
    return DR_ERROR_INTERNAL;
}

/* A correct reshape (separate buffers, then in place) with every element
 * checked; collective. Returns whether it worked on this rank. */
static int correct_call_works(void)
{
    struct call c = valid_call();
    fill_arena();
    dr_status status = run(RESHAPE, &c, NULL);
    int64_t new_len, new_offset;
    dr_balanced_slab(NEW_COLS, nranks, rank, &new_len, &new_offset);
    int ok = status == DR_SUCCESS && elems_written == NEW_ROWS * new_len;
    const double *out = c.out;
    for (int64_t i = 0; ok && i < elems_written; i++)
        ok = out[i] == (double)(i / new_len * NEW_COLS + new_offset + i % new_len);

    /* In place: out == buf, the buffer holding the larger of input and output. */
    fill_arena();
    c.out = arena;
    c.out_capacity = ARENA;
    status = run(RESHAPE, &c, NULL);
    ok = ok && status == DR_SUCCESS;
    for (int64_t i = 0; ok && i < elems_written; i++)
        ok = arena[i] == (double)(i / new_len * NEW_COLS + new_offset + i % new_len);
    return ok;
}

/* What the message must say about ranks: NAMES_RANK "rank <who>" (an error
 * one rank found), ANY_RANK some "rank" (all ranks found it, e.g. a mismatch),
 * NO_RANK nothing (a bad communicator has no ranks to name). */
enum rank_check { NAMES_RANK, ANY_RANK, NO_RANK };

/* Runs one failing call (c as spoiled on this rank) and checks everything the
 * ABI promises about failures. */
static void expect_failure(const char *name, enum api api, const struct call *c,
                           const dr_plan *plan, dr_status expected, enum rank_check names_rank,
                           int who)
{
    double before[ARENA];
    fill_arena();
    memcpy(before, arena, sizeof arena);
    elems_written = -12345;
    created_plan = NULL;

    dr_status status = run(api, c, plan);

    int *all = malloc((size_t)nranks * sizeof *all);
    int mine = (int)status;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < nranks; r++)
        if (all[r] != all[0])
            check(0, name, "ranks returned different statuses");
    free(all);
    if (status != expected) {
        char text[256];
        snprintf(text, sizeof text, "expected %s, got %s (%s)", dr_status_string(expected),
                 dr_status_string(status), dr_last_error_message());
        check(0, name, text);
    }

    const char *message = dr_last_error_message();
    check(message != NULL && message[0] != '\0', name, "empty error message");
    char needle[32];
    snprintf(needle, sizeof needle, "rank %d", who);
    const char *wanted = names_rank == NAMES_RANK ? needle : "rank";
    int named = names_rank == NAMES_RANK ? test_names_rank(message, who) : !!strstr(message, wanted);
    if (message && names_rank != NO_RANK && !named) {
        char text[1400];
        snprintf(text, sizeof text, "message does not name \"%s\": %s", wanted, message);
        check(0, name, text);
    }
    check(memcmp(before, arena, sizeof arena) == 0, name, "input or output buffer modified");
    check(elems_written == -12345, name, "*new_local_elems written on failure");
    check(created_plan == NULL, name, "*plan written on failure");
    check(correct_call_works(), name, "a correct call afterwards failed");
    if (rank == 0)
        printf("%-44s -> %s\n", name, dr_status_string(status));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    rank = test_rank;
    nranks = test_nranks;
    bad_rank = nranks - 1;
    int bad = rank == bad_rank;
    struct call c;

    /* Status strings: distinct, non-empty, and never NULL, even when unknown. */
    for (int s = DR_SUCCESS; s <= DR_ERROR_INVALID_OPTION; s++) {
        const char *text = dr_status_string((dr_status)s);
        check(text && text[0], "dr_status_string", "empty string");
        for (int t = DR_SUCCESS; t < s; t++)
            check(strcmp(text, dr_status_string((dr_status)t)) != 0, "dr_status_string",
                  "two codes share a string");
    }
    check(dr_status_string((dr_status)1000) != NULL, "dr_status_string", "NULL for 1000");

    check(correct_call_works(), "valid reshape before the failures", dr_last_error_message());

#define SPOIL(statement) (c = valid_call(), (bad ? (void)(statement) : (void)0), &c)
    expect_failure("NULL gshape", RESHAPE, SPOIL(c.gshape = NULL), NULL,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("NULL new_gshape", RESHAPE, SPOIL(c.new_gshape = NULL), NULL,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("NULL buf", RESHAPE, SPOIL(c.buf = NULL), NULL,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("NULL out", RESHAPE, SPOIL(c.out = NULL), NULL,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("NULL new_local_elems", RESHAPE, SPOIL(c.new_local_elems = NULL), NULL,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("NULL plan pointer", PLAN_CREATE, SPOIL(c.plan = NULL), NULL,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("dtype 99", RESHAPE, SPOIL(c.dtype = (dr_dtype)99), NULL,
                   DR_ERROR_INVALID_DTYPE, NAMES_RANK, bad_rank);
    expect_failure("negative gshape extent", RESHAPE, SPOIL(c.gshape = negative_extent), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("negative ndims", RESHAPE, SPOIL(c.ndims = -1), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("ndims > DR_MAX_DIMS", RESHAPE,
                   SPOIL((c.ndims = DR_MAX_DIMS + 1, c.gshape = too_many_dims)), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("two -1 in new_gshape", RESHAPE, SPOIL(c.new_gshape = two_inferred), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("new_gshape with other element count", RESHAPE, SPOIL((c.new_ndims = 1, c.new_split = 0)), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("element count overflows int64", RESHAPE, SPOIL(c.gshape = overflowing), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("-1 with zero elements", RESHAPE,
                   SPOIL((c.gshape = empty_gshape, c.new_gshape = inferred_with_zero)), NULL,
                   DR_ERROR_INVALID_SHAPE, NAMES_RANK, bad_rank);
    expect_failure("split = ndims", RESHAPE, SPOIL(c.split = 2), NULL,
                   DR_ERROR_INVALID_SPLIT, NAMES_RANK, bad_rank);
    expect_failure("new_split = -2", RESHAPE, SPOIL(c.new_split = -2), NULL,
                   DR_ERROR_INVALID_SPLIT, NAMES_RANK, bad_rank);
    expect_failure("local_len one too many", RESHAPE, SPOIL(c.local_len += 1), NULL,
                   DR_ERROR_INVALID_DISTRIBUTION, NAMES_RANK, bad_rank);
    expect_failure("negative local_len", RESHAPE, SPOIL(c.local_len = -1), NULL,
                   DR_ERROR_INVALID_DISTRIBUTION, NAMES_RANK, bad_rank);
    {
        /* Explicit targets on every rank (the balanced ones), one too many on one. */
        int64_t target, offset;
        dr_balanced_slab(NEW_COLS, nranks, rank, &target, &offset);
        c = valid_call();
        c.new_local_len = target + (bad ? 1 : 0);
        expect_failure("new_local_len values that do not add up", PLAN_CREATE, &c, NULL,
                       DR_ERROR_INVALID_DISTRIBUTION, NAMES_RANK, bad_rank);
    }
    expect_failure("new_local_len beyond the extent", PLAN_CREATE,
                   SPOIL(c.new_local_len = NEW_COLS + 1), NULL,
                   DR_ERROR_INVALID_DISTRIBUTION, NAMES_RANK, bad_rank);
    expect_failure("out_capacity one short", RESHAPE, SPOIL(c.out_capacity -= 1), NULL,
                   DR_ERROR_BUFFER_TOO_SMALL, NAMES_RANK, bad_rank);
    expect_failure("output overlapping the input", RESHAPE, SPOIL(c.out = arena + 1), NULL,
                   DR_ERROR_ALIASING, NAMES_RANK, bad_rank);
    expect_failure("reshape_to: new_local_len beyond the extent", RESHAPE_TO,
                   SPOIL(c.new_local_len = NEW_COLS + 1), NULL,
                   DR_ERROR_INVALID_DISTRIBUTION, NAMES_RANK, bad_rank);
    expect_failure("reshape_to: out_capacity one short", RESHAPE_TO, SPOIL(c.out_capacity -= 1),
                   NULL, DR_ERROR_BUFFER_TOO_SMALL, NAMES_RANK, bad_rank);
    expect_failure("options: window 0", PLAN_CREATE_WITH_OPTIONS, SPOIL(c.options.window = 0),
                   NULL, DR_ERROR_INVALID_OPTION, NAMES_RANK, bad_rank);
    expect_failure("options: in_place_budget -2", PLAN_CREATE_WITH_OPTIONS,
                   SPOIL(c.options.in_place_budget = -2), NULL, DR_ERROR_INVALID_OPTION,
                   NAMES_RANK, bad_rank);
    expect_failure("options: NULL plan pointer", PLAN_CREATE_WITH_OPTIONS, SPOIL(c.plan = NULL),
                   NULL, DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    if (nranks > 1) {
        /* Found by every rank when comparing; named after the lowest (rank 0). */
        expect_failure("different new_gshape on one rank", RESHAPE,
                       SPOIL(c.new_gshape = other_new_gshape), NULL,
                       DR_ERROR_INCONSISTENT_ARGUMENTS, ANY_RANK, 0);
        expect_failure("different dtype size on one rank", RESHAPE,
                       SPOIL(c.dtype = DR_DTYPE_FLOAT32), NULL,
                       DR_ERROR_INCONSISTENT_ARGUMENTS, ANY_RANK, 0);
        expect_failure("different dtype of the same size on one rank", RESHAPE,
                       SPOIL(c.dtype = DR_DTYPE_INT64), NULL,
                       DR_ERROR_INCONSISTENT_ARGUMENTS, ANY_RANK, 0);
        expect_failure("different split on one rank", RESHAPE, SPOIL(c.split = 1), NULL,
                       DR_ERROR_INCONSISTENT_ARGUMENTS, ANY_RANK, 0);
        expect_failure("different new_split on one rank", RESHAPE, SPOIL(c.new_split = 0), NULL,
                       DR_ERROR_INCONSISTENT_ARGUMENTS, ANY_RANK, 0);
        expect_failure("different gshape on one rank", RESHAPE,
                       SPOIL((c.gshape = other_new_gshape, c.new_gshape = gshape)), NULL,
                       DR_ERROR_INCONSISTENT_ARGUMENTS, ANY_RANK, 0);
    }
    if (nranks > 2) {
        /* Two ranks with different errors: the lowest failing rank's wins. */
        c = valid_call();
        if (rank == 1)
            c.split = 5;
        if (rank == 2)
            c.dtype = (dr_dtype)99;
        expect_failure("bad split on rank 1, bad dtype on rank 2", RESHAPE, &c, NULL,
                       DR_ERROR_INVALID_SPLIT, NAMES_RANK, 1);
    }

    /* Communicators: only detectable when every rank passes the bad one. */
    c = valid_call();
    c.comm = MPI_COMM_NULL;
    expect_failure("MPI_COMM_NULL on every rank", RESHAPE, &c, NULL,
                   DR_ERROR_INVALID_COMMUNICATOR, NO_RANK, 0);
    if (nranks > 1) {
        MPI_Comm half, inter;
        int color = rank < nranks / 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? nranks / 2 : 0, 7, &inter);
        c = valid_call();
        c.comm = inter;
        expect_failure("intercommunicator on every rank", RESHAPE, &c, NULL,
                       DR_ERROR_INVALID_COMMUNICATOR, NO_RANK, 0);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    /* Plans: execute on a good plan with a bad buffer on one rank. */
    dr_plan *plan = NULL;
    c = valid_call();
    c.plan = &plan;
    check(run(PLAN_CREATE, &c, NULL) == DR_SUCCESS, "plan create", dr_last_error_message());
    expect_failure("execute: out_capacity one short", PLAN_EXECUTE, SPOIL(c.out_capacity -= 1),
                   plan, DR_ERROR_BUFFER_TOO_SMALL, NAMES_RANK, bad_rank);
    expect_failure("execute: NULL input", PLAN_EXECUTE, SPOIL(c.buf = NULL), plan,
                   DR_ERROR_NULL_POINTER, NAMES_RANK, bad_rank);
    expect_failure("execute: overlapping output", PLAN_EXECUTE, SPOIL(c.out = arena + 1), plan,
                   DR_ERROR_ALIASING, NAMES_RANK, bad_rank);
    expect_failure("execute_sized: input one short", PLAN_EXECUTE_SIZED,
                   SPOIL(c.in_elems -= 1), plan, DR_ERROR_BUFFER_TOO_SMALL, NAMES_RANK, bad_rank);
    expect_failure("execute_sized: negative in_elems", PLAN_EXECUTE_SIZED,
                   SPOIL(c.in_elems = -1), plan, DR_ERROR_BUFFER_TOO_SMALL, NAMES_RANK, bad_rank);
    c = valid_call();
    fill_arena();
    check(run(PLAN_EXECUTE, &c, plan) == DR_SUCCESS, "execute after failures",
          dr_last_error_message());

    /* The local plan functions reject a NULL plan (on every rank: they do not
     * communicate); dr_plan_output's outputs are optional. */
    int64_t shape_out[2], len_out, elems_out;
    dr_plan_stats stats;
    char text[16];
    check(dr_plan_output(NULL, shape_out, &len_out, &elems_out) == DR_ERROR_NULL_POINTER,
          "dr_plan_output(NULL plan)", "not DR_ERROR_NULL_POINTER");
    check(dr_plan_output(plan, NULL, NULL, NULL) == DR_SUCCESS,
          "dr_plan_output(plan, NULL, NULL, NULL)", "outputs are optional but it failed");
    check(dr_plan_stats_get(NULL, &stats) == DR_ERROR_NULL_POINTER, "dr_plan_stats_get(NULL)",
          "not DR_ERROR_NULL_POINTER");
    check(dr_plan_stats_get(plan, NULL) == DR_ERROR_NULL_POINTER,
          "dr_plan_stats_get(NULL stats)", "not DR_ERROR_NULL_POINTER");
    check(dr_plan_describe(NULL, text, sizeof text, NULL) == DR_ERROR_NULL_POINTER,
          "dr_plan_describe(NULL)", "not DR_ERROR_NULL_POINTER");
    check(dr_plan_describe(plan, NULL, 1, NULL) == DR_ERROR_NULL_POINTER,
          "dr_plan_describe(NULL buf, len 1)", "not DR_ERROR_NULL_POINTER");
    /* snprintf convention: the full length comes back whatever fits. */
    size_t needed = 0, again = 0;
    check(dr_plan_describe(plan, NULL, 0, &needed) == DR_SUCCESS && needed > sizeof text,
          "dr_plan_describe(NULL, 0, &needed)", "no length, or a description under 16 bytes");
    char *whole = malloc(needed + 1);
    check(dr_plan_describe(plan, whole, needed + 1, &again) == DR_SUCCESS && again == needed &&
              strlen(whole) == needed,
          "dr_plan_describe(needed + 1 bytes)", "did not write the whole description");
    check(dr_plan_describe(plan, text, sizeof text, &again) == DR_SUCCESS && again == needed &&
              strlen(text) == sizeof text - 1 && strncmp(text, whole, sizeof text - 1) == 0,
          "dr_plan_describe(16 bytes)", "not the first 15 bytes and the full length");
    free(whole);
    check(dr_plan_execute(NULL, arena, arena + ROWS * COLS, 0) == DR_ERROR_NULL_POINTER,
          "dr_plan_execute(NULL plan)", "not DR_ERROR_NULL_POINTER");
    dr_plan_destroy(plan);
    dr_plan_destroy(NULL);

    /* dr_balanced_slab: pure and local. */
    int64_t len, offset;
    check(dr_balanced_slab(10, 4, 1, NULL, &offset) == DR_ERROR_NULL_POINTER,
          "dr_balanced_slab(NULL len)", "not DR_ERROR_NULL_POINTER");
    check(dr_balanced_slab(10, 4, 1, &len, &offset) == DR_SUCCESS && len == 3 && offset == 3,
          "dr_balanced_slab(10, 4, 1)", "not (3, 3)");
    check(dr_balanced_slab(10, 0, 0, &len, &offset) != DR_SUCCESS, "dr_balanced_slab(nranks 0)",
          "accepted");
    check(dr_balanced_slab(10, 4, 4, &len, &offset) != DR_SUCCESS, "dr_balanced_slab(rank 4 of 4)",
          "accepted");
    check(dr_balanced_slab(-1, 4, 0, &len, &offset) != DR_SUCCESS, "dr_balanced_slab(extent -1)",
          "accepted");

    check(correct_call_works(), "valid reshape after the failures", dr_last_error_message());

    return test_finish("status test");
}
