"""Keep freed memory in the process instead of handing it back to the kernel.

Training allocates and frees the same few large tensors (logits, their gradients) every step.
glibc serves blocks above its mmap threshold with fresh `mmap`s and returns them on free, so
each step faults its pages in again: measured on a 2×48 model (docs/benchmarks/training.md),
page faults were 40% of the CPU time of a run. Raising the mmap and trim thresholds keeps
those blocks on the heap for reuse. Same numbers, bit for bit; only the page faults go.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
THRESHOLD = 1 << 30  # blocks up to 1 GiB come from the heap and stay there once freed

_done = False


def keep_freed_memory() -> bool:
    """Set glibc's thresholds once per process; False where there is no glibc `mallopt`
    (macOS, musl), which changes nothing but speed."""
    global _done
    if _done or not sys.platform.startswith("linux"):
        return _done
    try:
        libc = ctypes.CDLL("libc.so.6")  # glibc's name: no ldconfig search at start-up
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    _done = bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, THRESHOLD)
    )
    return _done
