"""The mpi4py example's program (examples/v2beta1/mpi4py.yaml): every rank adds its number and sends its host name;
rank 0 prints the sum, which it checks, and the hosts the ranks ran on."""

import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank, op=MPI.SUM)
hosts = comm.gather(socket.gethostname(), root=0)
if rank == 0:
    expected = size * (size - 1) // 2
    print(f"mpi4py: {size} ranks on {', '.join(sorted(set(hosts)))}; sum of the ranks {total}, expected {expected}")
    sys.exit(0 if total == expected else 1)
