"""The `scalelab` command line: a thin layer that parses, validates, calls the library and
prints. Each command group lives in its own module with a `register(app)` function."""

from __future__ import annotations

import sys

import typer

from scalelab.cli import (
    corpus,
    demo,
    estimate,
    fit,
    induction,
    intrinsic,
    manifold,
    report,
    sweep,
    train,
)
from scalelab.errors import ScalelabError

app = typer.Typer(
    name="scalelab",
    help="Scaling laws from intrinsic dimension, and depth separation on induction heads.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)

for _module in (intrinsic, corpus, train, estimate, sweep, fit, report, manifold, induction, demo):
    _module.register(app)


def main() -> None:
    """Entry point: library errors become one line on stderr and exit code 2."""
    try:
        app()
    except ScalelabError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
