/* Linked into each SMPI driver. SMPI runs every simulated rank as a thread of one
 * process and answers MPI_Is_thread_main true on rank 0 only, at MPI_THREAD_SINGLE
 * whatever MPI_Init_thread asked for. The library (correctly, on a real MPI) refuses
 * calls from a thread that is not the main one below MPI_THREAD_SERIALIZED, so every
 * rank but 0 would refuse to plan. Each simulated rank's one thread is its main
 * thread: this definition, in the executable, takes the library's calls in place of
 * SMPI's. */
#include <mpi.h>

#undef MPI_Is_thread_main
int MPI_Is_thread_main(int *flag) {
  *flag = 1;
  return MPI_SUCCESS;
}
