"""Atomic writes and run provenance: results are never half-written, and every run records
what produced it."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from scalelab.errors import InputError, StorageError


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp_path)` on a temporary file beside `path`, then rename it into place."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder; give a file path to write to")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; results should be readable
    try:
        write(tmp_path)
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except Exception as err:
        if _disk_error(err):
            raise _storage_error(path, err) from err
        raise
    finally:
        tmp_path.unlink(missing_ok=True)
    return path


DISK_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def _disk_error(err: BaseException | None) -> OSError | None:
    """The disk-full / file-too-large OSError behind `err` (libraries such as torch wrap it)."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, OSError) and err.errno in DISK_ERRNOS:
            return err
        err, seen = err.__cause__ or err.__context__, seen + 1
    return None


def _storage_error(path: Path, err: BaseException) -> StorageError:
    cause = _disk_error(err)
    reason = os.strerror(cause.errno) if cause is not None else str(err)
    return StorageError(
        f"cannot write {path}: {reason}; free disk space (or raise the file-size limit) and "
        "rerun the same command: finished work and the last checkpoint are kept"
    )


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def finite_json(obj: Any) -> Any:
    """`obj` with every NaN/Infinity float replaced by None (strict JSON has no such values).

    In a dict, a replaced value `key` gains a sibling `key_nonfinite` ("nan", "inf" or "-inf")
    saying why it is null; in a list the null stands alone. A dataclass with a `to_dict` (a
    `config.Record`) is written as its dict: objects travel to the folder, which converts."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and hasattr(obj, "to_dict"):
        return finite_json(obj.to_dict())
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            out[key] = finite_json(value)
            if _nonfinite(value):
                out[f"{key}_nonfinite"] = str(float(value)).lower()
        return out
    if isinstance(obj, list | tuple):
        return [finite_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return finite_json(obj.tolist())
    return obj


def _nonfinite(value: Any) -> bool:
    return isinstance(value, float | np.floating) and not math.isfinite(value)


def to_json(obj: Any, *, indent: int | None = 2) -> str:
    """The one JSON writer: strict JSON (non-finite floats become null, see `finite_json`)."""
    return json.dumps(finite_json(obj), indent=indent, default=_json_default, allow_nan=False)


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, to_json(obj) + "\n")


def read_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def append_jsonl(path: str | Path, row: dict[str, Any]) -> None:
    """Append one JSON line and flush it to disk (a log, so appending is the right shape)."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(to_json(row, indent=None) + "\n")
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        if _disk_error(err):  # a torn last line is dropped by readers (see lm.train)
            raise _storage_error(Path(path), err) from err
        raise


def git_revision() -> str:
    """The git revision of the scalelab checkout, with `-dirty` if it has local changes."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def provenance() -> dict[str, Any]:
    """Versions, git revision, host and time: written beside every result."""
    import torch

    import scalelab

    return {
        "scalelab": scalelab.__version__,
        "git_revision": git_revision(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cuda": torch.cuda.is_available(),
        "argv": sys.argv,
        "time_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def format_interval(ci: Any, spec: str = ".3f", missing: str = "n/a") -> str:
    """A 95% interval as `[lo, hi]`; `missing` when there is none or it is not finite."""
    if not ci or any(v is None or not math.isfinite(v) for v in ci):
        return missing
    return f"[{ci[0]:{spec}}, {ci[1]:{spec}}]"
