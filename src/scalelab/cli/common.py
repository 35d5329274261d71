"""Helpers shared by CLI modules: printing JSON or a rich table, common options."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from scalelab.io import to_json
from scalelab.runner import Backend

console = Console()

QUIET = typer.Option(False, "--quiet", "-q", help="No progress bars; logs only.")
JSON = typer.Option(False, "--json", help="Print the result as JSON on stdout.")
SEED = typer.Option(0, "--seed", help="Random seed (recorded with the results).")
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


def backend_from(kind: str, address: str | None, cpus: int, gpus: float) -> Backend:
    """The sweep backend the shared options describe (ConfigError on a bad combination)."""
    return Backend(kind=kind, address=address, num_cpus=cpus, num_gpus=gpus)


def print_json(obj: Any) -> None:
    typer.echo(to_json(obj))


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    """A rich table from a list of dicts with the same keys."""
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
