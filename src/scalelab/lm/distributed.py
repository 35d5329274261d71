"""Data-parallel set-up that works unchanged under `torchrun` (gloo on CPU, nccl on GPU) and in
a plain single process.

The trainer asks only: which rank am I, how many are there, which device is mine, and can I
sum a tensor over ranks. Only rank 0 writes files; the others wait at barriers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from scalelab.device import resolve_device


@dataclass(frozen=True)
class DistContext:
    rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def barrier(self) -> None:
        if self.active:
            dist.barrier()

    def all_reduce_sum(self, t: torch.Tensor) -> torch.Tensor:
        """Sum over ranks, in place (a no-op for one process)."""
        if self.active:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t


def init_distributed(device: str | None = None) -> DistContext:
    """Join the process group when launched by torchrun (WORLD_SIZE > 1), else one process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistContext(0, 1, resolve_device(device))
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() and device != "cpu" else "gloo"
        dist.init_process_group(backend=backend)
    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    return DistContext(dist.get_rank(), dist.get_world_size(), dev)


def shutdown_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
