"""An experiment in one place: its config, how it runs into a folder, its figure and the
tables its command prints, as one record (`Experiment`) that its own module holds as
`EXPERIMENT`. `scalelab.cli.experiment` turns the record into a command (options derived
from the config), so a new experiment of this kind is its module and one registry line
(`scalelab.induction.experiments.EXPERIMENTS`), not four files kept in step by hand. The
command also leaves a marker in its folder (`MARKER`, `mark`), from which `scalelab report`
finds the experiment and reads its result back (`Experiment.load`) for its report section.

Torch-free and matplotlib-free: the command line lists experiments without importing them."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.io import atomic_write_bytes, provenance, read_json
from scalelab.runs.outdir import read_meta, write_meta

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: A printed table: its title and its rows (dicts with the same keys).
Table = tuple[str, list[dict[str, Any]]]


def _whole(result: Any) -> Any:
    return result


@dataclasses.dataclass(frozen=True)
class Experiment:
    """What an experiment's command does, in order: `before(cfg)` (a field/value record
    printed before the work, not with --json), `run(cfg, out)` (the result; also
    `quiet=` where `quiet`, which adds --quiet), `draw(result, out)` (the figure's path),
    then `json(result)` printed with --json, else the `tables(result, cfg, out)` and
    `after(result, out, seconds)` (a last line, given the seconds since `run` started).
    `quick` is the quick preset's help where the config has `quick()` (--preset quick);
    `out_help` the help of the command's --out. `load(out)` reads the result back from the
    folder `run` wrote (for the report: its figure and tables), None where it cannot be."""

    config: type[Config]
    run: Callable[..., Any]
    draw: Callable[[Any, Path], Path]
    tables: Callable[[Any, Any, Path], list[Table]]
    out_help: str
    json: Callable[[Any], Any] = _whole
    quick: str | None = None
    quiet: bool = False
    before: Callable[[Any], tuple[str, dict[str, Any]]] | None = None
    after: Callable[[Any, Path, float], str] | None = None
    load: Callable[[Path], Any] | None = None


def saved_json(name: str, key: str | None = None) -> Callable[[Path], Any]:
    """A `load` that reads the JSON file `name` the run wrote into its folder (its `key`)."""

    def load(out: Path) -> Any:
        doc = read_json(Path(out) / name)
        return doc if key is None else doc[key]

    return load


#: The file an experiment's command writes into its folder, naming the experiment: what
#: `scalelab report` reads (`report.build.KINDS["experiment"]`).
MARKER = "experiment.json"


def read_marker(out: Path) -> dict[str, Any]:
    """The marker of the folder `out` (an InputError where it is missing or unreadable)."""
    return read_meta(Path(out) / MARKER)


def check_marker(out: Path, name: str) -> None:
    """Refuse, before any work, a folder whose marker names another experiment."""
    if (Path(out) / MARKER).is_file():
        other = read_marker(out).get("experiment")
        if other != name:
            raise ConfigError(f"{out} holds the output of {other!r}, not {name!r}; use a new --out")


def mark(out: Path, name: str, cfg: Config) -> Path:
    """Write the marker of the folder `out`: the experiment `name`, its config, provenance."""
    meta = {"kind": "experiment", "experiment": name, "config": cfg.to_dict()}
    write_meta(Path(out) / MARKER, {**meta, "provenance": provenance()})
    return Path(out) / MARKER


@dataclasses.dataclass(frozen=True)
class ExperimentAnalysis:
    """An experiment's folder read back for its report: the command's `name` and `help`
    line, the folder, the `experiment` record, the saved `config`, the `result` its `load`
    read (None where it has no `load`) and the `tables` its command prints."""

    name: str
    help: str
    folder: Path
    experiment: Experiment
    config: Config
    result: Any
    tables: list[Table]


def save_figure(fig: Figure, path: str | Path) -> Path:
    """`fig` as a PNG at `path` (90 dpi, written atomically): every experiment's figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)
