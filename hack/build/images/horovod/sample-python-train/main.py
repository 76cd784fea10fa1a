"""A stand-in for the batch.test.bdap.com/v1 example's sample-python-train/main.py (a small PyTorch model trained
with Horovod), on synthetic
data so nothing is downloaded: a linear regression y = 3x - 1 fitted by every rank on its own shard, the gradients
averaged by Horovod. Each rank prints `rank R of N on host H`; rank 0 the fitted weights and `training done`.

The example's worker template clones the repository into its working directory and the launcher creates the same
directories (`MPI-Operator/sample-python-train`), so `python main.py` finds this file on the workers: the image
keeps it in /opt/MPI-Operator for the worker to copy instead of cloning (no network here).
"""

from __future__ import annotations

import socket

import horovod.torch as hvd
import torch


def main() -> None:
    hvd.init()
    torch.manual_seed(1234 + hvd.rank())
    print(f"rank {hvd.rank()} of {hvd.size()} on host {socket.gethostname()}", flush=True)
    x = torch.rand(256, 1)
    y = 3 * x - 1 + 0.01 * torch.randn(256, 1)
    model = torch.nn.Linear(1, 1)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.5 * hvd.size()), named_parameters=model.named_parameters()
    )
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for epoch in range(200):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if epoch % 50 == 0 and hvd.rank() == 0:
            print(f"epoch {epoch} loss {loss.item():.5f}", flush=True)
    loss = hvd.allreduce(loss.detach(), name="final_loss").item()
    if hvd.rank() == 0:
        print(f"weight {model.weight.item():.3f} bias {model.bias.item():.3f} loss {loss:.5f}", flush=True)
        print("training done", flush=True)


if __name__ == "__main__":
    main()
