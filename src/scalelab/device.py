"""Device and precision choice: the same code on CPU, one GPU, or many under torchrun."""

from __future__ import annotations

import functools
import os

import torch

from scalelab.errors import ConfigError
from scalelab.fields import DTYPES, choice


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


# "0" forces the float32 path on any CPU (what a CPU without native bf16 runs: CI sets it so
# the suite passes on both kinds), "1" takes bf16 as native; unset reads /proc/cpuinfo.
CPU_BF16_ENV = "SCALELAB_CPU_BF16"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX): only there is bf16
    autocast faster than float32 (elsewhere it is emulated and slower). `SCALELAB_CPU_BF16`
    overrides the answer."""
    forced = os.environ.get(CPU_BF16_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if forced:
        raise ConfigError(f"{CPU_BF16_ENV}={forced!r}: set it to 0 (float32), 1 (bf16) or unset")
    return _cpuinfo_has_bf16()


@functools.cache
def _cpuinfo_has_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_bf16", "amx_bf16"} & set(flags.split()))


def auto_dtype(device: torch.device | str) -> torch.dtype:
    """The compute dtype that `auto` means on `device`: bfloat16 where matmuls are native in
    bf16 (CUDA with bf16 support, a CPU with AVX512-BF16/AMX), float32 elsewhere."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    return torch.bfloat16 if dev.type == "cpu" and cpu_has_native_bf16() else torch.float32


def resolve_dtype(dtype: str, device: torch.device | str) -> torch.dtype:
    """The compute dtype a config's `dtype` names on `device` (`auto`: `auto_dtype`; measured
    faster with the same loss curve, docs/benchmarks/training.md)."""
    choice(dtype, "dtype", DTYPES)
    return auto_dtype(device) if dtype == "auto" else getattr(torch, dtype)
