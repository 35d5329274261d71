"""Model-size sweep: several model shapes trained on the same data (the seed paper's Fig. 3).

Every run trains on the same first `train_tokens` tokens of the train split with the same
training config and length policy; runs.csv records each shape and its non-embedding
parameter count (the N of the model scaling law).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.lm.config import MODEL_PRESETS, GPTConfig, TrainConfig, preset_config
from scalelab.sweeps.schedule import Schedule
from scalelab.text.store import TokenStore

if TYPE_CHECKING:  # torch and pandas come with these: shapes are parsed without them
    import pandas as pd

    from scalelab.runs.sweep import Backend
    from scalelab.sweeps.worker import LMRun

KIND = "model"
HEAD_DIM = 32  # heads of a shape given without them: width / 32 (at least 1)
_SHAPE = re.compile(r"^(\d+)x(\d+)(?:x(\d+))?$")


def parse_model(text: str, base: GPTConfig) -> tuple[str, GPTConfig]:
    """A preset name (`tiny`, `small`, ...) or a shape `LAYERSxWIDTH[xHEADS]` on top of `base`
    (its context length and vocabulary); returns a label and the config."""
    text = text.strip()
    if text in MODEL_PRESETS:
        return text, preset_config(text, base.vocab_size)
    match = _SHAPE.match(text)
    if not match:
        raise ConfigError(
            f"model {text!r} is neither a preset {sorted(MODEL_PRESETS)} nor a shape; give a "
            "preset name or a shape such as 4x128 or 4x128x4 (layers x width [x heads])"
        )
    layers, width = int(match[1]), int(match[2])
    heads = int(match[3]) if match[3] else max(1, width // HEAD_DIM)
    if width % heads:
        raise ConfigError(f"model {text!r}: width {width} is not divisible by {heads} heads")
    try:
        cfg = base.replace(n_layer=layers, n_embd=width, n_head=heads)
    except ConfigError as err:
        raise ConfigError(f"model {text!r}: {err}") from err
    return f"L{layers}-W{width}-H{heads}", cfg


@dataclasses.dataclass(frozen=True)
class ModelSweepConfig(Config):
    """Everything that defines a model sweep (saved in sweep.json, checked on resume)."""

    data_dir: str
    train_tokens: int
    labels: tuple[str, ...]
    models: tuple[GPTConfig, ...]
    train: TrainConfig
    schedule: Schedule

    def validate(self) -> None:
        if len(self.models) < 2 or len(self.labels) != len(self.models):
            raise ConfigError("a model sweep needs at least 2 models; pass more --models")
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError(f"models {list(self.labels)} repeat a shape; list each once")
        typed = all(isinstance(m, GPTConfig) for m in self.models)
        if not (
            typed and isinstance(self.train, TrainConfig) and isinstance(self.schedule, Schedule)
        ):
            raise ConfigError(
                "a model sweep's parts must be configs; use ModelSweepConfig.from_dict"
            )
        available = TokenStore(self.data_dir, "train").n_tokens
        for m in self.models:
            block = m.block_size
            if not block < self.train_tokens <= available:
                raise ConfigError(
                    f"train_tokens {self.train_tokens} must be in ({block}, {available}] "
                    "(the context length and the train split's size); fix --train-tokens"
                )


def make_config(
    data_dir: str | Path,
    models: Sequence[str],
    base: GPTConfig,
    train: TrainConfig,
    schedule: Schedule,
    train_tokens: int | None = None,
) -> ModelSweepConfig:
    """`models`: preset names or shapes (see `parse_model`); `train_tokens` default: all."""
    data_dir = Path(data_dir).resolve()
    parsed = [parse_model(m, base) for m in models]
    n = train_tokens if train_tokens is not None else TokenStore(data_dir, "train").n_tokens
    return ModelSweepConfig(
        data_dir=str(data_dir),
        train_tokens=int(n),
        labels=tuple(label for label, _ in parsed),
        models=tuple(cfg for _, cfg in parsed),
        train=train,
        schedule=schedule,
    )


def specs(cfg: ModelSweepConfig) -> list[LMRun]:
    from scalelab.sweeps.worker import lm_run

    base, schedule = cfg.train, cfg.schedule
    out = []
    for i, (label, model) in enumerate(zip(cfg.labels, cfg.models, strict=True)):
        run_cfg = schedule.train_config(base, cfg.train_tokens, model.block_size)
        run = lm_run(
            f"m{i:02d}-{label}",
            model,
            run_cfg,
            Path(cfg.data_dir),
            label=label,
            n_layer=model.n_layer,
            n_embd=model.n_embd,
            n_head=model.n_head,
            block_size=model.block_size,
            train_tokens=cfg.train_tokens,
            policy=schedule.policy,
        )
        out.append(run)
    return out


def model_sweep(
    sweep_dir: str | Path,
    cfg: ModelSweepConfig,
    *,
    workers: int = 1,
    backend: Backend | None = None,
    only: Sequence[str] | None = None,
    quiet: bool = False,
) -> pd.DataFrame:
    """Run (or resume) the sweep; `only` runs just the named runs. The folder is locked
    until return."""
    from scalelab.runs.sweep import opened_sweep
    from scalelab.sweeps.worker import run_specs

    with opened_sweep(sweep_dir, KIND, cfg) as folder:
        return run_specs(
            folder, specs(cfg), workers=workers, backend=backend, only=only, quiet=quiet
        )
