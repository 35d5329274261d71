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
from scalelab.outdir import release_all

try:  # typer >= 0.24 carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as click_errors

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
    """Entry point: usage and library errors become one line on stderr and exit code 2."""
    try:
        code = app(standalone_mode=False)
    except click_errors.NoArgsIsHelpError as err:
        print(err.ctx.get_help() if err.ctx else str(err))
        code = 0
    except click_errors.UsageError as err:
        print(usage_line(err), file=sys.stderr)
        code = 2
    except click_errors.ClickException as err:  # e.g. a file option that cannot be opened
        print(f"error: {err.format_message()}", file=sys.stderr)
        code = 2
    except (typer.Abort, KeyboardInterrupt):
        print("error: aborted (Ctrl-C); rerun the same command to continue", file=sys.stderr)
        code = 130
    except ScalelabError as err:
        print(f"error: {_one_line(str(err))}", file=sys.stderr)
        code = 2
    finally:
        release_all()
    sys.exit(code if isinstance(code, int) else 0)


def usage_line(err: click_errors.UsageError) -> str:
    """Click's usage error as one line: the problem, then where to read the options."""
    command = err.ctx.command_path if err.ctx else "scalelab"
    return f"error: {_one_line(err.format_message()).rstrip('.')}; see `{command} --help`"


def _one_line(text: str) -> str:
    return " ".join(text.split())
