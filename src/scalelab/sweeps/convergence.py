"""The convergence check: give a sweep's largest runs twice their step budget and refit.

An exponent fitted to runs that had not converged is biased (capped large runs flatten a data
slope). The check reruns the `largest` runs of a sweep with `factor` times the step budget;
if the fitted exponent moves by more than `threshold`, the observation is budget-limited.

Three ways to obtain a run's longer-budget result, each exact (tests compare them with a
fresh longer run, bit for bit):
- `replay`: the run stopped by patience at a regular validation and its learning-rate
  schedule does not depend on the budget (`decay_steps` set). The trainer's data stream,
  RNG, validations and schedule at step s never read the budget, and the budget never acted,
  so a longer budget repeats it step for step: its result is reused, nothing is rerun.
- `continue`: the run ended at its budget, the schedule does not depend on the budget and
  the budget is a multiple of the validation interval (so its last checkpoint is a regular
  one). A longer run passes through exactly that state; the run folder is copied with the
  longer budget and resumed. The extra steps are really trained.
- `rerun`: anything else (e.g. a cosine schedule over the budget): trained from step 0.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json, read_json
from scalelab.lm import checkpoint as ckpt
from scalelab.lm.train import METRICS, TrainConfig
from scalelab.runs.sweep import RunSpec

FACTOR = 2
THRESHOLD = 0.01
ACTIONS = ("replay", "continue", "rerun")


def action_for(train: dict[str, Any], result: dict[str, Any]) -> str:
    """How to obtain this finished run's result under a longer budget (module docstring)."""
    cfg = TrainConfig.from_dict(train)
    fixed_schedule = cfg.decay_steps is not None and cfg.token_budget is None
    if not fixed_schedule:
        return "rerun"
    regular = int(result["steps"]) % cfg.eval_interval == 0
    if result.get("stop_reason") == "patience" and regular:
        return "replay"
    if cfg.max_steps % cfg.eval_interval == 0 and int(result["steps"]) == cfg.max_steps:
        return "continue"
    return "rerun"


def longer(spec: RunSpec, factor: int = FACTOR) -> RunSpec:
    """The same run with `factor` times its step budget (nothing else changes)."""
    if not isinstance(factor, int) or factor < 2:
        raise ConfigError(f"the budget factor must be an integer >= 2, got {factor!r}")
    train = TrainConfig.from_dict(spec.params["train"])
    steps = train.max_steps * factor
    params = {**spec.params, "train": train.replace(max_steps=steps).to_dict(), "max_steps": steps}
    return RunSpec(spec.name, params)


def seed_continuation(src: Path, dst: Path, spec: RunSpec) -> None:
    """Copy the finished run `src` into `dst` as an unfinished run with the longer budget of
    `spec`, so the trainer resumes it from its last (regular) checkpoint. Skipped when `dst`
    already exists (a resumed check)."""
    if dst.exists():
        return
    tmp = dst.with_name(f".{dst.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in (ckpt.CONFIG, ckpt.STATE, ckpt.WEIGHTS, METRICS, "provenance.json"):
        if (src / name).exists():
            shutil.copy2(src / name, tmp / name)
    config = read_json(tmp / ckpt.CONFIG)
    config["train"] = spec.params["train"]
    atomic_write_json(tmp / ckpt.CONFIG, config)
    tmp.rename(dst)


def plan(
    sweep_dir: Path, specs: Sequence[RunSpec], largest: int, factor: int = FACTOR
) -> list[dict[str, Any]]:
    """For the last `largest` specs (the largest runs; specs are in size order): the action,
    the longer spec, and the original result."""
    if largest < 1:
        raise ConfigError(f"the convergence check needs at least one run, got {largest}")
    rows = []
    for spec in list(specs)[-largest:]:
        result = read_json(sweep_dir / "runs" / spec.name / "result.json")
        rows.append(
            {
                "spec": longer(spec, factor),
                "action": action_for(spec.params["train"], result),
                "result": result,
            }
        )
    return rows


def run_check(
    sweep_dir: Path,
    check_dir: Path,
    specs: Sequence[RunSpec],
    *,
    largest: int,
    factor: int = FACTOR,
    workers: int = 1,
    backend: Any = None,
    quiet: bool = True,
) -> list[dict[str, Any]]:
    """Obtain the longer-budget result of each of the `largest` runs under `check_dir`
    (a sweep folder of its own, resumable) and return one row per run."""
    from scalelab.runs.sweep import open_sweep
    from scalelab.sweeps.worker import run_specs

    rows = plan(sweep_dir, specs, largest, factor)
    todo = [r for r in rows if r["action"] != "replay"]
    if todo:
        config = {"source": str(sweep_dir.resolve()), "factor": factor, "largest": largest}
        open_sweep(check_dir, "convergence", config)
        for r in todo:
            if r["action"] == "continue":
                name = r["spec"].name
                seed_continuation(sweep_dir / "runs" / name, check_dir / "runs" / name, r["spec"])
        run_specs(
            check_dir,
            [r["spec"] for r in todo],
            workers=workers,
            backend=backend,
            only=None,
            quiet=quiet,
        )
    out = []
    for r in rows:
        name = r["spec"].name
        longer_result = (
            r["result"]
            if r["action"] == "replay"
            else read_json(check_dir / "runs" / name / "result.json")
        )
        out.append(
            {
                "run": name,
                "action": r["action"],
                "max_steps": r["result"]["train"]["max_steps"],
                "max_steps_longer": r["spec"].params["max_steps"],
                "steps": r["result"]["steps"],
                "steps_longer": longer_result["steps"],
                "stop_reason": r["result"]["stop_reason"],
                "stop_reason_longer": longer_result["stop_reason"],
                "test_loss_nats": r["result"]["test_loss_nats"],
                "test_loss_nats_longer": longer_result["test_loss_nats"],
            }
        )
    return out


def verdict(
    exponent: float,
    exponent_longer: float,
    rows: list[dict[str, Any]],
    threshold: float = THRESHOLD,
) -> dict[str, Any]:
    """Whether the fitted exponent moved by more than `threshold` with the longer budgets,
    and a sentence that says so."""
    shift = exponent_longer - exponent
    limited = abs(shift) > threshold
    replayed = [r["run"] for r in rows if r["action"] == "replay"]
    trained = [r["run"] for r in rows if r["action"] != "replay"]
    how = []
    if trained:
        how.append(f"{len(trained)} run(s) trained with {FACTOR}x their step budget")
    if replayed:
        how.append(
            f"{len(replayed)} run(s) not rerun: they stopped by patience under a schedule that "
            "does not depend on the budget, so a longer budget replays them exactly"
        )
    still = [r["run"] for r in rows if r.get("stop_reason_longer", "patience") != "patience"]
    text = (
        f"The observation is BUDGET-LIMITED: with longer budgets for the largest runs the "
        f"fitted exponent moves by {shift:+.4f} (more than {threshold}); the runs had not "
        "converged, so the observed exponent is not yet the converged one."
        if limited
        else f"Converged within the check: with longer budgets for the largest runs the "
        f"fitted exponent moves by {shift:+.4f} (at most {threshold})."
    )
    if still and not limited:
        text += (
            f" But {len(still)} of the longer runs also ended at their budget, still "
            "improving: the exponent is stable to this check, the losses are not converged."
        )
    return {
        "budget_limited": limited,
        "exponent": exponent,
        "exponent_longer": exponent_longer,
        "shift": shift,
        "threshold": threshold,
        "how": "; ".join(how),
        "text": text,
        "runs": rows,
    }
