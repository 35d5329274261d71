"""An experiment in one place: its config, how it runs into a folder, its figure and the
tables its command prints, as one record (`Experiment`) that its own module holds as
`EXPERIMENT`. `scalelab.cli.experiment` turns the record into a command (options derived
from the config), so a new experiment of this kind is its module and one registry line
(`scalelab.cli.induction.EXPERIMENTS`), not four files kept in step by hand.

Torch-free and matplotlib-free: the command line lists experiments without importing them."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalelab.config import Config
from scalelab.io import atomic_write_bytes

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
    `out_help` the help of the command's --out."""

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


def save_figure(fig: Figure, path: str | Path) -> Path:
    """`fig` as a PNG at `path` (90 dpi, written atomically): every experiment's figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)
