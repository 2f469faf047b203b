/* dr_reshape and dr_plan_create before MPI_Init and after MPI_Finalize must
 * return DR_ERROR_MPI_NOT_INITIALIZED (with a message) without touching MPI
 * or the outputs; in between, the same call succeeds. Each process works
 * alone (MPI_COMM_SELF), so any rank count gives the same result. */
#include <distreshape.h>
#include <mpi.h>
#include <stdio.h>

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s (%s)\n", what, dr_last_error_message());
        failures++;
    }
}

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
    expect(reshape_once(in, out, &written) == DR_ERROR_MPI_NOT_INITIALIZED,
           "dr_reshape returns DR_ERROR_MPI_NOT_INITIALIZED");
    expect(dr_last_error_message()[0] != '\0', "the message is not empty");
    expect(written == -1 && out[0] == -1 && out[5] == -1, "outputs untouched");
    expect(dr_plan_create(DR_DTYPE_INT32, 1, gshape, DR_SPLIT_NONE, MPI_COMM_SELF, 0, 1, gshape,
                          DR_SPLIT_NONE, -1, &plan) == DR_ERROR_MPI_NOT_INITIALIZED,
           "dr_plan_create returns DR_ERROR_MPI_NOT_INITIALIZED");
    expect(plan == NULL, "no plan created");
}

int main(int argc, char **argv)
{
    expect_not_initialized("before MPI_Init");

    MPI_Init(&argc, &argv);
    const int32_t in[6] = {0, 1, 2, 3, 4, 5};
    int32_t out[6] = {0};
    int64_t written = 0;
    expect(reshape_once(in, out, &written) == DR_SUCCESS, "dr_reshape succeeds after MPI_Init");
    expect(written == 6 && out[0] == 0 && out[5] == 5, "all six elements copied");
    MPI_Finalize();

    expect_not_initialized("after MPI_Finalize");
    printf("%s: %d failed check(s)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
