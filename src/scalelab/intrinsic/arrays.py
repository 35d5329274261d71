"""Reading a point cloud `[points, features]` from the file formats embeddings come in.

Every failure (missing file, unknown or unreadable format, non-numeric values, wrong shape)
becomes an `InputError` naming the file and the fix, so the CLI never shows a traceback.
Finite values are checked later, by the estimators, which report the offending row count.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from scalelab.errors import InputError

FORMATS = (".npy", ".npz", ".pt", ".pth", ".safetensors", ".csv", ".parquet")


def load_points(path: str | Path, *, key: str | None = None) -> np.ndarray:
    """A 2-D float array (float32 kept, other numbers as float64) from `path`.

    `key` picks one array from containers holding several (.npz, .pt dicts, .safetensors);
    with one array it may be omitted. A float32/float64 C-order .npy file comes back
    memory-mapped and read-only (copy it to modify it). Tables (.csv, .parquet) must be all
    numeric columns, or a single column of equal-length lists (an embedding per row).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such file: {p}; check the path")
    if p.is_dir():
        raise InputError(f"{p} is a directory: give a file ({', '.join(FORMATS)})")
    suffix = p.suffix.lower()
    readers = {
        ".npy": _read_npy,
        ".npz": _read_npz,
        ".pt": _read_torch,
        ".pth": _read_torch,
        ".safetensors": _read_safetensors,
        ".csv": _read_csv,
        ".parquet": _read_parquet,
    }
    if suffix not in readers:
        raise InputError(f"unknown format {suffix or '(none)'!r} of {p}: use {', '.join(FORMATS)}")
    try:
        arr = readers[suffix](p, key)
    except InputError:
        raise
    except (OSError, ValueError, TypeError, RuntimeError, KeyError, EOFError) as err:
        # Library readers raise these for corrupt or mislabelled files.
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(
            f"cannot read {p} as {suffix}: {reason[:200]}; give a valid {suffix} file of points "
            "(one row per point)"
        ) from err
    return _as_points(arr, p)


def _as_points(arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{path} holds {arr.dtype} values, not numbers: convert it to floats")
    if arr.ndim != 2:
        raise InputError(
            f"{path} holds an array of shape {arr.shape}: give a 2-D [points, features] array"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"{path} holds an empty array of shape {arr.shape}")
    if arr.dtype == np.float32 or arr.dtype == np.float64:
        return np.ascontiguousarray(arr)
    return np.ascontiguousarray(arr, dtype=np.float64)


def _pick(arrays: dict[str, object], key: str | None, path: Path) -> object:
    """One entry of a named container: `key`, or the only one."""
    if key is not None:
        if key not in arrays:
            raise InputError(f"{path} has no array {key!r}; it holds {sorted(arrays)}")
        return arrays[key]
    if len(arrays) != 1:
        raise InputError(
            f"{path} holds {len(arrays)} arrays {sorted(arrays)[:10]}: choose one with --key"
        )
    return next(iter(arrays.values()))


def _read_npy(path: Path, key: str | None) -> np.ndarray:
    # Mapped, not read: the estimators touch every row once and copy each batch anyway, and
    # reading a large file into fresh memory cost ~0.5 s per 150 MB here (docs/benchmarks.md).
    return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))


def _read_npz(path: Path, key: str | None) -> np.ndarray:
    try:
        with np.load(path, allow_pickle=False) as data:
            return np.asarray(_pick({k: data[k] for k in data.files}, key, path))
    except zipfile.BadZipFile as err:
        raise InputError(f"cannot read {path} as .npz: not a zip archive") from err


def _read_torch(path: Path, key: str | None) -> np.ndarray:
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # the unpickler raises almost any type on a corrupt file
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"cannot read {path} as a tensor file: {reason[:200]}") from err
    if isinstance(obj, dict):
        obj = _pick(obj, key, path)
    if not isinstance(obj, torch.Tensor):
        raise InputError(f"{path} holds a {type(obj).__name__}, not a tensor: save one tensor")
    return _tensor_to_numpy(obj)


def _read_safetensors(path: Path, key: str | None) -> np.ndarray:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path))
    except SafetensorError as err:
        raise InputError(f"cannot read {path} as .safetensors: {str(err)[:200]}") from err
    return _tensor_to_numpy(_pick(tensors, key, path))


def _tensor_to_numpy(t: object) -> np.ndarray:
    import torch

    assert isinstance(t, torch.Tensor)
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    return t.numpy()


def _read_csv(path: Path, key: str | None) -> np.ndarray:
    import pandas as pd

    try:
        frame = pd.read_csv(path, header=None)
    except pd.errors.EmptyDataError as err:
        raise InputError(f"{path} is empty: give one point per row") from err
    except pd.errors.ParserError as err:
        raise InputError(f"cannot parse {path} as CSV: {str(err).strip()[:200]}") from err
    # A header row is recognised by not being numeric while the rows below it are.
    first = pd.to_numeric(frame.iloc[0], errors="coerce")
    if first.isna().any() and len(frame) > 1:
        frame = frame.iloc[1:]
    numeric = frame.apply(pd.to_numeric, errors="coerce")
    bad = numeric.isna() & frame.notna()
    if bad.any().any():
        row, col = np.argwhere(bad.to_numpy())[0]
        raise InputError(
            f"{path} has a non-numeric value {frame.iat[row, col]!r} "
            f"(data row {row + 1}, column {col + 1}): give numbers only"
        )
    return numeric.to_numpy(dtype=np.float64)


def _read_parquet(path: Path, key: str | None) -> np.ndarray:
    import pandas as pd
    import pyarrow

    try:
        frame = pd.read_parquet(path)
    except pyarrow.ArrowException as err:
        raise InputError(f"cannot read {path} as .parquet: {str(err)[:200]}") from err
    if key is not None:
        if key not in frame.columns:
            raise InputError(f"{path} has no column {key!r}; columns: {list(frame.columns)[:10]}")
        frame = frame[[key]]
    if len(frame.columns) == 1 and frame.dtypes.iloc[0] == np.dtype(object):
        rows = frame.iloc[:, 0].to_list()
        if len({len(r) for r in rows}) > 1:
            column = frame.columns[0]
            raise InputError(f"{path}: the embeddings in column {column!r} differ in length")
        return np.asarray(rows, dtype=np.float64)
    non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        raise InputError(f"{path} has non-numeric columns {non_numeric[:5]}: give numbers only")
    return frame.to_numpy()
