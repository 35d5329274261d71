"""CLI: `scalelab manifold sweep` (the known-dimension benchmark) and `scalelab manifold sample`
(points on a known-dimension manifold, with targets, for any other tool)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import typer

from scalelab.cli.common import (
    BACKEND,
    JSON,
    QUIET,
    RAY_ADDRESS,
    RUN_CPUS,
    RUN_GPUS,
    SEED,
    backend_from,
    configured,
    print_json,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.cli.options import From, derive
from scalelab.config import Config
from scalelab.errors import ConfigError, InputError
from scalelab.io import atomic_write, atomic_write_json, provenance
from scalelab.manifold.construction_config import ConstructConfig
from scalelab.manifold.levers import LeverConfig, run_levers
from scalelab.manifold.plan import MANIFOLD_PRESETS, ManifoldSweepConfig
from scalelab.manifold.problem import Problem, ProblemConfig

manifold_app = typer.Typer(
    help="Regression on manifolds of known intrinsic dimension (Theorem 1 checked directly).",
    no_args_is_help=True,
)


def _preset_help() -> str:
    """Each preset's grid, read from MANIFOLD_PRESETS (one definition)."""

    def csv(values: tuple) -> str:
        return ",".join(f"{v:g}" for v in values) or "none"

    grids = [
        f"{name}: dims {csv(c.dims)}, betas {csv(c.betas)}, n-values {csv(c.n_values)}, "
        f"seeds {csv(c.seeds)}, model-widths {csv(c.model_widths)}"
        for name, c in MANIFOLD_PRESETS.items()
    ]
    return (
        f"One of ({'; '.join(grids)}); default: quick. The options below replace the "
        "preset's values."
    )


class SweepOptions(From):
    """The sweep's options over a preset: a preset run on other --dims keeps its model,
    online and extra runs where their d is among them (`ManifoldSweepConfig.with_dims`);
    `--config` reads a config's keys or a sweep folder's sweep.json."""

    def build(self, values: dict[str, Any], base: Config) -> Config:
        if "dims" in values:
            dims = next(o for o in self.options if o.field == "dims").value(values.pop("dims"))
            base = configured(base.with_dims, {"dims": "--dims"}, dims=dims)
        return super().build(values, base)

    def read(self, base: Config, doc: dict[str, Any], path: Path) -> Config:
        inner = doc.get("config")
        return super().read(base, inner if isinstance(inner, dict) else doc, path)


SWEEP = SweepOptions(
    ManifoldSweepConfig,
    only=(
        "manifold", "dims", "betas", "n_values", "seeds", "noise_std", "attention",
        "model_widths", "model_dims", "online_dims", "online_widths", "online_steps",
        "ensemble",
    ),
    presets=MANIFOLD_PRESETS,
    preset_help=_preset_help(),
)  # fmt: skip


def sweep_command(
    out: Path = typer.Option(..., "--out", help="Sweep folder (created, or resumed)."),
    cfg: ManifoldSweepConfig = SWEEP,
    workers: int = typer.Option(1, help="Worker processes (each gets cores // workers)."),
    threads: int = threads_option(
        1, help="Torch threads with --workers 1 (small models gain nothing from more)."
    ),
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Run (or resume) a data- and model-scaling sweep; `scalelab report OUT` draws it."""
    set_threads(threads, workers=workers)
    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    from scalelab.manifold.sweep import run_manifold_sweep  # torch: once the options are sound

    table = run_manifold_sweep(cfg, out, workers=workers, backend=where, quiet=quiet)
    rows = table.to_dict("records")
    if json_out:
        print_json(rows)
        return
    cols = ("run", "d_hat", "test_mse", "bayes_ratio", "train_mse", "stop_reason", "wall_time_s")
    shown = [{c: r.get(c) for c in cols if c in r} for r in rows]
    print_table(f"manifold sweep: {out}", shown)


#: What a sample's JSON holds beside its problem's keys (`sample_command` writes them).
SAMPLE_KEYS = ("out", "n", "sample_seed", "holder_constant", "bound", "provenance")


class SampleOptions(From):
    """The problem's options; `--config` reads a problem's keys or a sample's JSON."""

    def read(self, base: Config, doc: dict[str, Any], path: Path) -> Config:
        return super().read(base, {k: v for k, v in doc.items() if k not in SAMPLE_KEYS}, path)


def sample_command(
    out: Path = typer.Option(..., "--out", help="Output .npz with x [n, D], f [n], y [n]."),
    cfg: ProblemConfig = SampleOptions(
        ProblemConfig, only=("manifold", "d", "D", "beta", "noise_std", "warp", "seed")
    ),
    n: int = typer.Option(4096, "--n", help="Number of points."),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Sample points (and target values) on a manifold of known dimension, e.g. to check
    `scalelab id OUT.npz --key x` recovers d."""
    if n < 1:
        raise ConfigError(f"--n {n}: use 1 or more points")
    if out.suffix != ".npz":
        raise InputError(f"--out {out}: the output is an .npz archive; name it *.npz")
    problem = Problem(cfg)
    s = problem.sample(n, np.random.default_rng(seed))

    def write(path: Path) -> None:
        with open(path, "wb") as f:
            np.savez(f, x=s.x, f=s.f, y=s.y)

    atomic_write(out, write)
    info = {
        "out": str(out),
        **cfg.to_dict(),
        "n": n,
        "sample_seed": seed,
        "holder_constant": problem.target.holder_constant,
        "bound": problem.target.bound,
    }
    atomic_write_json(out.with_suffix(".json"), {**info, "provenance": provenance()})
    if json_out:
        print_json(info)
    else:
        print_table("manifold sample", [{"quantity": k, "value": v} for k, v in info.items()])


def levers_command(
    out: Path = typer.Option(..., "--out", help="Folder of the cells (created, or resumed)."),
    cfg: LeverConfig = From(LeverConfig),
    threads: int = threads_option(1, help="Torch threads (small models gain nothing from more)."),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Split a theorem run's noise into data draw and init, per training lever, on the same
    seeds; with each lever's Bayes ratio (single model and ensemble of the inits)."""
    set_threads(threads, workers=1)
    rows = run_levers(cfg, out, quiet=quiet)
    shown = [
        {
            "lever": r.lever, "d": r.d, "n": r.n, "single/Bayes": r.single_ratio,
            "ensemble/Bayes": r.ensemble_ratio, "init sd": r.split.init_sd,
            "data sd": r.split.data_sd, "seed sd": r.split.seed_sd,
            "ensemble sd": r.ensemble_sd, "CPU s": r.cpu_s,
        }
        for r in rows
    ]  # fmt: skip
    if json_out:
        print_json([r.to_dict() for r in rows])
    else:
        print_table(f"manifold levers: {out}", shown)


def combine_command(
    sources: list[Path] = typer.Argument(
        ..., help="Theorem sweep folders; a curve comes from the last one that holds it."
    ),
    out: Path = typer.Option(..., "--out", help="Folder of the combined table (new, or rebuilt)."),
    json_out: bool = JSON,
) -> None:
    """Put each (d, β) curve's deciding sweep into one table, for one report and one verdict
    across curves (`scalelab report OUT`)."""
    from scalelab.manifold.combine import combine_sweeps

    curves = combine_sweeps(sources, out)
    if json_out:
        print_json([c.to_dict() for c in curves])
    else:
        print_table(f"manifold combine: {out}", [c.to_dict() for c in curves])


def select_command(
    sources: list[Path] = typer.Argument(
        ..., help="Theorem sweep folders of the same draws, one per estimator (e.g. preset)."
    ),
    out: Path = typer.Option(..., "--out", help="Folder of the selected table (new, or rebuilt)."),
    json_out: bool = JSON,
) -> None:
    """Per run, take the candidate whose model had the lowest validation MSE on the same
    sample: the validation-selected estimator's table, for `scalelab report OUT`."""
    from scalelab.manifold.combine import select_by_validation

    curves = select_by_validation(sources, out)
    if json_out:
        print_json([c.to_dict() for c in curves])
    else:
        print_table(f"manifold select: {out}", [c.to_dict() for c in curves])


def construct_command(
    cfg: ConstructConfig = From(ConstructConfig),
    trained: Path | None = typer.Option(
        Path("docs/benchmarks/manifold_theorem/runs.csv"),
        help="A theorem sweep's runs.csv: its online models go on the figure (skipped if absent).",
    ),
    out: Path = typer.Option(Path("manifold-construct"), help="Folder for the JSON and figure."),
    threads: int | None = threads_option(),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Build the paper's Lemma 1 transformer by hand, run it, and fit its error against
    its size beside 2β/d; writes construct.json, construct.md and construct.png."""
    set_threads(threads)
    from scalelab.manifold.construction_rate import run_construct  # torch: options are sound
    from scalelab.report.manifold_construction import rate_rows, write_figure, write_markdown

    result = run_construct(cfg, out, trained=trained, quiet=quiet)
    write_figure(result, out)
    write_markdown(result, out)
    if json_out:
        print_json(result.to_dict())
        return
    print_table(
        "constructed Lemma-1 transformer: squared L2 error vs parameters", rate_rows(result)
    )
    print(f"wrote construct.json, .md and .png in {out} ({result.seconds:.0f} s)")


def register(app: typer.Typer) -> None:
    """Add `scalelab manifold sweep|sample|levers|construct|combine|select`."""
    manifold_app.command("sweep")(derive(sweep_command))
    manifold_app.command("sample")(derive(sample_command))
    manifold_app.command("levers")(derive(levers_command))
    manifold_app.command("construct")(derive(construct_command))
    manifold_app.command("combine")(combine_command)
    manifold_app.command("select")(select_command)
    app.add_typer(manifold_app, name="manifold")
