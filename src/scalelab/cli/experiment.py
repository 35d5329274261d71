"""Each experiment of `scalelab.induction.experiments.EXPERIMENTS` as a command, made from its
module's `EXPERIMENT` record (`scalelab.runs.experiment.Experiment`): --out, the config's
options (`cli.options.From`: --preset quick where the config has `quick()`, --config FILE),
--quiet where the experiment has it, and --json. One adapter, so that an experiment's
command is written once, not once per experiment. It also writes the folder's marker
(`runs.experiment.mark`), from which `scalelab report OUT` draws the experiment's section."""

from __future__ import annotations

import importlib
import inspect
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer

from scalelab.cli.common import JSON, QUIET, print_json, print_record, print_table, set_threads
from scalelab.cli.options import From, derive
from scalelab.errors import ConfigError
from scalelab.induction.experiments import EXPERIMENTS
from scalelab.runs.experiment import Experiment, check_marker, mark


def quick_preset(cls: type, what: str) -> dict[str, Any]:
    """`--preset quick` (the config's `quick()`), the one way an experiment's small version
    is chosen; `--quick`, the switch that chose it before, still works with a note."""
    return {
        "presets": {"quick": lambda: cls().quick()},
        "preset_help": f"quick: {what}; options given here override it.",
        "retired_presets": {"--quick": "quick"},
    }


def check_out(out: Path | None) -> None:
    """Refuse an output path that is an existing file, before any work is done."""
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder path")


def experiment_command(exp: Experiment, name: str) -> Callable[..., None]:
    """The command `name` of `exp` (Typer reads its signature; see `Experiment` for what it
    does); its folder gets the marker naming `name` once `run` has returned."""

    def command(out: Path, cfg: Any, json_out: bool, quiet: bool = False) -> None:
        check_out(out)
        check_marker(out, name)
        if exp.before is not None and not json_out:
            print_record(*exp.before(cfg))
        if "torch" in sys.modules:  # the experiment uses torch: one thread (a shared machine)
            set_threads(1)
        start = time.perf_counter()
        result = exp.run(cfg, out, quiet=quiet) if exp.quiet else exp.run(cfg, out)
        mark(out, name, cfg)
        exp.draw(result, out)
        if json_out:
            print_json(exp.json(result))
            return
        for title, rows in exp.tables(result, cfg, out):
            print_table(title, rows)
        if exp.after is not None:
            typer.echo(exp.after(result, out, time.perf_counter() - start))

    preset = quick_preset(exp.config, exp.quick) if exp.quick else {}
    params = [
        _kw("out", Path, typer.Option(..., help=exp.out_help)),
        _kw("cfg", exp.config, From(exp.config, **preset)),
        *([_kw("quiet", bool, QUIET)] if exp.quiet else []),
        _kw("json_out", bool, JSON),
    ]
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return derive(command)


def register(group: typer.Typer, table: Mapping[str, tuple[str, str]] = EXPERIMENTS) -> None:
    """Add a command per experiment of `table` (name -> (module holding `EXPERIMENT`, the
    help's first line)) to `group`."""
    for name, (module, text) in table.items():
        exp = importlib.import_module(module).EXPERIMENT
        group.command(name, help=text)(experiment_command(exp, name))


def _kw(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )
