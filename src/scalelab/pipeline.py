"""The whole data-scaling experiment of the seed paper in one resumable call (`scalelab demo`).

synthetic check (MLE on a manifold of known d) → prepare the corpus → data sweep (nested
prefixes), whose largest run is the reference model → estimate d with the reference model on
the test split → predict alpha_D = 2/(2+d) → fit the observed exponent → report.

The reference model is the sweep's largest run (the model trained on all the data, as in the
paper), so it is trained once, in parallel with the other runs: on a 2-core CPU two
one-thread workers are much faster than one two-thread run, above all on a loaded machine
(docs/background.md: two threads can fall 5-10x there). The prediction does not depend on the
sweep; it is only computed after it. Every stage leaves a finished artefact that a re-run finds
and skips: the token store, the run folders' result.json, estimate.json, fits.json, the
report. `pipeline.json` holds the config; a re-run with other options is refused.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scalelab import outdir
from scalelab.config import Config
from scalelab.errors import ConfigError, InputError
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.io import atomic_write_json, provenance, read_json
from scalelab.runner import Backend, open_sweep
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps.lm import Schedule, run_specs
from scalelab.sweeps.model import parse_model

CONFIG = "pipeline.json"
SUMMARY = "demo.json"


@dataclasses.dataclass(frozen=True)
class PipelineConfig(Config):
    """Sizes chosen so the default runs in ≤ 15 minutes on a quiet 2-core CPU (see
    docs/benchmarks/scaling.md) and still spans two decades of training data."""

    corpus: str = "shakespeare"
    vocab_size: int = 2048
    preset: str = "tiny"
    model: str | None = None  # a shape LAYERSxWIDTH[xHEADS] instead of the preset's
    context_len: int = 128
    batch_size: int = 16
    lr: float = 2e-3
    min_tokens: int = 5_000
    max_tokens: int = 500_000
    points: int = 7
    eval_interval: int = 25
    eval_batches: int = 8
    schedule: dict[str, Any] = dataclasses.field(
        default_factory=lambda: Schedule(max_epochs=20.0, min_steps=150, step_cap=2000).to_dict()
    )
    id_per_doc: int = 32
    id_max_documents: int | None = None
    id_k: int = PAPER_K
    id_batch_size: int = PAPER_BATCH_SIZE
    n_boot: int = 1000
    seed: int = 0

    def validate(self) -> None:
        Schedule.from_dict(self.schedule)
        if not 0 < self.min_tokens < self.max_tokens:
            raise ConfigError(
                f"need 0 < min_tokens < max_tokens, got {self.min_tokens}, {self.max_tokens}"
            )
        if self.points < 3:
            raise ConfigError(f"points must be >= 3 to fit an exponent, got {self.points}")


class _Clock:
    """Wall and CPU seconds per stage (CPU: this process and its finished workers)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.t_start, self.cpu_start = time.perf_counter(), _cpu_s()
        self._t, self._cpu = self.t_start, self.cpu_start

    def stage(self, name: str) -> None:
        """Close the stage that began at the previous call (or at construction)."""
        now_t, now_cpu = time.perf_counter(), _cpu_s()
        self.wall[name] = round(now_t - self._t, 2)
        self.cpu[name] = round(now_cpu - self._cpu, 2)
        self._t, self._cpu = now_t, now_cpu

    def totals(self) -> dict[str, Any]:
        return {
            "stage_wall_s": self.wall,
            "stage_cpu_s": self.cpu,
            "wall_s": round(time.perf_counter() - self.t_start, 2),
            "cpu_s": round(_cpu_s() - self.cpu_start, 2),
        }


def run_pipeline(
    out: str | Path,
    cfg: PipelineConfig,
    *,
    workers: int = 2,
    backend: Backend | None = None,
    quiet: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or resume) every stage under `out`; return the summary written to demo.json."""
    from scalelab.report.build import build_report

    out = Path(out)
    check_corpus(cfg.corpus)
    _check_config(out, cfg)
    syn = synthetic_check(out, cfg.seed)
    say(
        f"[0/5] synthetic check: MLE on {syn['manifold']} ({syn['n']} points) "
        f"d = {syn['dimension']:.2f} (true {syn['true_dimension']})"
    )
    clock = _Clock()
    data_dir = _prepare_stage(out, cfg, quiet, say)
    clock.stage("prepare")
    sweep_dir, table, ref_dir = _sweep_stage(out, data_dir, cfg, workers, backend, quiet, say)
    clock.stage("sweep")
    est = _estimate_stage(ref_dir, sweep_dir, cfg, quiet, say)
    clock.stage("estimate")
    say("[4/5] fit test loss vs training tokens")
    fits = fit_sweep(table, est, cfg.n_boot, cfg.seed)
    atomic_write_json(sweep_dir / "fits.json", fits)
    clock.stage("fit")
    say("[5/5] report")
    html, md = build_report(sweep_dir, out / "report")
    clock.stage("report")
    runs = ["run", "train_tokens", "steps", "stop_reason", "best_val_loss_nats"]
    summary = {
        "report_html": str(html),
        "report_md": str(md),
        "sweep_dir": str(sweep_dir),
        "dimension": est["dimension"],
        "dimension_se": est["dimension_se"],
        "fits": fits,
        "runs": table[[*runs, "test_loss_nats"]].to_dict("records"),
        **clock.totals(),
        "config": cfg.to_dict(),
        "synthetic": syn,
        "provenance": provenance(),
    }
    # Timings of earlier invocations are kept: a resumed run's own are small.
    earlier = read_json(out / SUMMARY).get("invocations", []) if (out / SUMMARY).exists() else []
    this = {k: summary[k] for k in ("stage_wall_s", "stage_cpu_s", "wall_s", "cpu_s")}
    summary["invocations"] = [*earlier, {**this, "time_utc": summary["provenance"]["time_utc"]}]
    atomic_write_json(out / SUMMARY, summary)
    return summary


def _prepare_stage(out: Path, cfg: PipelineConfig, quiet: bool, say: Callable) -> Path:
    """Stage 1: the token store (skipped when it exists)."""
    from scalelab.text.corpora import load_corpus
    from scalelab.text.store import prepare_corpus

    say(f"[1/5] prepare corpus {cfg.corpus!r} (BPE {cfg.vocab_size}) → {out / 'data'}")
    data_dir = out / "data"
    if not (data_dir / "meta.json").exists():
        prepare_corpus(
            load_corpus(cfg.corpus), data_dir, vocab_size=cfg.vocab_size, seed=0, quiet=quiet
        )
    return data_dir


def _sweep_stage(
    out: Path,
    data_dir: Path,
    cfg: PipelineConfig,
    workers: int,
    backend: Backend | None,
    quiet: bool,
    say: Callable,
) -> tuple[Path, Any, Path]:
    """Stage 2: the data sweep; its largest run is the reference model. Returns the sweep
    folder, its table and the reference run's folder."""
    from scalelab.lm.config import configs_for_preset

    model_cfg, train_cfg = configs_for_preset(
        cfg.preset,
        data_dir,
        block_size=cfg.context_len,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        seed=cfg.seed,
        eval_interval=cfg.eval_interval,
        eval_batches=cfg.eval_batches,
    )
    if cfg.model is not None:
        model_cfg = parse_model(cfg.model, model_cfg)[1]
    grid = data_sweep.geometric_grid(cfg.min_tokens, cfg.max_tokens, cfg.points)
    schedule = Schedule.from_dict(cfg.schedule)
    sweep_cfg = data_sweep.make_config(data_dir, model_cfg, train_cfg, schedule, grid)
    sweep_dir = open_sweep(out / "sweep", data_sweep.KIND, sweep_cfg.to_dict())
    specs = data_sweep.specs(sweep_cfg)
    say(
        f"[2/5] data sweep: {model_cfg.n_layer} layers × {model_cfg.n_embd}, ctx "
        f"{model_cfg.block_size}, on {len(specs)} nested training sets of {grid[0]:,} … "
        f"{grid[-1]:,} tokens ({workers} worker(s), longest first); the largest run is the "
        f"reference model → {sweep_dir}"
    )
    table = run_specs(sweep_dir, specs, workers=workers, backend=backend, only=None, quiet=quiet)
    for row in table.itertuples():
        say(
            f"      {row.train_tokens:>10,} tokens: test loss {row.test_loss_nats:.4f} "
            f"({row.stop_reason}, {row.steps} steps)"
        )
    return sweep_dir, table, sweep_dir / "runs" / specs[-1].name


def _estimate_stage(
    ref_dir: Path, sweep_dir: Path, cfg: PipelineConfig, quiet: bool, say: Callable
) -> dict[str, Any]:
    """Stage 3: d of the reference model on the test split, and the predicted exponents."""
    from scalelab.probe.config import EstimateConfig
    from scalelab.probe.estimate import estimate

    say("[3/5] intrinsic dimension of the reference model (final layer, test split, MLE K=20)")
    est_cfg = EstimateConfig(
        per_doc=cfg.id_per_doc,
        max_documents=cfg.id_max_documents,
        k=cfg.id_k,
        batch_size=cfg.id_batch_size,
        seed=cfg.seed,
    )
    est = estimate(ref_dir, None, est_cfg, sweep_dir, device="cpu", quiet=quiet)
    se = est["dimension_se"]
    say(
        f"      d = {est['dimension']:.3f}" + (f" ± {se:.3f}" if se is not None else "")
        + f" → predicted alpha_D = 2/(2+d) = {est['alpha_D']:.4f}, alpha_N = 2/d = "
        f"{est['alpha_N']:.4f}"
    )  # fmt: skip
    return est


def synthetic_check(out: Path, seed: int) -> dict[str, Any]:
    """Stage 0: MLE (K = 20) on 4096 points of a curved 8-sphere in R^768 should read close
    to 8 before any compute is spent on the corpus (cached in OUT/synthetic.json)."""
    path = out / "synthetic.json"
    if path.exists():
        return read_json(path)
    from scalelab.intrinsic.mle import MLE
    from scalelab.intrinsic.synthetic import curved_manifold

    points = curved_manifold(PAPER_BATCH_SIZE, 8, 768, seed=seed)
    row = {"manifold": "curved S^8 in R^768", "n": PAPER_BATCH_SIZE, "true_dimension": 8}
    row["dimension"] = float(MLE(k=PAPER_K).fit(points).dimension_)
    atomic_write_json(path, row)
    return row


def check_corpus(name: str) -> None:
    """Refuse an unknown or uninstalled corpus before anything is written."""
    from scalelab.text.corpora import list_corpora

    builtins = {row["name"]: row for row in list_corpora()}
    if name in builtins:
        if not builtins[name]["available"]:
            raise InputError(f"corpus {name!r}: {builtins[name]['source']}")
    elif not Path(name).exists():
        raise InputError(
            f"corpus {name!r} is neither a built-in ({', '.join(builtins)}) nor an existing "
            "path; pick one of those or give a text file/folder"
        )


def _cpu_s() -> float:
    """CPU seconds of this process and of its reaped child processes (sweep workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _check_config(out: Path, cfg: PipelineConfig) -> None:
    outdir.claim(out, CONFIG, cfg.to_dict())


def fit_sweep(table: Any, est: dict[str, Any], n_boot: int, seed: int) -> dict[str, Any]:
    """Observed alpha_D by both fit forms next to the prediction, and the differences."""
    from scalelab.laws.fit import fit_power_law

    x = table["train_tokens"].to_numpy(np.float64)
    y = table["test_loss_nats"].to_numpy(np.float64)
    out: dict[str, Any] = {
        "predicted_alpha_D": est["alpha_D"],
        "predicted_alpha_D_ci95": est.get("alpha_D_ci95"),
        "stop_reasons": dict(zip(table["run"], table["stop_reason"], strict=True)),
    }
    for form in ("power", "power+E"):
        if form == "power+E" and len(x) < 4:  # three parameters: needs a fourth point
            out[form] = None
            continue
        fit = fit_power_law(x, y, form=form, n_boot=n_boot, seed=seed)
        out[form] = {
            **fit.to_dict(),
            "difference_observed_minus_predicted": fit.exponent - est["alpha_D"],
        }
    return out
