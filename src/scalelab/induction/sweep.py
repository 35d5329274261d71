"""Resumable sweeps over n, alphabet size, layers, heads, width and precision (kind
"induction"), on `scalelab.runs.sweep`: one run folder per configuration.

A run is either a trained model (`model: "trained"`) or the hand-set two-layer
construction (`model: "construction"`, no training). Each row holds the accuracy metrics at
full precision and, for every p in `eval_bits`, the same metrics with the model rounded to
p bits (columns `acc_hard_p8`, …). `train_bits` is a grid dimension: None trains in float32,
an integer p trains with straight-through rounding to p bits. With p the training precision
(24 bits, the float32 significand, when None), `hmp` = h·d_head·p, `message_bits` is the
protocol's message for a one-layer model of this shape (`protocol.message_bits`, the count
the separation figure uses) and `errors_forced_from` the n from which that message is
shorter than the k bits INDEX needs: the report's marker.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scalelab.errors import ConfigError
from scalelab.induction.config import InductionConfig, InductionSweepConfig, InductionTrainConfig
from scalelab.induction.construction import two_layer_construction
from scalelab.induction.precision import Precision
from scalelab.induction.protocol import errors_forced_from, message_bits
from scalelab.induction.train import evaluate, train_induction
from scalelab.io import atomic_write_json, provenance
from scalelab.runs.sweep import Backend, RunSpec, opened_sweep, run_sweep

KIND = "induction"
FLOAT32_BITS = 24


def _tag(bits: int | None) -> str:
    return "full" if bits is None else f"p{bits}"


def build_specs(cfg: InductionSweepConfig) -> list[RunSpec]:
    """Trained runs over the full grid, then one construction run per (S, n, bits)."""
    common = {
        "precision_mode": cfg.precision_mode,
        "batch_size": cfg.batch_size,
        "hard_fraction": cfg.hard_fraction,
        "eval_samples": cfg.eval_samples,
        "lr": cfg.lr,
        "target_acc": cfg.target_acc,
        "eval_bits": list(cfg.eval_bits),
        "mlp": cfg.mlp,
    }
    specs = []
    grid = itertools.product(
        cfg.alphabet_sizes, cfg.ns, cfg.layers, cfg.heads, cfg.widths, cfg.train_bits, cfg.seeds
    )
    for s, n, layers, h, m, bits, seed in grid:
        steps = cfg.max_steps_one_layer if layers == 1 and cfg.max_steps_one_layer else None
        specs.append(
            RunSpec(
                f"S{s}_n{n}_L{layers}_h{h}_m{m}_{_tag(bits)}_s{seed}",
                {
                    "model": "trained",
                    "alphabet_size": s,
                    "n": n,
                    "n_layer": layers,
                    "n_head": h,
                    "n_embd": m,
                    "train_bits": bits,
                    "seed": seed,
                    "max_steps": steps or cfg.max_steps,
                    **common,
                },
            )
        )
    if cfg.construction:
        for s, n in itertools.product(cfg.alphabet_sizes, cfg.ns):
            specs.append(
                RunSpec(
                    f"S{s}_n{n}_construction",
                    {"model": "construction", "alphabet_size": s, "n": n, **common},
                )
            )
    return specs


def run_configs(params: dict[str, Any]) -> tuple[InductionConfig, InductionTrainConfig]:
    """The model and training configs of one trained run (validated on construction)."""
    mcfg = InductionConfig(
        alphabet_size=params["alphabet_size"],
        max_len=params["n"],
        n_layer=params["n_layer"],
        n_head=params["n_head"],
        n_embd=params["n_embd"],
        mlp=params.get("mlp", False),
    )
    tcfg = InductionTrainConfig(
        n=params["n"],
        seed=params["seed"],
        max_steps=params["max_steps"],
        batch_size=params["batch_size"],
        lr=params["lr"],
        hard_fraction=params["hard_fraction"],
        eval_samples=params["eval_samples"],
        target_acc=params["target_acc"],
        train_bits=params.get("train_bits"),
        precision_mode=params["precision_mode"],
    )
    return mcfg, tcfg


def run_one(params: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """Sweep worker: train (or build) one model, evaluate it, return its flat row."""
    train_bits = params.get("train_bits")
    eval_seed = [params.get("seed", 0), 3]
    t0, c0 = time.perf_counter(), time.process_time()
    if params["model"] == "construction":
        model = two_layer_construction(params["alphabet_size"], params["n"])
        row: dict[str, Any] = {"n_layer": 2, "n_head": 1, "n_embd": model.cfg.n_embd}
        row.update(evaluate(model, params["n"], np.random.default_rng(eval_seed), 256))
        row.update(steps=0, stop_reason="constructed")
    else:
        mcfg, tcfg = run_configs(params)
        model, result = train_induction(mcfg, tcfg, run_dir / "train", quiet=True)
        row = {"n_layer": mcfg.n_layer, "n_head": mcfg.n_head, "n_embd": mcfg.n_embd}
        row.update({k: v for k, v in result.items() if not k.endswith("time_s")})
    model = model.double()
    for bits in params["eval_bits"]:
        at_p = evaluate(
            model,
            params["n"],
            np.random.default_rng(eval_seed),
            256,
            Precision(bits, params["precision_mode"]),
        )
        row.update({f"{k}_p{bits}": v for k, v in at_p.items()})
    p_eff = train_bits if train_bits is not None else FLOAT32_BITS
    row.update(bound_columns(row["n_head"], model.cfg.head_dim, p_eff))
    row.update(
        train_bits_effective=p_eff,
        wall_time_s=time.perf_counter() - t0,
        cpu_time_s=time.process_time() - c0,
    )
    atomic_write_json(run_dir / "provenance.json", provenance())
    return row


def bound_columns(n_head: int, head_dim: int, bits: int) -> dict[str, float | int]:
    """h·m·p (m = d_head), the one-layer protocol's message and the n from which the bound
    forces errors on hard instances: the sweep report's marker."""
    return {
        "hmp": n_head * head_dim * bits,
        "message_bits": message_bits(n_head, head_dim, bits),
        "errors_forced_from": errors_forced_from(n_head, head_dim, bits),
    }


def run_induction_sweep(
    out_dir: str | Path,
    cfg: InductionSweepConfig,
    *,
    workers: int = 1,
    backend: Backend | None = None,
    quiet: bool = False,
) -> pd.DataFrame:
    """Check every run's configuration, then open (or resume) the sweep folder and run every
    unfinished configuration: a bad grid value is refused before anything is written."""
    specs = build_specs(cfg)
    for spec in specs:
        if spec.params["model"] == "trained":
            try:
                run_configs(spec.params)
            except ConfigError as err:
                raise ConfigError(f"run {spec.name}: {err}") from err
    with opened_sweep(out_dir, KIND, cfg.to_dict()) as sweep_dir:
        return run_sweep(
            sweep_dir,
            specs,
            run_one,
            workers=workers,
            backend=backend,
            quiet=quiet,
            description="induction sweep",
        )
