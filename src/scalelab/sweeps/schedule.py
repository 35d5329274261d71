"""How long each run of a sweep trains: the training-length policy data and model sweeps share.

Training-length policies (runs capped before convergence flatten the slope, see
docs/background.md):
- `converge` (default): early stopping on validation loss (`patience` validations without
  improvement; the best weights are tested) inside a step budget that grows with the data:
  `max_epochs` passes over the run's tokens, clamped to [`min_steps`, `step_cap`]. A run
  that ends by its budget, not by patience, did not converge; the table says which. With
  `decay_epochs` set, the learning rate decays over that many passes (clamped to
  [`min_steps`, budget]) and stays at its floor afterwards, so the schedule does not depend
  on the budget: a run given twice the budget replays the same steps (`check.py`);
  the budget is then rounded up to whole validation intervals.
- `epochs`: a fixed number of passes over each run's own tokens, no early stopping.
- `tokens`: the same number of training tokens for every run, no early stopping.

Annealing within each run's own horizon (`cooldown_fraction`, converge only): a constant
rate with early stopping finds the horizon (the best step); then the rate decays to zero from
that checkpoint over `cooldown_fraction` of the steps to it (`cooled`, whole validation
intervals, at least two), early stopping off, and the cooldown's best validation is tested.
This is the warmup-stable-decay schedule with the decay placed where the run's own stopping
rule says its horizon ends; the data sweep trains both phases (sweeps/data.py).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from scalelab.config import FLAT, Config, option
from scalelab.errors import ConfigError
from scalelab.fields import choice, positive_int
from scalelab.lm.config import TrainConfig
from scalelab.lm.stopping import NEVER, StopRule

POLICIES = ("converge", "epochs", "tokens")
# Sweep runs validate every 50 steps, twice as often as a single run by default
# (TrainConfig.eval_interval): a converge budget can be as small as Schedule.min_steps, and
# patience counts validations. The sweep command's --eval-interval default, and the gpu
# validate preset's (its runs are as long as a sweep's).
EVAL_INTERVAL = 50
#: The sweeps' stopping rule (lm/stopping.py): 4 validations without improvement, or a
#: quarter of the validations so far when more (docs/sweeps.md, "How runs stop").
CONVERGE = StopRule(patience=4, patience_fraction=0.25)


@dataclasses.dataclass(frozen=True)
class Schedule(Config):
    """How long each run of a sweep trains (see the module docstring)."""

    policy: str = option(
        "converge",
        "Training length: converge (early stopping on validation loss, step budget growing "
        "with data), epochs (fixed passes over each run's data), tokens (fixed token budget).",
    )
    # converge: every run's early stopping (patience required); saved as the rule's keys
    stop: StopRule = dataclasses.field(default=CONVERGE, metadata=FLAT)
    max_epochs: float = option(40.0, "converge: step budget as passes over the run's tokens.")
    min_steps: int = option(200, "converge: smallest step budget.")
    # a run hitting the cap is flagged
    step_cap: int = option(20_000, "converge: largest step budget.")
    decay_epochs: float | None = option(
        None,
        "converge: learning-rate decay over this many passes, then flat (default: over the "
        "step budget). Makes the schedule independent of the budget.",
    )
    epochs: float = option(1.0, "epochs: passes over each run's tokens.")
    token_budget: int | None = option(None, "tokens: training tokens per run.")
    cooldown_fraction: float | None = option(
        None,
        "converge: after each run stops, anneal from its best step to lr 0 over this share of "
        "the steps to it, and test that (default: off; docs/sweeps.md).",
    )

    def validate(self) -> None:
        choice(self.policy, "policy", POLICIES)
        if not isinstance(self.stop, StopRule):
            raise ConfigError(f"stop must be a StopRule, got {self.stop!r}")
        positive_int(self.stop.patience, "patience")  # the converge policy stops by it
        for name in ("min_steps", "step_cap"):
            positive_int(getattr(self, name), name)
        if self.min_steps > self.step_cap:
            raise ConfigError(f"min_steps {self.min_steps} exceeds step_cap {self.step_cap}")
        for name in ("max_epochs", "epochs", "decay_epochs"):
            value = getattr(self, name)
            if value is None and name == "decay_epochs":
                continue
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.policy == "tokens" and self.token_budget is None:
            raise ConfigError("policy 'tokens' needs a token budget: pass --token-budget N")
        positive_int(self.token_budget, "token_budget", optional=True)
        f = self.cooldown_fraction
        if f is not None and not (isinstance(f, int | float) and 0 < f <= 1):
            raise ConfigError(f"cooldown_fraction must be in (0, 1] (or None), got {f!r}")
        if f is not None and self.policy != "converge":
            raise ConfigError("cooldown_fraction needs the converge policy (it finds the horizon)")

    def train_config(self, base: TrainConfig, n_tokens: int, block_size: int) -> TrainConfig:
        """`base` with the length fields this policy sets for a run on `n_tokens` tokens."""
        per_step = base.windows_per_step * block_size
        decay: int | None = None
        if self.policy == "converge":
            steps = math.ceil(self.max_epochs * n_tokens / per_step)
            steps = min(max(steps, self.min_steps), self.step_cap)
            stop = self.stop
            if self.decay_epochs is not None:
                # Whole validation intervals: the budget's last checkpoint is then a regular
                # one, so a longer budget can continue from it (sweeps/check.py).
                steps = -(-steps // base.eval_interval) * base.eval_interval
                decay = math.ceil(self.decay_epochs * n_tokens / per_step)
                decay = min(max(decay, self.min_steps), steps)
        elif self.policy == "epochs":
            steps, stop = max(1, math.ceil(self.epochs * n_tokens / per_step)), NEVER
        else:
            steps, stop = max(1, math.ceil(self.token_budget / per_step)), NEVER
        return base.replace(
            train_tokens=n_tokens,
            max_steps=steps,
            token_budget=None,
            stop=stop,
            decay_steps=decay,
            warmup_steps=min(base.warmup_steps, max((decay or steps) // 10, 1)),
        )


def cooled(train: TrainConfig, best_step: int, run_dir: Path, fraction: float) -> TrainConfig:
    """The cooldown of a finished run (`run_dir`, best at `best_step`): from its tested weights
    and optimizer state, the rate decays to zero over `fraction` of the steps to the best
    (whole validation intervals, at least two); no early stopping."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"the cooldown fraction must be in (0, 1], got {fraction!r}")
    intervals = max(2, math.ceil(fraction * best_step / train.eval_interval))
    return train.replace(
        init_from=str(run_dir.resolve()),
        max_steps=intervals * train.eval_interval,
        warmup_steps=0,
        min_lr=0.0,
        decay_steps=None,
        stop=train.stop.replace(patience=None, patience_fraction=0.0),
    )
