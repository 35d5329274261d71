"""Helpers shared by CLI modules: printing JSON or a rich table, common options."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from scalelab.io import to_json

console = Console()

QUIET = typer.Option(False, "--quiet", "-q", help="No progress bars; logs only.")
JSON = typer.Option(False, "--json", help="Print the result as JSON on stdout.")
SEED = typer.Option(0, "--seed", help="Random seed (recorded with the results).")


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
