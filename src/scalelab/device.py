"""Device and precision choice: the same code on CPU, one GPU, or many under torchrun."""

from __future__ import annotations

import torch


def default_device() -> torch.device:
    """CUDA when present (the local rank's GPU under torchrun), else CPU."""
    if torch.cuda.is_available():
        import os

        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def resolve_device(name: str | None) -> torch.device:
    return default_device() if name in (None, "auto") else torch.device(name)
