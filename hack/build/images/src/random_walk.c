/* A random walk over a 1-D domain split across the ranks, the program of T9k's MPIJob tutorial
 * (batch.tensorstack.dev/v1beta1: `./random_walk <domain size> <max walk size> <walkers per rank>`), written for
 * these images. Each rank owns an equal part of [0, domain size); its walkers take a random number of unit steps to
 * the right, and a walker that leaves a rank's part is sent to the next rank (the domain wraps around). Every rank
 * reports the host it ran on, so a launcher log proves where the ranks ran. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    int position;
    int steps_left;
} walker;

int main(int argc, char **argv) {
    int rank, size;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    if (argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: random_walk <domain size> <max walk size> <walkers per rank>\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int domain = atoi(argv[1]), max_walk = atoi(argv[2]), per_rank = atoi(argv[3]);
    if (domain < size || max_walk < 1 || per_rank < 1) {
        if (rank == 0)
            fprintf(stderr, "random_walk: need domain size >= ranks (%d), max walk size >= 1, walkers >= 1\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int part = domain / size, start = rank * part;
    int end = rank == size - 1 ? domain : start + part; /* the last rank takes the remainder */
    srand((unsigned)(rank + 1) * 7919u);

    /* A walker crosses at most one part per round, so this many rounds move every walker to its end. */
    int rounds = max_walk / part + 2;
    int capacity = per_rank * size + 1, count = per_rank, finished = 0;
    walker *here = malloc((size_t)capacity * sizeof *here), *out = malloc((size_t)capacity * sizeof *out);
    for (int i = 0; i < per_rank; i++) {
        here[i].position = start;
        here[i].steps_left = rand() % max_walk + 1;
    }
    for (int round = 0; round < rounds; round++) {
        int sending = 0;
        for (int i = 0; i < count; i++) {
            walker w = here[i];
            int room = end - w.position; /* steps until the walker leaves this part */
            if (w.steps_left < room) {
                finished++;             /* it ends its walk here */
            } else {
                w.steps_left -= room;
                w.position = end % domain;
                out[sending++] = w;
            }
        }
        int next = (rank + 1) % size, prev = (rank - 1 + size) % size, incoming = 0;
        MPI_Sendrecv(&sending, 1, MPI_INT, next, 0, &incoming, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(out, sending * 2, MPI_INT, next, 1, here, incoming * 2, MPI_INT, prev, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        count = incoming;
    }
    int total = 0;
    MPI_Reduce(&finished, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);

    char *all = rank == 0 ? malloc((size_t)size * sizeof host) : NULL;
    MPI_Gather(host, sizeof host, MPI_CHAR, all, sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("rank %d of %d on host %s\n", r, size, all + (size_t)r * sizeof host);
        printf("random walk done: %d of %d walkers finished in a domain of %d over %d ranks\n", total,
               per_rank * size, domain, size);
        free(all);
    }
    free(here);
    free(out);
    MPI_Finalize();
    /* Only rank 0 has the total; it fails the run when a walker got lost. */
    return rank != 0 || total == per_rank * size ? 0 : 1;
}
