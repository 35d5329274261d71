"""The known-dimension benchmark as a resumable sweep (kind "manifold").

Three kinds of run, one folder each, all in one `runs.csv` (column `task`):
- `data`: for every (d, β, seed, n) train the regressor on n noisy samples and measure the
  excess risk ‖T̂ − f‖²_L2(Q) on a large fresh test sample (against the noiseless target,
  because Theorem 1's rate n^(-2β/(2β+d)) is for that, not for the noisy test loss);
- `model`: at the largest n, the same for a range of model widths (model scaling);
- `id`: the intrinsic-dimension engine on the sampled inputs (closing the loop d -> α).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scalelab import seeds
from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.intrinsic import PAPER_BATCH_SIZE
from scalelab.io import append_jsonl, atomic_write_json, provenance, to_json
from scalelab.manifold.geometry import MANIFOLDS, make_manifold
from scalelab.manifold.model import RegressorConfig, TransformerRegressor
from scalelab.manifold.problem import Problem, ProblemConfig
from scalelab.manifold.train import FitConfig, fit_regressor, mse
from scalelab.runs.sweep import Backend, RunSpec, opened_sweep, run_sweep
from scalelab.scalars import Scalars

KIND = "manifold"


@dataclass(frozen=True)
class ManifoldSweepConfig(Config):
    """Everything that defines a manifold sweep (saved in sweep.json; resuming checks it)."""

    manifold: str = "sphere"
    dims: tuple[int, ...] = (2, 4)
    betas: tuple[float, ...] = (1.0,)
    n_values: tuple[int, ...] = (100, 250, 630, 1600, 4000, 10000)
    seeds: tuple[int, ...] = (0, 1)
    D: int = 32
    noise_std: float = 0.5
    warp: float = 0.0
    problem_seed: int = 0
    n_test: int = 8192
    val_fraction: float = 0.25
    # regressor (model-scaling runs vary d_embd, with ffn_width = 2 d_embd)
    n_blocks: int = 2
    n_heads: int = 4
    d_embd: int = 32
    ffn_width: int = 64
    ffn_depth: int = 2
    attention: str = "relu"
    model_dims: tuple[int, ...] = ()
    model_widths: tuple[int, ...] = ()
    # optimiser
    lr: float = 2e-3
    batch_size: int = 128
    max_steps: int = 20000
    patience: int = 12
    # intrinsic dimension of the inputs
    id_points: int = 8192
    id_estimator: str = "mle"

    def validate(self) -> None:
        if self.manifold not in MANIFOLDS:
            raise ConfigError(
                f"unknown manifold {self.manifold!r}; choose one of {sorted(MANIFOLDS)}"
            )
        for name in ("dims", "betas", "n_values", "seeds"):
            if not getattr(self, name):
                raise ConfigError(f"{name} must not be empty")
        if min(self.n_values) < 8:
            raise ConfigError("every n must be >= 8 (training needs a few points)")
        if not 0 < self.val_fraction <= 1:
            raise ConfigError(f"val_fraction must be in (0, 1], got {self.val_fraction}")
        if set(self.model_dims) - set(self.dims):
            raise ConfigError("model_dims must be a subset of dims")
        if bool(self.model_dims) != bool(self.model_widths):
            raise ConfigError("give both model_dims and model_widths, or neither")
        for d in self.dims:
            make_manifold(self.manifold, d)  # e.g. the Swiss roll needs d >= 2
            for beta in self.betas:
                self.problem(d, beta)  # validates d, beta, noise
        for width in (None, *self.model_widths):
            self.regressor(width)  # e.g. widths divisible by n_heads
        self.fit()

    def problem(self, d: int, beta: float) -> ProblemConfig:
        return ProblemConfig(
            manifold=self.manifold,
            d=d,
            D=self.D,
            beta=beta,
            noise_std=self.noise_std,
            warp=self.warp,
            seed=self.problem_seed,
        )

    def regressor(self, width: int | None = None) -> RegressorConfig:
        return RegressorConfig(
            D=self.D,
            n_blocks=self.n_blocks,
            n_heads=self.n_heads,
            d_embd=width or self.d_embd,
            ffn_width=2 * width if width else self.ffn_width,
            ffn_depth=self.ffn_depth,
            attention=self.attention,
        )

    def fit(self) -> FitConfig:
        return FitConfig(
            lr=self.lr,
            batch_size=self.batch_size,
            max_steps=self.max_steps,
            patience=self.patience,
        )


PRESETS: dict[str, ManifoldSweepConfig] = {
    "smoke": ManifoldSweepConfig(
        dims=(2,), n_values=(64, 256), seeds=(0,), n_test=1024, d_embd=16, ffn_width=32,
        max_steps=300, id_points=1024,
    ),
    "quick": ManifoldSweepConfig(dims=(2, 4)),
    "full": ManifoldSweepConfig(
        dims=(2, 4, 6, 8), betas=(1.0, 0.5), seeds=(0, 1, 2),
        model_dims=(2,), model_widths=(8, 16, 32, 64),
    ),
}  # fmt: skip


def specs_for(cfg: ManifoldSweepConfig) -> list[RunSpec]:
    """All runs of a sweep, cheapest first within each group, so partial sweeps are useful."""
    base = {"manifold": cfg.manifold, "D": cfg.D, "noise_std": cfg.noise_std}
    specs = [
        RunSpec(f"id_d{d}", {"task": "id", **base, "d": d, "beta": cfg.betas[0], "seed": 0})
        for d in cfg.dims
    ]
    for n in sorted(cfg.n_values):
        for d in cfg.dims:
            for beta in cfg.betas:
                for seed in cfg.seeds:
                    params = {"task": "data", **base, "d": d, "beta": beta, "n": n, "seed": seed}
                    name = f"data_d{d}_b{beta:g}_n{n}_s{seed}"
                    specs.append(RunSpec(name, {**params, "d_embd": cfg.d_embd}))
    n_big = max(cfg.n_values)
    for width in sorted(cfg.model_widths):
        for d in cfg.model_dims:
            for seed in cfg.seeds:
                params = {"task": "model", **base, "d": d, "beta": cfg.betas[0], "n": n_big}
                name = f"model_d{d}_w{width}_s{seed}"
                specs.append(RunSpec(name, {**params, "seed": seed, "d_embd": width}))
    return specs


def _config_from_params(params: dict[str, Any]) -> ManifoldSweepConfig:
    return ManifoldSweepConfig.from_dict(
        {k: tuple(v) if isinstance(v, list) else v for k, v in params["sweep"].items()}
    )


def _train_run(cfg: ManifoldSweepConfig, params: dict[str, Any], run_dir: Path) -> dict:
    d, beta, n, seed = params["d"], params["beta"], params["n"], params["seed"]
    problem = Problem(cfg.problem(d, beta))
    rng = np.random.default_rng([cfg.problem_seed, seed, n, d, int(beta * 1000)])
    train = problem.sample(n, rng)
    val = problem.sample(max(32, round(cfg.val_fraction * n)), rng)
    test = problem.sample(
        cfg.n_test, np.random.default_rng([cfg.problem_seed, d, seeds.MANIFOLD_TEST])
    )
    width = params["d_embd"] if params["task"] == "model" else None
    reg_cfg = cfg.regressor(width)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TransformerRegressor(reg_cfg)
    gen = torch.Generator().manual_seed(seed)
    with Scalars(run_dir) as scalars:
        summary = fit_regressor(
            model, train.x, train.y, val.x, val.y, cfg.fit(), generator=gen, log=scalars.log
        )
    xt = torch.as_tensor(test.x, dtype=torch.float32)
    from safetensors.torch import save_file

    save_file(model.state_dict(), str(run_dir / "model.safetensors"))
    return {
        "test_mse": mse(model, xt, torch.as_tensor(test.f).float()),
        "test_mse_noisy": mse(model, xt, torch.as_tensor(test.y).float()),
        "null_mse": float(np.var(test.f)),
        "noise_var": cfg.noise_std**2,
        "params": model.num_params(),
        "d_embd": reg_cfg.d_embd,
        "n_val": len(val.y),
        "n_test": cfg.n_test,
        **summary,
    }


def _id_run(cfg: ManifoldSweepConfig, params: dict[str, Any]) -> dict:
    from scalelab.intrinsic.protocol import estimate_in_batches, make_estimator

    problem = Problem(cfg.problem(params["d"], params["beta"]))
    x = problem.points(
        cfg.id_points, np.random.default_rng([cfg.problem_seed, params["d"], seeds.MANIFOLD_ID])
    )
    est = estimate_in_batches(
        x, make_estimator(cfg.id_estimator), batch_size=PAPER_BATCH_SIZE, seed=0
    )
    return {
        "d_hat": est.dimension,
        "d_hat_se": est.dimension_se if np.isfinite(est.dimension_se) else None,
        "id_estimator": est.estimator,
        "id_k": est.k,
        "id_points": est.n_points,
        "id_batch_size": est.batch_size,
    }


def run_worker(params: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """One run (module level, so spawned worker processes can import it)."""
    cfg = _config_from_params(params)
    params = {k: v for k, v in params.items() if k != "sweep"}
    atomic_write_json(run_dir / "config.json", {**params, "provenance": provenance()})
    wall, cpu = time.perf_counter(), time.process_time()
    out = _id_run(cfg, params) if params["task"] == "id" else _train_run(cfg, params, run_dir)
    return {
        **params,
        **out,
        "wall_time_s": time.perf_counter() - wall,
        "cpu_time_s": time.process_time() - cpu,
    }


def run_manifold_sweep(
    cfg: ManifoldSweepConfig,
    out_dir: str | Path,
    *,
    workers: int = 1,
    backend: Backend | None = None,
    quiet: bool = False,
) -> Any:
    """Run (or resume) the sweep into `out_dir`; returns the runs table (pandas). The folder
    is locked until return."""
    cfg_json = json.loads(to_json(cfg.to_dict()))
    specs = [
        RunSpec(s.name, {**s.params, "sweep": cfg_json}) for s in specs_for(cfg)
    ]  # the full config travels with each run so a spawned worker needs nothing else
    t0 = time.perf_counter()
    with opened_sweep(out_dir, KIND, cfg_json) as sweep_dir:
        table = run_sweep(
            sweep_dir,
            specs,
            run_worker,
            workers=workers,
            backend=backend,
            quiet=quiet,
            description="manifold",
        )
        append_jsonl(
            sweep_dir / "invocations.jsonl",
            {
                "wall_time_s": time.perf_counter() - t0,
                "workers": workers,
                "backend": (backend or Backend()).kind,
                "runs": len(table),
            },
        )
    return table
