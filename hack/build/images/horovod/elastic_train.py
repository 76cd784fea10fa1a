"""Elastic Horovod training in the spirit of Horovod's examples/elastic/*_mnist_elastic.py (as the elastic Horovod
kubeflow.org/v1 example of a cloud vendor's Helm chart page for the Kubeflow MPI Operator runs it), on synthetic
MNIST-shaped data so nothing is downloaded, and small enough for a 2-core machine.

Run it with horovodrun's elastic mode, e.g.
    horovodrun -np 2 --min-np 1 --max-np 3 --host-discovery-script /etc/mpi/discover_hosts.sh \
        python3 /opt/horovod/elastic_train.py --epochs 40
Rank 0 prints one line whenever training (re)starts with a new set of workers, naming the host of each rank,
    world size N (epoch E, batch B): HOST0 HOST1 ...
and one per epoch, so a launcher log shows the world size as workers join and leave.
"""

from __future__ import annotations

import argparse
import socket
import time

import horovod.torch as hvd
import torch
import torch.nn.functional as F
from torch import nn


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batches-per-epoch", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.002)
    # Paces the loop: a real epoch takes minutes; this keeps the job alive long enough to be resized.
    parser.add_argument("--batch-seconds", type=float, default=0.2)
    return parser.parse_args()


class Net(nn.Module):
    """A small MLP on 28x28 images (the MNIST shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(28 * 28, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.hidden(x.flatten(1))))


# One fixed random "digit" per class; an image is its class's digit under heavy noise, so there is something to learn.
DIGITS = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(1234))


def synthetic_batch(epoch: int, batch: int, size: int, rank: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic batch of MNIST-shaped images; every (epoch, batch, rank, world) gets its own, as a sharded
    sampler would give."""
    gen = torch.Generator().manual_seed(((epoch * 1000 + batch) * 16 + rank) * 16 + world)
    labels = torch.randint(0, 10, (size,), generator=gen)
    images = 0.1 * DIGITS[labels] + 0.9 * torch.rand(size, 1, 28, 28, generator=gen)
    return images, labels


def main() -> None:
    args = parse_args()
    hvd.init()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one core per rank at most; the node is small

    model = Net()
    # The learning rate scales with the world size; reset callbacks adjust it when workers come and go.
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    def log(message: str) -> None:
        if hvd.rank() == 0:
            print(message, flush=True)

    @hvd.elastic.run
    def train(state: hvd.elastic.TorchState) -> float:
        hosts = hvd.allgather_object(socket.gethostname(), name="hosts")
        log(f"world size {hvd.size()} (epoch {state.epoch}, batch {state.batch}): {' '.join(hosts)}")
        loss = torch.tensor(0.0)
        while state.epoch < args.epochs:
            model.train()
            while state.batch < args.batches_per_epoch:
                images, labels = synthetic_batch(state.epoch, state.batch, args.batch_size, hvd.rank(), hvd.size())
                optimizer.zero_grad()
                loss = F.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
                time.sleep(args.batch_seconds)
                state.batch += 1
                # Commit every few batches: a lost worker costs at most that much work; new workers join here.
                # (The epoch's last batch is committed with the epoch below, so a restart never begins past it.)
                if state.batch % 5 == 0 and state.batch < args.batches_per_epoch:
                    state.commit()
            mean_loss = hvd.allreduce(loss.detach(), name="epoch_loss").item()
            log(f"epoch {state.epoch} done: world size {hvd.size()}, loss {mean_loss:.4f}")
            state.epoch += 1
            state.batch = 0
            state.commit()
        return loss.item()

    def on_reset() -> None:
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()

    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)
    state.register_reset_callbacks([on_reset])
    final = train(state)
    log(f"training finished: {args.epochs} epochs, world size {hvd.size()}, last loss {final:.4f}")


if __name__ == "__main__":
    main()
