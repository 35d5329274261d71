"""Output folders: resume this folder or refuse, under an exclusive lock.

Every command that writes a folder goes through `claim` (or `lock` alone when it writes only
result files): the whole request is checked against what the folder already holds before
anything is created or touched, then the folder is locked, then its description file is
written. A second process on the same folder refuses at once with one line. The lock is an
`fcntl.flock` on `.scalelab.lock`, which the kernel drops when the holder dies, so a killed
run never blocks the next one (the file itself may stay; it holds only the last pid).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scalelab.config import Record
from scalelab.errors import ConfigError, InputError
from scalelab.io import atomic_write_json, to_json
from scalelab.runs.migrate import migrate, stamped

#: A config as a folder saves it: its dict, or the record that writes itself as one.
Saved = dict[str, Any] | Record

LOCK = ".scalelab.lock"

# Description files of each kind of folder at its top level, and what they mean to a reader.
MARKERS = {
    "sweep.json": "a sweep",
    "config.json": "a training run",
    "pipeline.json": "a demo folder",
    "combined.json": "a table built from sweeps (scalelab manifold combine or select)",
}

_held: dict[Path, int] = {}  # folder -> open lock file descriptor, for this process


def same_config(saved: dict[str, Any], wanted: Saved, where: str | Path) -> None:
    """Refuse to resume a folder whose saved config (of any format: `migrate`d) differs from
    the one asked for, key by key (compared as JSON: tuples and lists are the same)."""
    saved = _flat(migrate(json.loads(to_json(saved))))
    wanted = _flat(json.loads(to_json(wanted)))
    lacking = set(wanted) - set(saved)
    diffs = [k for k in sorted(set(saved) | set(wanted)) if saved.get(k) != wanted.get(k)]
    if not diffs:
        return
    shown = "; ".join(
        f"{k}: saved={'(none)' if k in lacking else repr(saved[k])} now={wanted.get(k)!r}"
        for k in diffs[:4]
    ) + (" ..." if len(diffs) > 4 else "")
    fix = (
        "use a new --out folder (a saved config without these keys comes from an older "
        "scalelab or other options; this version cannot resume it)"
        if lacking & set(diffs)
        else "use a new --out folder or repeat the original options"
    )
    raise ConfigError(f"{where} holds a run with a different config ({shown}); {fix}")


def read_meta(path: Path) -> dict[str, Any]:
    """A folder's description file as this version writes it (`migrate`d from its format), or
    an InputError naming the folder and the fix."""
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(
            f"{path} is unreadable or not JSON ({type(err).__name__}); restore it, or use a "
            "new --out folder"
        ) from err
    if not isinstance(meta, dict):
        raise InputError(f"{path} does not hold a JSON object; restore it or use a new --out")
    try:
        return migrate(meta)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def write_meta(path: Path, body: Saved) -> None:
    """A description file, atomically, with this version's format key (`migrate`)."""
    atomic_write_json(path, stamped(json.loads(to_json(body))))


def check(
    folder: str | Path,
    meta: str,
    config: Saved,
    *,
    kind: str | None = None,
) -> dict[str, Any] | None:
    """Read-only half of `claim`: the saved description (None for a new folder), after
    checking that `folder` is not a file, holds no other kind of run, and has this config."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a folder; give a folder path to --out")
    for marker, what in MARKERS.items():
        if marker != meta and (folder / marker).is_file():
            raise ConfigError(
                f"{folder} holds {what} ({marker}), not this kind of output; use a new --out"
            )
    path = folder / meta
    if not path.exists():
        return None
    saved = read_meta(path)
    if kind is not None:
        if saved.get("kind") != kind:
            raise ConfigError(
                f"{folder} holds a {saved.get('kind')!r} sweep, not {kind!r}; use a new --out"
            )
        saved_cfg = saved.get("config")
    else:
        saved_cfg = saved
    if not isinstance(saved_cfg, dict):
        raise InputError(f"{path} has no config section; restore it or use a new --out")
    same_config(saved_cfg, config, folder)
    return saved


def check_file(path: str | Path | None) -> None:
    """Refuse an output *file* path that is a folder, before any work is done."""
    if path is not None and Path(path).is_dir():
        raise InputError(f"{path} is a folder; give a file path for the output")


def claim(
    folder: str | Path,
    meta: str,
    config: Saved,
    *,
    kind: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Resume `folder` or refuse; lock it; write `meta` for a new folder.

    `meta` holds `config` itself, or `{"kind", "config", **extra}` when `kind` is given.
    Returns the folder."""
    folder = Path(folder)
    check(folder, meta, config, kind=kind)
    lock(folder)
    if check(folder, meta, config, kind=kind) is None:  # again, under the lock
        body = config if kind is None else {"kind": kind, "config": config, **(extra or {})}
        write_meta(folder / meta, body)
    return folder


# A worker process of a sweep (spawned: it imports the main module again) that finds its own
# parent holding the lock is re-running an unguarded script, not racing another command.
MAIN_GUARD = (
    "{folder} is locked by this worker's parent process (pid {pid}): the script that started "
    "a sweep with workers > 1 ran again in the worker; put its code under "
    '`if __name__ == "__main__":` (workers are spawned and import the main module; '
    "docs/python.md)"
)


def lock(folder: str | Path) -> Path:
    """Create `folder` and take its exclusive lock (re-entrant within this process), or
    raise at once if another live process holds it."""
    folder = Path(folder)
    key = folder.resolve()
    if key in _held:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        if other == str(os.getppid()) and multiprocessing.current_process().name != "MainProcess":
            raise ConfigError(MAIN_GUARD.format(folder=folder, pid=other)) from None
        raise ConfigError(
            f"{folder} is in use by another scalelab process (pid {other}); wait for it to "
            "finish, or use another --out"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = fd
    return folder


def release(folder: str | Path) -> None:
    """Drop this process's lock on `folder` (no-op if not held)."""
    fd = _held.pop(Path(folder).resolve(), None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock


def release_under(folder: str | Path) -> None:
    """Drop this process's locks on `folder` and every folder below it (a library call that
    locked sub-folders, e.g. the sweeps of a validation, ends holding none)."""
    root = Path(folder).resolve()
    for key in list(_held):
        if key == root or root in key.parents:
            release(key)


def release_all() -> None:
    for key in list(_held):
        release(key)


@contextlib.contextmanager
def claimed(folder: str | Path, meta: str, config: Saved, **kw: Any) -> Iterator[Path]:
    """`claim` for the duration of a `with` block (the lock is released after it, unless
    the folder was already locked by this process before)."""
    was_held = Path(folder).resolve() in _held
    path = claim(folder, meta, config, **kw)
    try:
        yield path
    finally:
        if not was_held:
            release(path)


@contextlib.contextmanager
def locked(folder: str | Path) -> Iterator[Path]:
    """`lock` for the duration of a `with` block."""
    was_held = Path(folder).resolve() in _held
    path = lock(folder)
    try:
        yield path
    finally:
        if not was_held:
            release(path)


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested sections as dotted keys (`train.lr`); an empty section stays a value."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
