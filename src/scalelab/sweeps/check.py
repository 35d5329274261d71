"""The convergence check: perturb what can flatten a slope, and measure how far it moves.

An exponent fitted to runs that had not converged is biased: large runs stopped early, or
held up by a constant learning rate's noise, flatten a data slope. The check perturbs the
`largest` runs of a sweep in three ways and refits the exponent with each:

- `stricter`: the stopping rule made `factor` times stricter (patience times `factor`, and
  the wait after the best that the patience fraction allows times `factor`) with `factor`
  times the step budget. Until the original run stopped, a run
  under the stricter rule trains the same steps, so where the learning-rate schedule does not
  depend on the budget the run folder is copied and resumed from its last checkpoint
  (identical to a fresh run, tested bit for bit); otherwise it is trained from step 0.
- `cooldown`: from the run's tested (best) weights and its optimizer state, the learning rate
  decays to zero over `COOLDOWN_FRACTION` of the steps to its best (at least two validation
  intervals), early stopping off; the cooldown's best validation is tested. It shows what the
  constant learning rate's noise cost.
- `seed`: the same run trained again from step 0 with the next seed (initialisation and data
  order).

The slope depends on both ends of the sweep, so the `smallest` runs are perturbed too, by
`stricter` and `seed` (shifts named `stricter (smallest)`, `seed (smallest)`). And at the
largest size a model `width_factor` times wider (`wider`, heads scaled with it) is trained
on the same data: when it lowers the test loss by more than the noise (another seed's change
of that run's loss, or two standard errors of the test loss, whichever is larger), the largest
run is MODEL-LIMITED: the model, not the data, sets its loss, and a fit of the data exponent
must stop below it.

The shifts of the exponent give the observation's systematic interval. The verdict says
BUDGET-LIMITED when a `stricter` or `cooldown` perturbation moves it by more than `threshold`
(the runs had not converged), PROTOCOL-LIMITED when a `seed` one does (the observation depends
on an arbitrary choice), and MODEL-LIMITED as above. Perturbation runs live under
CHECK/runs/<perturbation>-<hash of the run's config>, so two sweeps that share a run
(validate's data and model sweeps) train its check once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import positive_int
from scalelab.laws.regime.rules import FitRange, fit_range
from scalelab.lm.result import TrainResult
from scalelab.runs import outdir
from scalelab.sweeps.schedule import cooled

if TYPE_CHECKING:  # torch and pandas come with these: `CheckConfig` is read without them
    from scalelab.lm.config import TrainConfig
    from scalelab.sweeps.result import SweepResult
    from scalelab.sweeps.worker import LMRun

FACTOR = 3
COOLDOWN_FRACTION = 0.2
THRESHOLD = 0.01
PERTURBATIONS = ("stricter", "cooldown", "seed")  # of the largest runs
SMALLEST_PERTURBATIONS = ("stricter", "seed")  # of the smallest runs
SMALLEST = " (smallest)"  # the suffix of their shifts' names
WIDTH_FACTOR = 2


@dataclasses.dataclass(frozen=True)
class CheckConfig(Config):
    """Which runs of a sweep the check perturbs, and how hard (validate's `check` part)."""

    # the largest runs, perturbed by every one of `PERTURBATIONS`
    largest: int = option(1, "Convergence check: perturb this many largest runs per sweep.")
    # ... `stricter`: a stopping rule and budget this many times stricter
    factor: int = option(FACTOR, "Convergence check: the stricter stopping rule's factor.")
    # the smallest runs, perturbed too (stricter, another seed): both ends
    smallest: int = option(1, "Convergence check: perturb this many smallest runs too (both ends).")
    # the largest size, with a model this much wider
    width_factor: int | None = option(
        WIDTH_FACTOR,
        "Convergence check: train the data sweep's largest size with a model this many times "
        "wider (is it model-limited?).",
    )

    def validate(self) -> None:
        positive_int(self.largest, "largest")
        if not isinstance(self.factor, int) or self.factor < 2:
            raise ConfigError(f"the check factor must be an integer >= 2, got {self.factor!r}")
        if not isinstance(self.smallest, int) or self.smallest < 0:
            raise ConfigError(f"check smallest must be an integer >= 0, got {self.smallest!r}")
        if self.width_factor is not None and self.width_factor < 2:
            raise ConfigError(f"the width factor must be >= 2 (or None), got {self.width_factor}")


def budget_free(cfg: TrainConfig) -> bool:
    """Whether the learning rate at step s never reads the step budget (a fixed decay length,
    or a flat rate after warm-up), so a run with a longer budget passes through the same
    states."""
    return cfg.token_budget is None and (cfg.decay_steps is not None or cfg.min_lr == cfg.lr)


def stricter(spec: LMRun, factor: int = FACTOR) -> LMRun:
    """The same run with its stopping rule and step budget `factor` times stricter/longer."""
    if not isinstance(factor, int) or factor < 2:
        raise ConfigError(f"the check factor must be an integer >= 2, got {factor!r}")
    t = spec.train
    return spec.with_train(t.replace(max_steps=t.max_steps * factor, stop=t.stop.stricter(factor)))


def cooldown(spec: LMRun, run_dir: Path, fraction: float = COOLDOWN_FRACTION) -> LMRun:
    """A run that starts from `run_dir`'s tested weights and decays the learning rate to zero
    over `fraction` of the steps to its best (`sweeps.schedule.cooled`, the one rule)."""
    best = TrainResult.load(run_dir / "result.json").best_step
    return spec.with_train(cooled(spec.train, best, run_dir, fraction))


def reseeded(spec: LMRun) -> LMRun:
    """The same run with the next seed."""
    return spec.with_train(spec.train.replace(seed=spec.train.seed + 1))


def wider(spec: LMRun, factor: int = WIDTH_FACTOR) -> LMRun:
    """The same run with a model `factor` times wider (as many more heads, of the same width)."""
    if not isinstance(factor, int) or factor < 2:
        raise ConfigError(f"the width factor must be an integer >= 2, got {factor!r}")
    m = spec.model
    return dataclasses.replace(
        spec, model=m.replace(n_embd=m.n_embd * factor, n_head=m.n_head * factor)
    )


def check_name(perturbation: str, spec: LMRun) -> str:
    """The check run's folder name: the perturbation and a hash of the full run config (as
    its config.json holds it), so identical runs of two sweeps share one folder. A cooldown's
    source folder is left out of the hash: the same config trains the same weights wherever
    its folder lies."""
    train = {**spec.train.to_dict(), "init_from": bool(spec.train.init_from)}
    params = {"model": spec.model.to_dict(), "train": train, "data_dir": str(spec.data_dir)}
    blob = json.dumps(params, sort_keys=True).encode()
    return f"{perturbation}-{hashlib.sha256(blob).hexdigest()[:12]}"


def seed_continuation(src: Path, dst: Path, spec: LMRun) -> None:
    """Copy the finished run `src` into `dst` as an unfinished run with the config of `spec`,
    so the trainer resumes it from its last checkpoint. Skipped when `dst` exists."""
    from scalelab.lm import checkpoint as ckpt
    from scalelab.lm.train import METRICS

    if dst.exists():
        return
    tmp = dst.with_name(f".{dst.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in (ckpt.CONFIG, ckpt.STATE, ckpt.WEIGHTS, METRICS, "provenance.json"):
        if (src / name).exists():
            shutil.copy2(src / name, tmp / name)
    config = outdir.read_meta(tmp / ckpt.CONFIG)
    outdir.write_meta(tmp / ckpt.CONFIG, {**config, "train": spec.train})
    tmp.rename(dst)


def plan(sweep_dir: Path, specs: Sequence[LMRun], rule: CheckConfig) -> list[dict[str, Any]]:
    """One row per (perturbed run, perturbation): the perturbed spec (named by `check_name`),
    the name of the exponent's shift it gives (`key`), whether it continues the original run,
    and the original result. The `rule.largest` runs get every `PERTURBATIONS` (and `wider` with a
    `width_factor`), the `rule.smallest` runs not among them `SMALLEST_PERTURBATIONS`."""
    largest, smallest, width_factor = rule.largest, rule.smallest, rule.width_factor
    if not 1 <= largest <= len(specs):
        raise ConfigError(f"the check needs 1 to {len(specs)} runs, got {largest}")
    if not 0 <= smallest <= len(specs):
        raise ConfigError(f"the check's smallest runs must be 0 to {len(specs)}, got {smallest}")
    top = list(specs)[-largest:]
    ends = [(s, "largest") for s in top]
    ends += [(s, "smallest") for s in list(specs)[:smallest] if s not in top]
    rows = []
    for spec, end in ends:
        run_dir = sweep_dir / "runs" / spec.name
        result = TrainResult.load(run_dir / "result.json")
        original = spec.train
        regular = result.steps % original.eval_interval == 0
        made = {
            "stricter": lambda s=spec: stricter(s, rule.factor),
            "seed": lambda s=spec: reseeded(s),
        }
        made["cooldown"] = lambda s=spec, d=run_dir: cooldown(s, d)
        made["wider"] = lambda s=spec: wider(s, width_factor)  # only with a width_factor
        chosen = list(PERTURBATIONS) if end == "largest" else list(SMALLEST_PERTURBATIONS)
        if end == "largest" and width_factor is not None:
            chosen.append("wider")
        for p in chosen:
            perturbed = made[p]()
            rows.append(
                {
                    "run": spec.name,
                    "perturbation": p,
                    "end": end,
                    "key": p + (SMALLEST if end == "smallest" else ""),
                    "spec": dataclasses.replace(perturbed, name=check_name(p, perturbed)),
                    "continue": p == "stricter" and budget_free(original) and regular,
                    "source": run_dir,
                    "result": result,
                }
            )
    return rows


def run_check(
    sweep_dir: Path,
    check_dir: Path,
    specs: Sequence[LMRun],
    rule: CheckConfig,
    *,
    workers: int = 1,
    backend: Any = None,
    quiet: bool = True,
) -> list[dict[str, Any]]:
    """Train (or resume, or reuse) every perturbation that `plan` lists under `check_dir` (a
    resumable sweep folder of its own); one row per run and perturbation."""
    from scalelab.runs.sweep import open_sweep
    from scalelab.sweeps.worker import run_specs

    rows = plan(sweep_dir, specs, rule)
    config = {"factor": rule.factor, "cooldown_fraction": COOLDOWN_FRACTION}
    open_sweep(check_dir, "convergence", config)
    for r in rows:
        if r["continue"]:
            seed_continuation(r["source"], check_dir / "runs" / r["spec"].name, r["spec"])
    unique = list({r["spec"].name: r["spec"] for r in rows}.values())
    # Cooldowns start from the original runs, so every check run can go at once.
    run_specs(check_dir, unique, workers=workers, backend=backend, only=None, quiet=quiet)
    out = []
    for r in rows:
        got = TrainResult.load(check_dir / "runs" / r["spec"].name / "result.json")
        out.append(
            {
                "run": r["run"],
                "perturbation": r["perturbation"],
                "end": r["end"],
                "key": r["key"],
                "how": "continued" if r["continue"] else "trained",
                "check_run": r["spec"].name,
                "steps": r["result"].steps,
                "stop_reason": r["result"].stop_reason,
                "test_loss_nats": r["result"].test_loss_nats,
                "test_loss_se_nats": r["result"].test_loss_se_nats,
                "steps_perturbed": got.steps,
                "stop_reason_perturbed": got.stop_reason,
                "test_loss_nats_perturbed": got.test_loss_nats,
            }
        )
    return out


def model_limited(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The `wider` perturbation's reading (None without one): the loss it gains over the
    original run, the noise it is held against (another seed's change of the same run's loss,
    or two standard errors of the test loss, whichever is larger) and whether it exceeds it."""
    wide = next((r for r in rows if r["perturbation"] == "wider"), None)
    if wide is None:
        return None
    seed = next((r for r in rows if r["perturbation"] == "seed" and r["run"] == wide["run"]), None)
    seed_change = abs(seed["test_loss_nats_perturbed"] - seed["test_loss_nats"]) if seed else 0.0
    noise = max(seed_change, 2.0 * (wide.get("test_loss_se_nats") or 0.0))
    gain = wide["test_loss_nats"] - wide["test_loss_nats_perturbed"]
    return {
        "run": wide["run"],
        "gain_nats": gain,
        "noise_nats": noise,
        "limited": gain > noise,
        # a wider model that trains worse beyond the noise did not converge: no reading
        "wide_unconverged": gain < -noise,
    }


def _words(
    labels: list[str],
    moves: str,
    budget: list[str],
    protocol: bool,
    width: dict[str, Any] | None,
    threshold: float,
    interval: tuple[float, float],
) -> str:
    """The verdict's first sentences: the labels and why, or converged; the wider model."""
    lo, hi = interval
    why = []
    if budget:
        why.append(
            f"{' and '.join(budget)} move it by more than {threshold}: the runs had not converged"
        )
    if protocol:
        why.append(f"another seed moves it by more than {threshold}")
    if width and width["limited"]:
        why.append(
            f"a wider model lowers the largest run's test loss by "
            f"{width['gain_nats']:.4f} nats, more than the noise {width['noise_nats']:.4f}: "
            "the model, not the data, sets that loss, and a data exponent must be fitted "
            "below it (or give a wider --model)"
        )
    if labels:
        text = (
            f"The observation is {' and '.join(labels)}: the fitted exponent moves by "
            f"{moves}; {'; '.join(why)}. Systematic interval [{lo:.4f}, {hi:.4f}]."
        )
    else:
        text = (
            f"Converged within the check: the fitted exponent moves by {moves} (each at most "
            f"{threshold}). Systematic interval [{lo:.4f}, {hi:.4f}]."
        )
    if width and width.get("wide_unconverged"):
        text += (
            f" No sign of a model limit, but no agreement either: the wider model trained "
            f"worse, by {-width['gain_nats']:+.4f} nats, more than the noise "
            f"{width['noise_nats']:.4f} (its run did not converge, or it over-fits sooner on "
            "this data), so this check cannot say whether the model limits the largest run."
        )
    elif width and not width["limited"]:
        text += (
            f" Not model-limited: a wider model changes the largest run's test "
            f"loss by {-width['gain_nats']:+.4f} nats, within the noise {width['noise_nats']:.4f}."
        )
    return text


def verdict(
    exponent: float,
    perturbed: dict[str, float],
    rows: list[dict[str, Any]],
    threshold: float = THRESHOLD,
    unchecked_ended: Sequence[str] = (),
) -> dict[str, Any]:
    """How far each perturbation moved the fitted exponent, the systematic interval they
    span, and a verdict in words. `perturbed`: the exponent refitted with each perturbation
    (by shift name: `stricter`, `seed (smallest)`, ...). `unchecked_ended`: runs of the sweep
    the check did not perturb that ended at their step budget, not by the stopping rule; the
    verdict names them, since the check says nothing about them."""
    shifts = {p: v - exponent for p, v in perturbed.items()}
    kind = {p: p.removesuffix(SMALLEST) for p in shifts}
    moved = [p for p in shifts if abs(shifts[p]) > threshold]
    budget = [p for p in moved if kind[p] in ("stricter", "cooldown")]
    protocol = any(kind[p] == "seed" for p in moved)
    width = model_limited(rows)
    lo = exponent + min(0.0, *shifts.values())
    hi = exponent + max(0.0, *shifts.values())
    moves = ", ".join(f"{p} {s:+.4f}" for p, s in shifts.items())
    labels = (["BUDGET-LIMITED"] if budget else []) + (["PROTOCOL-LIMITED"] if protocol else [])
    labels += ["MODEL-LIMITED"] if width and width["limited"] else []
    text = _words(labels, moves, budget, protocol, width, threshold, (lo, hi))
    stuck = [
        r["run"]
        for r in rows
        if r["perturbation"] == "stricter" and r.get("stop_reason_perturbed") != "patience"
    ]
    if stuck:
        text += (
            f" {len(stuck)} run(s) under the stricter rule ended at their budget, not by "
            "patience: longer runs may move the exponent further."
        )
    if unchecked_ended:
        text += (
            f" Not checked: {len(unchecked_ended)} run(s) ended at their step budget, "
            f"not by the stopping rule ({', '.join(unchecked_ended)}): their losses are upper "
            "bounds, and training them longer may move the exponent."
        )
    return {
        "labels": labels,
        "budget_limited": bool(budget),
        "protocol_limited": protocol,
        "model_limited": bool(width and width["limited"]),
        "width_check": width,
        "exponent": exponent,
        "perturbed": perturbed,
        "shifts": shifts,
        "systematic_interval": [lo, hi],
        "threshold": threshold,
        "budget_ended": stuck,
        "unchecked_budget_ended": list(unchecked_ended),
        "text": text,
        "runs": rows,
    }


def exponent(x: Sequence[float], y: Sequence[float]) -> float:
    """The plain log-log slope the check moves (`laws.fit.power_law.fit_power_law`, form
    `power`)."""
    from scalelab.laws.fit.power_law import fit_power_law

    return fit_power_law(x, y, form="power", n_boot=0).exponent


def below_model_limited(sweep: SweepResult, rows: list[dict[str, Any]]) -> FitRange:
    """The fit range of `sweep` by the one rule (`laws.regime.rules.fit_range`) when the check is
    all that is known: every size, up to below a model-limited run."""
    width = model_limited(rows)
    flags = [bool(width and width["limited"] and n == width["run"]) for n in sweep.names]
    x, y = sweep.curve()
    return fit_range(x, y, limited=flags)


def check_sweep(
    sweep: SweepResult,
    check_dir: Path,
    rule: CheckConfig,
    *,
    workers: int = 1,
    backend: Any = None,
    quiet: bool = True,
) -> dict[str, Any]:
    """Train the perturbations of a finished sweep's `rule.largest` (and `rule.smallest`) runs under
    `check_dir`, refit the exponent over `sweep.size` with each (over `below_model_limited`),
    and give the `verdict`. The validation computes its range itself (with the unigram
    entropy and the budget-ended runs: `pipeline.steps.check`) and calls
    `run_check` and `assess`."""
    rows = run_check(
        sweep.sweep_dir, check_dir, sweep.specs, rule, workers=workers, backend=backend, quiet=quiet
    )
    return assess(sweep, rows, below_model_limited(sweep, rows))


def assess(
    sweep: SweepResult, rows: list[dict[str, Any]], fitted: FitRange | None
) -> dict[str, Any]:
    """The `verdict` of the check `rows` of `sweep`: the exponent refitted with each
    perturbation over the fit range `fitted`, the one the observed exponent is fitted over
    (every run where it is None or holds fewer than 3 sizes)."""
    from scalelab.sweeps.result import CONSTANT_LR

    names = sweep.names
    # An annealed sweep (sweeps.schedule cooldown_fraction) is checked on its constant-rate
    # phase, the one its stopping rule ran and the perturbations change.
    x, y = sweep.curve(CONSTANT_LR if CONSTANT_LR in sweep.table else "test_loss_nats")
    if fitted is None or fitted.n_points < 3:
        keep = np.ones(len(names), bool)
    else:
        keep = fitted.mask(sweep.curve()[0])
    perturbed = {}
    for key in dict.fromkeys(r["key"] for r in rows if r["perturbation"] != "wider"):
        y_p = y.copy()
        for r in rows:
            if r["key"] == key:
                y_p[names.index(r["run"])] = r["test_loss_nats_perturbed"]
        perturbed[key] = exponent(x[keep], y_p[keep])
    checked = {r["run"] for r in rows}
    reasons = sweep.ordered()["stop_reason"]
    ended = [
        n for n, why in zip(names, reasons, strict=True) if n not in checked and why != "patience"
    ]
    return verdict(exponent(x[keep], y[keep]), perturbed, rows, unchecked_ended=ended)
