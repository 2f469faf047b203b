/* dr_reshape and dr_plan_create before MPI_Init and after MPI_Finalize must
 * return DR_ERROR_MPI_NOT_INITIALIZED (with a message) without touching MPI
 * or the outputs; in between, the same call succeeds. Each process works
 * alone (MPI_COMM_SELF), so any rank count gives the same result.
 * dr_plan_execute after MPI_Finalize returns the same status, for a plan that
 * moves data between ranks (over MPI_COMM_WORLD, at 2 ranks and more) and for
 * one that moves nothing, and dr_plan_destroy and dr_plan_free still free them.
 * MPI's life cycle is what this test is about, so it uses the harness's checks
 * but neither test_init nor test_finish. */
#include "harness.h"

/* (2, 3) -> (3, 2), neither split: a copy of all six elements. */
static dr_status reshape_once(const int32_t *in, int32_t *out, int64_t *written)
{
    static const int64_t gshape[2] = {2, 3}, new_gshape[2] = {3, 2};
    return dr_reshape(in, DR_DTYPE_INT32, 2, gshape, DR_SPLIT_NONE, MPI_COMM_SELF, 0, 2,
                      new_gshape, DR_SPLIT_NONE, out, 6, written);
}

static void expect_not_initialized(const char *when)
{
    const int32_t in[6] = {0, 1, 2, 3, 4, 5};
    int32_t out[6] = {-1, -1, -1, -1, -1, -1};
    int64_t written = -1;
    static const int64_t gshape[1] = {6};
    dr_plan *plan = NULL;
    printf("%s\n", when);
    CHECK_WHAT(reshape_once(in, out, &written) == DR_ERROR_MPI_NOT_INITIALIZED,
           "dr_reshape returns DR_ERROR_MPI_NOT_INITIALIZED");
    CHECK_WHAT(dr_last_error_message()[0] != '\0', "the message is not empty");
    CHECK_WHAT(written == -1 && out[0] == -1 && out[5] == -1, "outputs untouched");
    CHECK_WHAT(dr_plan_create(DR_DTYPE_INT32, 1, gshape, DR_SPLIT_NONE, MPI_COMM_SELF, 0, 1, gshape,
                          DR_SPLIT_NONE, -1, &plan) == DR_ERROR_MPI_NOT_INITIALIZED,
           "dr_plan_create returns DR_ERROR_MPI_NOT_INITIALIZED");
    CHECK_WHAT(plan == NULL, "no plan created");
}

/* (n, 2) split 0 -> (n, 2) split 1 over `comm` of n ranks: every rank's row goes
 * half to each rank (the exchange path when n > 1). */
static dr_plan *split_change(MPI_Comm comm)
{
    int n;
    MPI_Comm_size(comm, &n);
    const int64_t gshape[2] = {n, 2};
    dr_plan *plan = NULL;
    CHECK_WHAT(dr_plan_create(DR_DTYPE_INT32, 2, gshape, 0, comm, 1, 2, gshape, 1, -1, &plan) ==
               DR_SUCCESS,
           "dr_plan_create succeeds after MPI_Init");
    return plan;
}

static void expect_execute_not_initialized(dr_plan *plan, const char *what)
{
    int32_t in[2] = {7, 7}, out[64];
    for (int i = 0; i < 64; i++) out[i] = -1;
    CHECK_WHAT(dr_plan_execute(plan, in, out, 64) == DR_ERROR_MPI_NOT_INITIALIZED, what);
    CHECK_WHAT(out[0] == -1 && out[63] == -1, "execute after MPI_Finalize leaves the output untouched");
}

int main(int argc, char **argv)
{
    expect_not_initialized("before MPI_Init");

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    dr_plan *moving = split_change(MPI_COMM_WORLD), *local = split_change(MPI_COMM_SELF);
    const int32_t in[6] = {0, 1, 2, 3, 4, 5};
    int32_t out[6] = {0};
    int64_t written = 0;
    CHECK_WHAT(reshape_once(in, out, &written) == DR_SUCCESS, "dr_reshape succeeds after MPI_Init");
    CHECK_WHAT(written == 6 && out[0] == 0 && out[5] == 5, "all six elements copied");
    MPI_Finalize();

    expect_not_initialized("after MPI_Finalize");
    expect_execute_not_initialized(moving, "dr_plan_execute of a plan that moves data, after MPI_Finalize");
    expect_execute_not_initialized(local, "dr_plan_execute of a plan that moves nothing, after MPI_Finalize");
    CHECK(dr_plan_free(&moving) == DR_SUCCESS && moving == NULL);
    dr_plan_destroy(local);
    printf("%s: %d failed check(s)\n", test_failures ? "FAILED" : "OK", test_failures);
    return test_failures ? 1 : 0;
}
