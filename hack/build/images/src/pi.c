/* Computes pi by the midpoint rule, split over all ranks; every rank reports the host it ran on,
 * so a launcher log proves where the ranks ran. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';

    long steps = argc > 1 ? atol(argv[1]) : 10000000L;
    double width = 1.0 / (double)steps, local = 0.0, pi = 0.0;
    for (long i = rank; i < steps; i += size) {
        double x = (i + 0.5) * width;
        local += 4.0 / (1.0 + x * x);
    }
    local *= width;
    MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

    /* Gather hostnames to rank 0 so the lines come out in rank order on the launcher. */
    char *all = rank == 0 ? malloc((size_t)size * sizeof host) : NULL;
    MPI_Gather(host, sizeof host, MPI_CHAR, all, sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("rank %d of %d on host %s\n", r, size, all + (size_t)r * sizeof host);
        printf("pi is approximately %.12f (error %.3e)\n", pi, pi - 3.141592653589793);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
