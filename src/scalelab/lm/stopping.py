"""Early stopping that ignores validation noise.

A run stops when its validation loss has not *really* improved for a while. Two things make
"really" and "a while" robust to noise (measured in docs/sweeps.md, "How runs stop"):
- `min_delta_sd`: an improvement resets the patience counter only if it beats the last
  counted best by this many standard errors of one validation (the SE of the mean over its
  windows, measured at every validation); any new minimum still becomes the tested weights.
- `patience_fraction`: the patience grows with the run, `max(patience, fraction × validations
  so far)`, so a long run is not stopped by a short flat stretch that a short run would be.

`stricter` makes a rule wait `factor` times longer (the convergence check's perturbation,
sweeps/check.py). `replay` applies a rule to a recorded curve, so rules can be compared
on real runs without training again (bench/stopping.py). The trainer (lm/train.py) and the
manifold regressor's loop (manifold/train.py) decide with `StopState.update`; this module is
the only place the arithmetic lives.

One owner: `StopRule` holds the rule's parameters, their defaults and their range checks;
`TrainConfig.stop` (one run) and `Schedule.stop` (every run of a sweep) each hold one, and
both save it as the flat keys `patience`, `patience_fraction`, `min_delta_sd` of their JSON
(a `FLAT` field, scalelab/config.py), the keys saved run folders hold, so they resume.
A new parameter of the rule: a field (with its check) here and its use in `StopState.stopped`
or `stricter` (made with `config.option`, the field is also `scalelab sweep`'s flag); its old
behaviour's value in a new format step of `runs.migrate`, so run folders saved before it resume
(docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import positive_int


@dataclasses.dataclass(frozen=True)
class StopRule(Config):
    """When a run stops; see the module docstring. `patience` counts validations; None: the
    rule never stops a run (its validations still choose the tested weights)."""

    patience: int | None = option(
        None, "Stop after N validations without improvement (best weights are kept)."
    )
    patience_fraction: float = option(
        0.0,
        "Or this share of the validations so far, whichever is longer (a wait that grows with "
        "the run, so slow late progress is not cut off by noise).",
    )
    min_delta_sd: float = option(
        0.0,
        "An improvement resets the patience only when larger than this many validation "
        "standard errors.",
    )

    def validate(self) -> None:
        positive_int(self.patience, "patience", optional=True)
        if not 0.0 <= self.patience_fraction <= 1.0 or not 0.0 <= self.min_delta_sd < 100:
            raise ConfigError(
                f"patience_fraction {self.patience_fraction} must be in [0, 1] and "
                f"min_delta_sd {self.min_delta_sd} in [0, 100)"
            )

    def patience_at(self, evals: int) -> int | None:
        """Validations without a counted improvement that stop a run after `evals` of them."""
        if self.patience is None:
            return None
        return max(self.patience, math.ceil(self.patience_fraction * evals))

    def stricter(self, factor: int) -> StopRule:
        """The rule whose patience, and whose wait after the best validation that the
        patience fraction allows, are `factor` times longer.

        A run under fraction f whose best is at validation b stops near b / (1 - f), a wait
        of b·f/(1 - f); multiplying that wait by `factor` gives factor·f / (1 - f + factor·f).
        (Multiplying f by 3 instead would wait 3(1 - f)/(1 - 3f) times longer: no end at
        f = 1/3.)"""
        f = self.patience_fraction
        return dataclasses.replace(
            self,
            patience=None if self.patience is None else self.patience * factor,
            patience_fraction=factor * f / (1 - f + factor * f) if f < 1 else 1.0,
        )


NEVER = StopRule()  # no early stopping: the run trains its whole budget
FIELDS = tuple(f.name for f in dataclasses.fields(StopRule))


@dataclasses.dataclass
class StopState:
    """What the rule remembers between validations (saved in state.pt for an exact resume)."""

    best_val: float = math.inf  # lowest validation loss: its weights are the tested ones
    best_step: int = 0
    counted_val: float = math.inf  # the best that last reset the patience counter
    bad_evals: int = 0
    evals: int = 0

    def update(self, val: float, step: int, se: float, rule: StopRule) -> tuple[bool, bool]:
        """Record one validation; return (new best weights, stop now)."""
        self.evals += 1
        improved = val < self.best_val
        if improved:
            self.best_val, self.best_step = val, step
        if val < self.counted_val - rule.min_delta_sd * se:
            self.counted_val, self.bad_evals = val, 0
        else:
            self.bad_evals += 1
        return improved, self.stopped(rule)

    def stopped(self, rule: StopRule) -> bool:
        """Whether `rule` stops the run at this state (a resumed run asks again: a stricter
        rule than the one that stopped it goes on)."""
        wait = rule.patience_at(self.evals)
        return wait is not None and self.bad_evals >= wait


def replay(
    val: Sequence[float], rule: StopRule, se: float | Sequence[float] = 0.0
) -> tuple[int, int]:
    """(index of the stopping validation, index of the tested weights) of `rule` on a recorded
    validation curve; the last index when it would not have stopped."""
    ses = [se] * len(val) if isinstance(se, int | float) else list(se)
    state = StopState()
    for i, (v, s) in enumerate(zip(val, ses, strict=True)):
        _, stop = state.update(float(v), i, float(s), rule)
        if stop:
            return i, state.best_step
    return len(val) - 1, state.best_step
