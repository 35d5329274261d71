"""The `scalelab` command line: a thin layer that parses, validates, calls the library and
prints. Each command group lives in its own module with a `register(app)` function.

Why lazy: importing every command module (and with them torch, matplotlib, pandas, numba)
takes seconds before any command runs. The top-level group knows each command's module and
one-line help from `COMMANDS`, lists them from there, and imports a module only when its
command runs or shows its own help (click's "lazy loading of subcommands" pattern).
`tests/test_cli_lazy.py` checks that the one-line helps below match the commands'
docstrings."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from scalelab.errors import ScalelabError

HELP = (
    "Scaling laws from intrinsic dimension, and depth separation on induction heads. "
    "`scalelab --version` prints the version."
)

# command name -> (module under scalelab.cli, its help's first line), in the listing order.
COMMANDS: dict[str, tuple[str, str]] = {
    "id": (
        "intrinsic",
        "Estimate the intrinsic dimension of a point cloud and the exponents it predicts.",
    ),
    "exponents": (
        "intrinsic",
        "Predicted exponents from d (α_D = 2β/(2β+d), α_N = 2β/d), or convert one exponent.",
    ),
    "train": ("train", "Train a GPT on a prepared token store."),
    "estimate": (
        "estimate",
        "Estimate the intrinsic dimension of a corpus with a language model (the seed paper's "
        "protocol) and predict the data and model scaling exponents from it.",
    ),
    "fit": ("fit", "Fit a scaling law to a table, with bootstrap 95% intervals."),
    "forecast": (
        "forecast",
        "Forecast larger runs' losses from small ones, with the exponent fixed (from d or a "
        "number) or free; data needed for a loss; the compute-optimal split for a budget; with "
        "--score, every method scored on held-out runs.",
    ),
    "report": (
        "report",
        "Write a self-contained HTML report (figures embedded) and its Markdown twin for a "
        "data, model, manifold or induction sweep, or an experiment's folder; prints where they "
        "are.",
    ),
    "validate": (
        "validate",
        "Will this corpus scale as its intrinsic dimension predicts? d from each reference "
        "model (before training), a data sweep and a model-size sweep trained to convergence "
        "(checked by perturbing the largest runs), d along the sweep, fits, and a report. "
        "Re-running resumes.",
    ),
    "demo": (
        "validate",
        "`scalelab validate` on the built-in default corpus, into demo-out/. Re-running skips "
        "every finished stage.",
    ),
    "validate-many": (
        "many",
        "Each source of d (and the second theory) scored as a predictor of alpha_D across "
        "corpora, beside baselines that ignore d (paired bootstrap intervals); writes a "
        "table, figures and a report.",
    ),
    "corpus": (
        "corpus",
        "Corpora: list the built-ins, tokenise one into a token store, generate a synthetic one.",
    ),
    "ablate": (
        "estimate",
        "How the estimated dimension moves with layer, position, model and batch size (the "
        "seed paper's Figure 4).",
    ),
    "sweep": (
        "sweep",
        "Data-size and model-size sweeps (resumable; one `scalelab train` run folder each).",
    ),
    "manifold": (
        "manifold",
        "Regression on manifolds of known intrinsic dimension (Theorem 1 checked directly).",
    ),
    "induction": (
        "induction",
        "Induction heads: one layer fails, two layers succeed (solver, training, construction, "
        "communication protocol, sweeps).",
    ),
}


def load_command(name: str, table: dict[str, tuple[str, str]] = COMMANDS) -> Any:
    """Import the module of command `name` (its entry in `table`) and build its click command
    with Typer."""
    import typer
    import typer.main

    module = importlib.import_module(f"scalelab.cli.{table[name][0]}")
    app = typer.Typer(pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None)
    module.register(app)
    return plain_usage(typer.main.get_group(app).commands[name])


def plain_usage(command: Any) -> Any:
    """`command` (and its subcommands) with each argument written in the usage line as a
    reader types it, `TABLE` or `[TABLE]`: Typer writes a required one as `{table}`, which
    reads like a set or a placeholder to fill in with braces."""
    for param in command.params:
        if param.param_type_name == "argument":
            shown = param.metavar or param.name.upper()
            shown = shown if param.required else f"[{shown}]"
            piece = shown + ("..." if param.nargs != 1 else "")
            param.get_usage_pieces = lambda ctx, piece=piece: [piece]
    for sub in getattr(command, "commands", {}).values():
        plain_usage(sub)
    return command


def short_help(text: str, limit: int) -> str:
    """The first sentence of `text` if it fits in `limit` characters, else as many whole words
    as fit with "..." (the rule click applies to command help)."""
    words: list[str] = []
    for word in text.split():
        if len(" ".join([*words, word])) > limit:
            break
        words.append(word)
        if word.endswith("."):
            return " ".join(words)
    else:
        return " ".join(words)
    while words and len(" ".join(words)) + 3 > limit:
        words.pop()
    return " ".join(words) + "..."


def lazy_group(table: dict[str, tuple[str, str]]) -> type:
    """Typer's own group class (so its errors and contexts match the commands') where the
    commands of `table` are listed from it and imported only when one runs or shows its own
    help; commands registered on the group itself come first, as they are."""
    from typer.core import TyperGroup

    class LazyGroup(TyperGroup):
        def list_commands(self, ctx: Any) -> list[str]:
            return [*super().list_commands(ctx), *table]

        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            if cmd_name in table:
                return load_command(cmd_name, table)
            return super().get_command(ctx, cmd_name)

        def format_commands(self, ctx: Any, formatter: Any) -> None:
            names = self.list_commands(ctx)
            limit = formatter.width - 6 - max(len(name) for name in names)
            rows = [
                (name, short_help(table[name][1], limit))
                if name in table
                else (name, self.commands[name].get_short_help_str(limit))
                for name in names
            ]
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    return LazyGroup


def make_app() -> Any:
    """The top-level group: every command lazy (`COMMANDS`)."""
    return lazy_group(COMMANDS)(
        name="scalelab", help=HELP, no_args_is_help=True, rich_markup_mode=None
    )


STOPPED = "stopped; re-run the same command to resume"
INTERRUPTED = 130  # the exit code of a Ctrl-C (128 + SIGINT), as shells report it


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage and library errors become one line on stderr and exit code 2.

    OpenMP threads (torch's, numba's) wait passively between parallel regions, and OpenBLAS's
    threads (numpy's products) spin only briefly after each product, unless the environment
    says otherwise: spinning threads take the CPU from the next parallel step, which costs 30%
    or more on a loaded machine (docs/benchmarks/intrinsic.md, docs/benchmarks.md). Both are
    read when the libraries load, before numpy or torch is imported, hence here."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")  # 2^16 cycles instead of 2^28
    blas_threads_for_load()
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        from scalelab import __version__

        print(f"scalelab {__version__}")
        sys.exit(0)
    try:
        from typer._click import exceptions as click_errors  # typer >= 0.24 has its own click
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click import exceptions as click_errors
    import typer

    try:
        code = make_app().main(args=argv, standalone_mode=False)
        if code == INTERRUPTED:  # typer turns Ctrl-C into a silent return of 130
            print(STOPPED, file=sys.stderr)
    except click_errors.NoArgsIsHelpError as err:
        print(err.ctx.get_help() if err.ctx else str(err))
        code = 0
    except click_errors.UsageError as err:
        print(usage_line(err), file=sys.stderr)
        code = 2
    except click_errors.ClickException as err:  # e.g. a file option that cannot be opened
        print(f"error: {err.format_message()}", file=sys.stderr)
        code = 2
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C: every folder is resumable as it is
        print(STOPPED, file=sys.stderr)
        code = INTERRUPTED
    except ScalelabError as err:
        print(f"error: {_one_line(str(err))}", file=sys.stderr)
        code = 2
    finally:
        outdir = sys.modules.get("scalelab.runs.outdir")  # locks exist only if a command took one
        if outdir is not None:
            outdir.release_all()
    sys.exit(code if isinstance(code, int) else 0)


def blas_threads_for_load() -> None:
    """One BLAS thread for numpy's products when the machine is already busy (1-minute load
    average at least its CPU count), unless the environment sets OPENBLAS_NUM_THREADS.

    Why: on a busy 2-core machine a 2-thread product waits for its slower thread, and the
    k-NN search of `scalelab id` ran 1.4x faster per batch with one (docs/benchmarks.md); on
    a quiet machine both threads are used. Results do not depend on it."""
    if "OPENBLAS_NUM_THREADS" in os.environ or not hasattr(os, "getloadavg"):
        return
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if os.getloadavg()[0] >= (cpus or 1):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def usage_line(err: Any) -> str:
    """Click's usage error as one line: the problem, then where to read the options."""
    command = err.ctx.command_path if err.ctx else "scalelab"
    return f"error: {_one_line(err.format_message()).rstrip('.')}; see `{command} --help`"


def _one_line(text: str) -> str:
    return " ".join(text.split())
