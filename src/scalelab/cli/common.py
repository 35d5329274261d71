"""Helpers shared by CLI modules: printing JSON or a rich table, the common options, list
parsing and the --threads setting. Every command function is named `<name>_command` and
takes `json_out: bool = JSON` for --json."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from scalelab.config import accepts
from scalelab.errors import ConfigError
from scalelab.fields import positive_int

T = TypeVar("T")

QUIET = typer.Option(False, "--quiet", "-q", help="No progress bars; logs only.")
JSON = typer.Option(False, "--json", help="Print the result as JSON on stdout.")
SEED = typer.Option(0, "--seed", help="Random seed (recorded with the results).")
THREADS_HELP = "CPU threads for torch (default: torch's; 1 on a busy machine)."


def renamed_option(old: str, new: str) -> Any:
    """A retired spelling of the option `new`, hidden from --help: users' scripts that give
    `old` keep working, with a one-line note on stderr naming `new`. The command takes the
    two as separate parameters and reads them as one (`either`)."""

    def note(value: Any) -> Any:
        if value is not None:
            typer.echo(f"note: {old} is deprecated; use {new}", err=True)
        return value

    return typer.Option(None, old, hidden=True, callback=note)


def either(value: T, retired: T | None) -> T:
    """An option's value, or its retired spelling's where that was given (`renamed_option`)."""
    return value if retired is None else retired


def threads_option(default: int | None = None, help: str = THREADS_HELP) -> Any:
    """The --threads option; `set_threads` applies it."""
    return typer.Option(default, "--threads", help=help)


def set_threads(threads: int | None, *, workers: int | None = None) -> None:
    """Check --workers/--threads and bound torch's CPU threads (results do not depend on it;
    speed on a shared machine does). torch is imported only when a count is given."""
    if workers is not None:
        positive_int(workers, "--workers")
    if threads is None:
        return
    positive_int(threads, "--threads")
    import torch

    torch.set_num_threads(threads)


def parse_list(
    text: str, convert: Callable[[str], T], option: str, kind: str | None = None
) -> list[T]:
    """'1,2,3' as a list of `convert`ed values, or one line naming the option and the fix."""
    kind = kind or {int: "integers", float: "numbers"}.get(convert, "values")
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = [convert(p) for p in parts]
    except ValueError:
        values = []
    if not values:
        raise ConfigError(
            f"{option} must be comma-separated {kind}, got {text!r} (e.g. {option} 1,2,4)"
        )
    return values


def configured(make: Callable[..., T], options: dict[str, str], **fields: Any) -> T:
    """`make(**fields)` (a config class or a config's `replace`), with a refusal that names the
    option the user gave (`--n-values 4: every n must be >= 8 ...`): the config speaks of its
    fields, so each field is tried alone to find the one at fault; `options` maps a field to
    its option (a None field is one not given). Where no field fails alone (a rule between
    two), it names those the message speaks of, else all."""
    try:
        return make(**fields)
    except ConfigError as err:
        given = {f: v for f, v in fields.items() if f in options and v is not None}
        alone = [f for f, v in given.items() if not accepts(make, **{f: v})]
        alone = alone or [f for f in given if f in str(err)] or list(given)
        shown = ", ".join(f"{options[f]} {_as_typed(given[f])}" for f in alone)
        raise ConfigError(f"{shown}: {err}" if shown else str(err)) from None


def _as_typed(value: Any) -> str:
    """A value as it was typed on the command line: a list comma-separated."""
    if isinstance(value, tuple | list):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


BACKEND = typer.Option(
    "local",
    "--backend",
    help="local (this process or --workers processes) or ray (one task a run).",
)
RAY_ADDRESS = typer.Option(
    None,
    "--ray-address",
    help="Ray cluster to join (HOST:6379 from `ray start --head`); default: a local instance. "
    "The sweep folder must be on a filesystem every node mounts at the same path.",
)
RUN_CPUS = typer.Option(1, "--run-cpus", help="With --backend ray: CPUs (torch threads) a run.")
RUN_GPUS = typer.Option(0.0, "--run-gpus", help="With --backend ray: GPUs a run requests.")


def backend_from(kind: str, address: str | None, cpus: int, gpus: float) -> Any:
    """The sweep backend the shared options describe (ConfigError on a bad combination)."""
    from scalelab.runs.sweep import Backend

    return Backend(kind=kind, address=address, num_cpus=cpus, num_gpus=gpus)


def shown(path: str | Path) -> str:
    """`path` as a user reads it: relative to the working directory when under it (files
    store absolute paths, so that a summary means the same file wherever it is read)."""
    rel = os.path.relpath(path)
    return str(path) if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def print_json(obj: Any) -> None:
    from scalelab.io import to_json

    typer.echo(to_json(obj))


def print_record(title: str, record: dict[str, Any]) -> None:
    """One result as a two-column field/value table (fits a terminal)."""
    print_table(title, [{"field": k, "value": v} for k, v in record.items()])


PIPE_WIDTH = 10_000  # columns for a table printed to a file or pipe: no folding


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    """A rich table from a list of dicts with the same keys. Written to a file or a pipe, the
    table takes its natural width: rich would otherwise fold it into 80 columns and cut its
    headers, which a terminal's real width does not need."""
    import sys

    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)
    if not rows:
        console.print(f"{title}: (no rows)")
        return
    table = Table(title=title)
    for key in rows[0]:
        table.add_column(str(key))
    for row in rows:
        table.add_row(*(_fmt(v) for v in row.values()))
    console.print(table)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
