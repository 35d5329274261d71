"""The known-dimension benchmark as a resumable sweep (kind "manifold").

The runs (`plan.specs_for`) are one folder each, all in one `runs.csv` (column `task`).
Error = the excess risk ‖T̂ − f‖²_L2(Q) on a large fresh test sample, against the noiseless
target, because Theorem 1's rate n^(-2β/(2β+d)) is for that, not for the noisy test loss; for
the capped field it includes the field's tail beyond the cap (`Problem.excess_offset`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scalelab import seeds
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.io import append_jsonl, atomic_write, provenance, to_json
from scalelab.manifold.batched import Member, fit_members, fit_members_schedule
from scalelab.manifold.config import RegressorConfig
from scalelab.manifold.field import TorusField
from scalelab.manifold.model import TransformerRegressor
from scalelab.manifold.plan import (
    KIND,
    MANIFOLD_PRESETS,
    ManifoldSweepConfig,
    config_from_json,
    plan_words,
    run_rng,
    specs_for,
)
from scalelab.manifold.problem import Problem, Sample
from scalelab.manifold.train import epoch_batches, fit_regressor, fit_schedule, mse, predict
from scalelab.runs.outdir import write_meta
from scalelab.runs.sweep import Backend, RunSpec, opened_sweep, run_sweep
from scalelab.scalars import Scalars

__all__ = ["KIND", "MANIFOLD_PRESETS", "ManifoldSweepConfig", "run_manifold_sweep", "specs_for"]
#: K values of the paper's MLE protocol reported beside K = 20 on the hidden states.
HIDDEN_K = (10, PAPER_K, 40)


def _config_from_params(params: dict[str, Any]) -> ManifoldSweepConfig:
    return config_from_json(params["sweep"])


def _test_sample(cfg: ManifoldSweepConfig, problem: Problem, run_dir: Path) -> Sample:
    """The fixed test sample of a (d, β) problem, computed once per sweep (evaluating the
    field costs more than a small run) and cached beside the runs."""
    d, beta = problem.cfg.d, problem.cfg.beta
    path = run_dir.parent.parent / "cache" / f"test_d{d}_b{beta:g}.npz"
    if path.exists():
        with np.load(path) as z:
            return Sample(x=z["x"], f=z["f"], y=z["y"])
    rng = np.random.default_rng([cfg.problem_seed, d, seeds.MANIFOLD_TEST])
    test = problem.sample(cfg.n_test, rng)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(p: Path) -> None:
        with open(p, "wb") as f:
            np.savez(f, x=test.x, f=test.f, y=test.y)

    atomic_write(path, write)
    return test


def _id_batch(cfg: ManifoldSweepConfig) -> int:
    """The paper's 4,096 points per batch, or all `id_points` as one batch where fewer (a smoke
    run's scale, recorded as `id_batch_size`)."""
    return min(PAPER_BATCH_SIZE, cfg.id_points)


def _hidden_id(model: TransformerRegressor, cfg: ManifoldSweepConfig, problem: Problem) -> dict:
    """The paper's protocol (MLE, batches of 4096) on the trained model's final-layer states
    of fresh manifold inputs, at K = 10, 20, 40 (20 is the paper's)."""
    from scalelab.intrinsic.protocol import estimate_in_batches, make_estimator

    d = problem.cfg.d
    x = problem.points(
        cfg.id_points, np.random.default_rng([cfg.problem_seed, d, seeds.MANIFOLD_ID])
    )
    h = model.hidden_states(torch.as_tensor(x, dtype=torch.float32)).numpy().astype(np.float64)
    out: dict[str, Any] = {}
    for k in HIDDEN_K:
        est = estimate_in_batches(h, make_estimator("mle", k=k), batch_size=_id_batch(cfg))
        out[f"hidden_d_hat_k{k}"] = est.dimension
        if k == PAPER_K:
            out["hidden_d_hat"] = est.dimension
            out["hidden_d_hat_se"] = est.dimension_se if np.isfinite(est.dimension_se) else None
    return out


def _model(reg_cfg: RegressorConfig, seed: int) -> TransformerRegressor:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TransformerRegressor(reg_cfg)


def member_seed(seed: int, member: int) -> int:
    """Init and batch-order seed of an ensemble's member: member 0 is the run's own seed (so
    it is the single model of an ensemble-1 run); the others are apart from every run seed."""
    return seed if member == 0 else seeds.MANIFOLD_MEMBER * 1_000_003 + 1000 * seed + member


def _fit_ensemble(
    cfg: ManifoldSweepConfig,
    reg_cfg: RegressorConfig,
    train: Sample,
    val: Sample,
    n: int,
    seed: int,
    scalars: Scalars,
) -> tuple[list[TransformerRegressor], dict[str, Any]]:
    """`cfg.ensemble` inits on one sample, trained together (`manifold.batched`)."""
    size = cfg.ensemble
    models = [_model(reg_cfg, member_seed(seed, e)) for e in range(size)]
    gens = [torch.Generator().manual_seed(member_seed(seed, e)) for e in range(size)]
    members = [Member(train.x, train.y, val.x, val.y)] * size

    def log(step: int, vals: list[float]) -> None:
        scalars.log(step, {f"loss/val_mse_member{e}": v for e, v in enumerate(vals)})

    if cfg.schedule == "fixed":
        runs = fit_members_schedule(models, members, cfg.schedule_for(n), gens, log=log)
    else:
        runs = fit_members(models, members, cfg.fit(), gens, log=log)
    reasons = {r["stop_reason"] for r in runs}
    summary = {
        "steps": max(r["steps"] for r in runs),
        "best_step": max(r["best_step"] for r in runs),
        "stop_reason": reasons.pop() if len(reasons) == 1 else "+".join(sorted(reasons)),
        "train_time_s": sum(r["train_time_s"] for r in runs),
        "member_steps": [r["steps"] for r in runs],
        "member_best_steps": [r["best_step"] for r in runs],
        "member_stop_reasons": [r["stop_reason"] for r in runs],
    }
    return models, summary


def _ensemble_mse(models: list[TransformerRegressor], x: np.ndarray, y: np.ndarray) -> float:
    xt = torch.as_tensor(x, dtype=torch.float32)
    mean = torch.stack([predict(m, xt) for m in models]).mean(0)
    return float(torch.mean((mean - torch.as_tensor(y).float()) ** 2))


def _scores(
    models: list[TransformerRegressor], problem: Problem, test: Sample, n: int | None, members: bool
) -> dict[str, Any]:
    """A trained run's errors on the test sample: the excess risk (with the field's tail),
    its capped part, the noisy test loss; on the field, its ratio to the ideal learner's risk
    at n; for an ensemble, each member's."""
    capped = _ensemble_mse(models, test.x, test.f)
    out = {
        "test_mse": capped + problem.excess_offset,
        "test_mse_capped": capped,
        "tail_variance": problem.excess_offset,
        "test_mse_noisy": _ensemble_mse(models, test.x, test.y),
        "null_mse": float(np.var(test.f)),
        "noise_var": problem.label_noise_std**2,
    }
    if isinstance(problem.target, TorusField) and n is not None:
        bayes = float(problem.target.bayes_risk(n, problem.label_noise_std))
        out["bayes_risk"] = bayes
        out["bayes_ratio"] = capped / bayes
    if members:
        member = [_ensemble_mse([m], test.x, test.f) for m in models]
        out |= {f"member{e}_mse_capped": v for e, v in enumerate(member)}
        out["ensemble"] = len(models)
        out["single_mse_capped"] = member[0]
        out["init_sd_log"] = float(np.std(np.log(member), ddof=1))
    return out


def _train_run(cfg: ManifoldSweepConfig, params: dict[str, Any], run_dir: Path) -> dict:
    d, beta, n, seed, task = (
        params["d"],
        params["beta"],
        params["n"],
        params["seed"],
        params["task"],
    )
    problem = Problem(cfg.problem(d, beta))
    rng = run_rng(cfg, d, beta, n, seed)
    online = task in ("online", "online_long")
    test = _test_sample(cfg, problem, run_dir)
    grown = task == "data" and cfg.width_rule  # the width rule: the run's own width
    width = (
        params["n_embd"] if task in ("model", "wide", "online", "online_long") or grown else None
    )
    reg_cfg = cfg.regressor(width)
    n_val = cfg.val_count(n or cfg.val_size or 512)
    ensemble = cfg.ensemble > 1 and task in ("data", "wide")
    model = _model(reg_cfg, seed)
    models = [model]
    gen = torch.Generator().manual_seed(seed)
    with Scalars(run_dir) as scalars:
        if online:  # a fresh noise-free sample every step: the infinite-data limit
            val = problem.sample(n_val, rng, noise=False)

            def fresh(_step: int) -> tuple[torch.Tensor, torch.Tensor]:
                s = problem.sample(cfg.batch_size, rng, noise=False)
                return torch.as_tensor(s.x, dtype=torch.float32), torch.as_tensor(s.f).float()

            summary = fit_schedule(
                model,
                fresh,
                val.x,
                val.y,
                cfg.schedule_for(
                    None, width, cfg.online_long_factor if task == "online_long" else 1
                ),
                log=scalars.log,
            )
            summary["train_mse"] = None
        else:
            train = problem.sample(n, rng)
            val = problem.sample(n_val, rng)
            if ensemble:
                models, summary = _fit_ensemble(cfg, reg_cfg, train, val, n, seed, scalars)
                summary["train_mse"] = _ensemble_mse(models, train.x, train.y)
                summary["val_mse"] = _ensemble_mse(models, val.x, val.y)
            elif cfg.schedule == "fixed":
                batches = epoch_batches(train.x, train.y, cfg.batch_size, gen)
                summary = fit_schedule(
                    model, batches, val.x, val.y, cfg.schedule_for(n), log=scalars.log
                )
                xt = torch.as_tensor(train.x, dtype=torch.float32)
                summary["train_mse"] = mse(model, xt, torch.as_tensor(train.y).float())
            else:
                summary = fit_regressor(
                    model, train.x, train.y, val.x, val.y, cfg.fit(), generator=gen,
                    log=scalars.log,
                )  # fmt: skip
    from safetensors.torch import save_file

    weights = {
        (f"member{e}.{k}" if ensemble else k): v
        for e, m in enumerate(models)
        for k, v in m.state_dict().items()
    }
    save_file(weights, str(run_dir / "model.safetensors"))
    out = {
        **_scores(models, problem, test, n, ensemble),
        "params": models[0].num_params(),
        "n_embd": reg_cfg.n_embd,
        "n_val": n_val,
        "n_test": cfg.n_test,
        **summary,
    }
    if cfg.hidden_id and task == "data" and n in (min(cfg.n_values), max(cfg.n_values)):
        out |= _hidden_id(models[0], cfg, problem)
    return out


def _id_run(cfg: ManifoldSweepConfig, params: dict[str, Any]) -> dict:
    from scalelab.intrinsic.protocol import estimate_in_batches, make_estimator

    problem = Problem(cfg.problem(params["d"], params["beta"]))
    x = problem.points(
        cfg.id_points, np.random.default_rng([cfg.problem_seed, params["d"], seeds.MANIFOLD_ID])
    )
    est = estimate_in_batches(x, make_estimator(cfg.id_estimator), batch_size=_id_batch(cfg))
    other_k = {}
    if cfg.hidden_id:  # the same K range as on the hidden states, for a like-for-like gap
        for k in HIDDEN_K:
            e = estimate_in_batches(x, make_estimator("mle", k=k), batch_size=_id_batch(cfg))
            other_k[f"d_hat_k{k}"] = e.dimension
    return {
        **other_k,
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
    write_meta(run_dir / "config.json", {**params, "provenance": provenance()})
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
        if not quiet:  # once the folder is sound, so bad input stays one line
            print(f"manifold sweep {sweep_dir}: {plan_words(cfg)}", file=sys.stderr)
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
