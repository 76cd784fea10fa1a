"""mpi4py version of pi.c: pi by the midpoint rule, and the host of every rank."""

import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
width = 1.0 / steps
local = sum(4.0 / (1.0 + ((i + 0.5) * width) ** 2) for i in range(rank, steps, size)) * width
pi = comm.reduce(local, op=MPI.SUM, root=0)
hosts = comm.gather(socket.gethostname(), root=0)
if rank == 0:
    for r, host in enumerate(hosts):
        print(f"rank {r} of {size} on host {host}")
    print(f"pi is approximately {pi:.12f} (error {pi - 3.141592653589793:.3e})")
