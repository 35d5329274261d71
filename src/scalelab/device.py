"""Device and precision choice: the same code on CPU, one GPU, or many under torchrun."""

from __future__ import annotations

import os

import torch

from scalelab.errors import ConfigError


def _local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def default_device() -> torch.device:
    """CUDA when present (the local rank's GPU under torchrun), else CPU."""
    if torch.cuda.is_available():
        return _existing_gpu(torch.device("cuda", _local_rank()))
    return torch.device("cpu")


def _existing_gpu(device: torch.device) -> torch.device:
    """`device` if this machine has that GPU; a clear error instead of CUDA's "invalid device
    ordinal" when torchrun starts more processes than there are GPUs."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device.type == "cuda" and count and (device.index or 0) >= count:
        raise ConfigError(
            f"{device} does not exist: this machine has {count} GPU(s); start at most "
            f"{count} process(es) per node (torchrun --nproc_per_node={count}) or pass "
            "--device cpu"
        )
    return device


def resolve_device(name: str | None) -> torch.device:
    """`None`/"auto": the default; a bare "cuda" under torchrun is this process's own GPU
    (`cuda:LOCAL_RANK`), so the ranks do not all share GPU 0; "cuda:N" is taken as given."""
    if name in (None, "auto"):
        return default_device()
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise ConfigError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from err
    if device.type == "cuda" and device.index is None and "LOCAL_RANK" in os.environ:
        device = torch.device("cuda", _local_rank())
    return _existing_gpu(device)
