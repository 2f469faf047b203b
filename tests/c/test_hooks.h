/* The fault-injection switches of the library's test build (cargo feature
 * `test-hooks`, CMake target DistReshape::distreshape_test_hooks). They are not
 * in distreshape.h, nor in the library users link. */
#ifndef DISTRESHAPE_TEST_HOOKS_H
#define DISTRESHAPE_TEST_HOOKS_H
#include <stdint.h>

/* Makes every allocation of the library larger than `bytes` fail as if memory were
 * exhausted, on this process (a negative value removes the limit). */
void dr_test_set_allocation_limit(int64_t bytes);

/* When `enabled` is non-zero, plan creation panics inside the library on this
 * process (the panic is caught and reported as DR_ERROR_INTERNAL everywhere). */
void dr_test_set_panic(int32_t enabled);

/* When `enabled` is non-zero, the next exchange on this process fails with
 * DR_ERROR_MPI once all its first messages are posted (they are then cancelled). */
void dr_test_set_exchange_failure(int32_t enabled);

/* When `enabled` is non-zero, the next exchange on this process panics inside the
 * library once all its first messages are posted (the panic is caught and reported
 * as DR_ERROR_INTERNAL on this rank; the messages are then cancelled). */
void dr_test_set_exchange_panic(int32_t enabled);

/* When `enabled` is non-zero, the next MPI datatype the library makes on this
 * process fails in MPI (a count of -1 handed to MPI in place of the constructor,
 * which MPI refuses and hands to MPI_COMM_WORLD's error handler). */
void dr_test_set_datatype_failure(int32_t enabled);

#endif
