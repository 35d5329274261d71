"""One theorem table from several sweeps: each (d, β) curve from the sweep that decides it.

Why: a curve the regime test leaves UNDECIDED is rerun with more seeds or more range in its own
folder (the first runs copied in). The theory is scored across curves (`theorem.scored`), so
its verdict needs every curve's deciding runs in one table. `combine_sweeps` writes that table
as an ordinary manifold sweep folder (sweep.json, runs/, runs.csv, the ideal learner's caches)
that `scalelab report` draws, with `combined.json` naming each curve's source.

Rules:
- a curve comes from the last source that holds data runs of it (so list the deciding sweep
  last), with its `wide` runs; the `id` run of a d from the source of its largest-β curve;
- sources must agree on everything but the design (`DESIGN_FIELDS`: which curves, sizes and
  seeds; the step cap, since a run stopped by patience is the same under any larger cap and
  the report's "at step cap" column counts the runs that reached theirs; and the model and
  online runs, which are not taken);
- the field of a torus curve is capped at its sweep's largest n (`ManifoldSweepConfig.problem`),
  so the combined config keeps each curve's cap in `field_caps`: pairing with the ideal learner
  and the Bayes risk then use the field the runs were trained on.

`select_by_validation` writes the same kind of table for another purpose: the estimator that
chooses its model per run by validation MSE among several (the `theorem` and `theorem-deep`
presets: a validation grid over depth). The candidates are sweeps trained on the same draws
(`plan.run_rng` depends on the problem and the run, not on the model), so the selection needs
no training of its own; the table's config is the first candidate's (its model fields
describe that candidate only), and `combined.json` names the candidates and, per curve, how
many runs each gave.

The folder is a table, not a sweep to resume: `combined.json` is a marker that a sweep refuses
to write into (`runs.outdir.MARKERS`)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from scalelab.config import OMIT_DEFAULT, Record
from scalelab.errors import InputError
from scalelab.io import atomic_write, atomic_write_json, provenance
from scalelab.manifold.ideal import EXPECTED_FILE, RUNS_FILE
from scalelab.manifold.plan import KIND, ManifoldSweepConfig, config_from_json
from scalelab.runs.migrate import migrate_table
from scalelab.runs.outdir import read_meta, write_meta

MARKER = "combined.json"
#: The config fields sources may differ in (module docstring): the data runs' design, the
#: step cap, and the other kinds of run, which a combined table does not take.
DESIGN_FIELDS = (
    "dims", "betas", "extra_problems", "n_values", "seeds", "max_steps", "field_caps",
    "model_dims", "model_widths", "online_dims", "online_widths", "online_steps",
    "online_seeds", "online_step_growth", "online_long_factor", "online_only",
)  # fmt: skip
#: Files of a run folder that are copied (its weights, if any were kept, are not).
RUN_FILES = ("config.json", "result.json")


@dataclass(frozen=True)
class CurveSource(Record):
    """Where one (d, β) curve of a combined table comes from."""

    d: int
    beta: float
    source: str
    runs: int
    seeds: int
    n_min: int
    n_max: int
    field_cap: int
    git_revision: str | None
    # a selected table's: how many of the curve's runs each candidate gave (`select_by_validation`)
    chosen: str | None = field(default=None, metadata=OMIT_DEFAULT)


@dataclass(frozen=True)
class Source:
    """One source sweep, read: its folder, config, provenance and runs table."""

    folder: Path
    config: ManifoldSweepConfig
    provenance: dict[str, Any]
    table: pd.DataFrame

    @classmethod
    def read(cls, folder: Path) -> Source:
        meta = read_meta(folder / "sweep.json") if (folder / "sweep.json").is_file() else None
        if meta is None or meta.get("kind") != KIND or not (folder / "runs.csv").is_file():
            raise InputError(
                f"source {folder}: not a manifold sweep folder with runs.csv; give folders "
                "made by `scalelab manifold sweep`"
            )
        if (folder / MARKER).is_file():
            raise InputError(
                f"source {folder}: a combined table itself; give the sweeps it was made from"
            )
        cfg = config_from_json(meta["config"])
        if cfg.target != "field":
            raise InputError(
                f"source {folder}: target {cfg.target!r}; combine sweeps of the Gaussian field "
                "(--preset theorem), the ones the theorem report scores"
            )
        table = migrate_table(pd.read_csv(folder / "runs.csv"))
        return cls(folder, cfg, meta.get("provenance", {}), table)

    def curves(self) -> set[tuple[int, float]]:
        data = self.table[self.table["task"] == "data"]
        return {(int(d), float(b)) for d, b in zip(data["d"], data["beta"], strict=True)}


def _agree(first: Source, other: Source) -> None:
    """Refuse sources whose problem or estimator differ (anything outside DESIGN_FIELDS)."""
    a, b = first.config.to_dict(), other.config.to_dict()
    for key in a:
        if key not in DESIGN_FIELDS and a[key] != b.get(key):
            raise InputError(
                f"source {other.folder}: its {key} is {b.get(key)!r} where {first.folder}'s is "
                f"{a[key]!r}; combine sweeps of one problem and one estimator (they may differ "
                f"only in {', '.join(DESIGN_FIELDS)})"
            )


def _rows(src: Source, d: int, beta: float, tasks: tuple[str, ...]) -> pd.DataFrame:
    t = src.table
    return t[t["task"].isin(tasks) & (t["d"] == d) & (t["beta"] == beta)]


def _combined_config(
    first: ManifoldSweepConfig, chosen: dict[tuple[int, float], Source], table: pd.DataFrame
) -> ManifoldSweepConfig:
    """The first source's config with the design of the union: its curves (dims at the most
    common β, the others as extra pairs), sizes and seeds, the largest step cap, and each
    curve's own field cap."""
    curves = sorted(chosen)
    betas = [b for _, b in curves]
    beta0 = max(set(betas), key=lambda b: (betas.count(b), b))
    data = table[table["task"] == "data"]
    return first.replace(
        dims=tuple(d for d, b in curves if b == beta0),
        betas=(beta0,),
        extra_problems=tuple((d, b) for d, b in curves if b != beta0),
        n_values=tuple(sorted({int(n) for n in data["n"]})),
        seeds=tuple(sorted({int(s) for s in data["seed"]})),
        max_steps=max(s.config.max_steps for s in chosen.values()),
        model_dims=(),
        model_widths=(),
        online_dims=(),
        online_widths=(),
        online_only=False,
        field_caps=tuple(
            (d, b, src.config.field_cap(d, b)) for (d, b), src in sorted(chosen.items())
        ),
    )


def combine_sweeps(sources: Sequence[str | Path], out: str | Path) -> list[CurveSource]:
    """Write the combined table of `sources` into `out` (module docstring); returns where each
    curve came from. `out` is written whole or not at all (built beside it, then renamed)."""
    out = Path(out)
    if not sources:
        raise InputError("give at least one source sweep folder")
    _check_out(out)
    read = [Source.read(Path(s)) for s in sources]
    for src in read[1:]:
        _agree(read[0], src)
    chosen: dict[tuple[int, float], Source] = {}
    for src in read:  # the last source of a curve wins
        for curve in src.curves():
            chosen[curve] = src
    if not chosen:
        raise InputError("the sources hold no finished data runs; run the sweeps first")
    id_source = {d: src for (d, _), src in sorted(chosen.items())}  # its largest β's
    picked = [(_rows(src, d, b, ("data", "wide")), src) for (d, b), src in sorted(chosen.items())]
    picked += [
        (src.table[(src.table["task"] == "id") & (src.table["d"] == d)], src)
        for d, src in sorted(id_source.items())
    ]
    table = pd.concat([rows for rows, _ in picked], ignore_index=True)
    origin = {run: src for rows, src in picked for run in rows["run"]}
    cfg = _combined_config(read[0].config, chosen, table)
    curves = [_curve_source(c, src, table) for c, src in sorted(chosen.items())]
    _write_table(out, table, origin, chosen, cfg, {"sources": [str(s) for s in sources]}, curves)
    return curves


def _check_out(out: Path) -> None:
    if out.exists() and not (out / MARKER).is_file():
        raise InputError(
            f"--out {out}: exists and is not a combined table; give a new folder (an existing "
            "combined table is rebuilt)"
        )


def _write_table(
    out: Path,
    table: pd.DataFrame,
    origin: dict[str, Source],
    chosen: dict[tuple[int, float], Source],
    cfg: ManifoldSweepConfig,
    marker: dict[str, Any],
    curves: Sequence[CurveSource],
) -> None:
    """The table's folder, whole or not at all: each run's files from its `origin`, the ideal
    learner's caches from each curve's `chosen` source, sweep.json and the marker (built
    beside `out`, then renamed over it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for run in table["run"]:
            dest = tmp / "runs" / run
            dest.mkdir(parents=True)
            for name in RUN_FILES:
                shutil.copy2(origin[run].folder / "runs" / run / name, dest / name)
        atomic_write(tmp / "runs.csv", lambda p: table.to_csv(p, index=False))
        _copy_ideal(chosen, tmp, set(table["run"]))
        write_meta(tmp / "sweep.json", {
            "kind": KIND, "config": cfg.to_dict(), "provenance": provenance(),
        })  # fmt: skip
        atomic_write_json(tmp / MARKER, {**marker, "curves": [c.to_dict() for c in curves]})
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


#: What candidates of a selected table must share: the draws of each run (the training and
#: validation samples, `plan.run_rng` and `ManifoldSweepConfig.val_count`) and its test sample.
DRAW_FIELDS = ("problem_seed", "n_test", "val_fraction", "val_size")
#: The column a selected table chooses by, and the run kinds it chooses among.
SELECT_BY, SELECTED_TASKS = "val_mse", ("data", "wide")


def select_by_validation(sources: Sequence[str | Path], out: str | Path) -> list[CurveSource]:
    """Write into `out` the table of the validation-selected estimator: per data and wide run,
    the candidate sweep's run with the lowest validation MSE (module docstring). A curve is
    taken where at least two candidates hold it, on the runs all of those hold; runs.csv's
    CPU and wall time are the candidates' sums (the selected estimator trains them all), each
    result.json the chosen run's own. Returns each curve's candidates and choices."""
    out = Path(out)
    if len(sources) < 2:
        raise InputError("give at least two candidate sweep folders to select among")
    _check_out(out)
    read = [Source.read(Path(s)) for s in sources]
    first = read[0].config
    for src in read[1:]:
        for key in DRAW_FIELDS:
            if getattr(src.config, key) != getattr(first, key):
                raise InputError(
                    f"source {src.folder}: its {key} is {getattr(src.config, key)!r} where "
                    f"{read[0].folder}'s is {getattr(first, key)!r}; select among sweeps "
                    f"trained on the same draws (they must agree on {', '.join(DRAW_FIELDS)})"
                )
    curves = sorted({c for src in read for c in src.curves()})
    picked, chosen, rows_out, origin = [], {}, [], {}
    for d, b in curves:
        holders = [src for src in read if (d, b) in src.curves()]
        if len(holders) < 2:
            continue
        for src in holders[1:]:
            if src.config.problem(d, b) != holders[0].config.problem(d, b):
                raise InputError(
                    f"source {src.folder}: its (d={d}, β={b:g}) problem differs from "
                    f"{holders[0].folder}'s (the field cap, noise or manifold); select among "
                    "sweeps of the same problem and sizes"
                )
        tables = [_rows(src, d, b, SELECTED_TASKS).set_index("run") for src in holders]
        runs = sorted(set.intersection(*(set(t.index) for t in tables)))
        losses = pd.DataFrame({i: t.loc[runs, SELECT_BY] for i, t in enumerate(tables)})
        if losses.isna().to_numpy().any():
            raise InputError(
                f"(d={d}, β={b:g}): a candidate run has no {SELECT_BY}; give sweeps whose runs "
                "record it (any `scalelab manifold sweep` of the field does)"
            )
        best = losses.to_numpy().argmin(axis=1)  # ties: the first candidate
        spent = sum(t.loc[runs, ["cpu_time_s", "wall_time_s"]] for t in tables)
        for i, t in enumerate(tables):
            mine = [run for run, j in zip(runs, best, strict=True) if j == i]
            rows = t.loc[mine].copy()
            rows[["cpu_time_s", "wall_time_s"]] = spent.loc[mine]
            rows_out.append(rows.reset_index())
            origin |= {run: holders[i] for run in mine}
        chosen[(d, b)] = holders[0]
        counts = ", ".join(
            f"{src.folder.name}: {int((best == i).sum())}" for i, src in enumerate(holders)
        )
        picked.append(((d, b), holders, counts))
    if not rows_out:
        raise InputError(
            "no curve is held by two candidates; give sweeps of the same curves (one per estimator)"
        )
    table = pd.concat(rows_out, ignore_index=True).sort_values(["d", "beta", "seed", "n"])
    ids = [
        (src.table[(src.table["task"] == "id") & (src.table["d"] == d)], src)
        for d in sorted({d for d, _ in chosen})
        for src in [next(s for s in read if (s.table["d"] == d).any())]
    ]
    for rows, src in ids:
        origin |= {run: src for run in rows["run"]}
    table = pd.concat([table, *(rows for rows, _ in ids)], ignore_index=True)
    cfg = _combined_config(first, chosen, table)
    result = [
        _curve_source((d, b), holders[0], table).replace(
            source=" | ".join(str(s.folder) for s in holders),
            git_revision=" | ".join(str(s.provenance.get("git_revision")) for s in holders),
            chosen=counts,
        )
        for (d, b), holders, counts in picked
    ]
    marker = {"sources": [str(s) for s in sources], "select_by": SELECT_BY}
    _write_table(out, table, origin, chosen, cfg, marker, result)
    return result


def _copy_ideal(chosen: dict[tuple[int, float], Source], dest: Path, runs: set[str]) -> None:
    """The ideal learner's caches of each curve, from its source (computed on its field)."""
    per_run, expected = [], []
    for (d, b), src in sorted(chosen.items()):
        if (src.folder / RUNS_FILE).is_file():
            cached = pd.read_csv(src.folder / RUNS_FILE)
            names = set(_rows(src, d, b, ("data",))["run"]) & runs
            per_run.append(cached[cached["run"].isin(names)])
        if (src.folder / EXPECTED_FILE).is_file():
            cached = pd.read_csv(src.folder / EXPECTED_FILE)
            expected.append(cached[(cached["d"] == d) & (cached["beta"] == b)])
    for name, parts in ((RUNS_FILE, per_run), (EXPECTED_FILE, expected)):
        if parts:
            frame = pd.concat(parts, ignore_index=True)
            atomic_write(dest / name, lambda p, f=frame: f.to_csv(p, index=False))


def _curve_source(curve: tuple[int, float], src: Source, table: pd.DataFrame) -> CurveSource:
    d, b = curve
    rows = table[(table["task"] == "data") & (table["d"] == d) & (table["beta"] == b)]
    return CurveSource(
        d=d,
        beta=b,
        source=str(src.folder),
        runs=len(rows),
        seeds=int(rows["seed"].nunique()),
        n_min=int(rows["n"].min()),
        n_max=int(rows["n"].max()),
        field_cap=src.config.field_cap(d, b),
        git_revision=src.provenance.get("git_revision"),
    )


def read_sources(folder: str | Path) -> list[dict[str, Any]] | None:
    """A combined table's curve sources (None: the folder is an ordinary sweep)."""
    path = Path(folder) / MARKER
    if not path.is_file():
        return None
    try:
        return list(json.loads(path.read_text())["curves"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(
            f"{path} is damaged ({type(err).__name__}); rebuild the table with "
            "`scalelab manifold combine` and its sources"
        ) from None
