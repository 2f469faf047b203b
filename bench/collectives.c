/* The agreement's collective, blocking or not: MPI_Allreduce against
 * MPI_Iallreduce + MPI_Wait of three int64 values (what every execution's
 * agreement reduces), 20000 times, three rounds; rank 0 prints the mean time
 * of one. docs/src/performance/analysis.md, "Several executions in flight".
 *
 *   mpicc.mpich -O2 bench/collectives.c -o collectives_mpich &&
 *     mpiexec.mpich -n 2 ./collectives_mpich
 *   mpicc.openmpi -O2 bench/collectives.c -o collectives_ompi &&
 *     mpiexec.openmpi --oversubscribe -n 2 ./collectives_ompi */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#define TIMES 20000

/* The mean time of one reduction, in microseconds, blocking or not. */
static double mean_us(int nonblocking)
{
    int64_t mine[3] = {1, 2, 3}, most[3];
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < TIMES; i++) {
        if (nonblocking) {
            MPI_Request request;
            MPI_Iallreduce(mine, most, 3, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
        } else {
            MPI_Allreduce(mine, most, 3, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - start) / TIMES * 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int round = 0; round < 3; round++) {
        double blocking = mean_us(0), nonblocking = mean_us(1);
        if (rank == 0)
            printf("MPI_Allreduce %.2f us, MPI_Iallreduce + MPI_Wait %.2f us\n", blocking, nonblocking);
    }
    MPI_Finalize();
    return 0;
}
