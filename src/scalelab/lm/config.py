"""What defines a language-model run: the model's shape (`GPTConfig`), how to train it
(`TrainConfig`) and the one registry of named presets that pairs them (`MODEL_PRESETS`), read by
`scalelab train`, the sweeps and the pipeline. No torch here: the CLI derives its options
(each field's default and help, `config.option`) from these dataclasses without paying for
the import."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scalelab.config import FLAT, Config, option
from scalelab.errors import ConfigError
from scalelab.fields import DTYPES, choice, positive_int
from scalelab.lm.stopping import FIELDS as STOP_FIELDS
from scalelab.lm.stopping import NEVER, StopRule

if TYPE_CHECKING:
    from scalelab.text.store import Store


@dataclasses.dataclass(frozen=True)
class GPTConfig(Config):
    """Shape of a GPT. `block_size` is the context length (learned positions)."""

    vocab_size: int = 4096
    block_size: int = option(
        128, "Context length in tokens (the model's).", retired="--context-len"
    )
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = option(0.0, "Dropout rate.")
    bias: bool = True

    def validate(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            positive_int(getattr(self, name), f"GPTConfig.{name}")
        if self.n_embd % self.n_head:
            raise ConfigError(
                f"n_embd={self.n_embd} is not divisible by n_head={self.n_head}; "
                "choose a width that is a multiple of the number of heads"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def train_flops_per_token(self) -> float:
        """Training FLOPs per token, the PaLM/nanoGPT count that benchmarks read throughput
        against: 6 × (12·L·d² block weights + V·d tied head) + 12·L·T·d attention scores
        (biases, norms and position embeddings left out)."""
        d, layers = self.n_embd, self.n_layer
        weights = 12 * layers * d**2 + self.vocab_size * d
        return 6.0 * weights + 12.0 * layers * self.block_size * d


@dataclasses.dataclass(frozen=True)
class TrainConfig(Config):
    """How to train. `batch_size` is windows per micro-batch; `grad_accum` micro-batches make
    one optimizer step, shared out over all processes (global batch = batch_size * grad_accum
    windows, whatever the number of processes; each process takes an equal share, so that
    product must be a multiple of the number of processes)."""

    seed: int = option(0, "Seed for weights and data order.")
    batch_size: int = option(8, "Windows per micro-batch.")
    grad_accum: int = option(
        1, "Micro-batches per optimizer step (shared over torchrun processes)."
    )
    lr: float = option(1e-3, "Peak learning rate (0 < lr <= 1).")
    min_lr: float = option(1e-4, "Learning rate at the end of the cosine decay.")
    warmup_steps: int = option(100, "Linear warm-up steps.")
    max_steps: int = option(2000, "Optimizer steps (the cosine schedule's length).")
    token_budget: int | None = option(None, "Stop after this many training tokens.")
    # nested data subsets
    train_tokens: int | None = option(None, "Train on the first N tokens of the train split only.")
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # 0 disables clipping
    eval_interval: int = option(100, "Steps between validations/checkpoints.")
    # validation windows = eval_batches * batch_size, fixed positions
    eval_batches: int = option(8, "Validation batches per evaluation.")
    test_tokens: int | None = option(None, "Score at most N test tokens (default all).")
    stop: StopRule = dataclasses.field(default=NEVER, metadata=FLAT)  # lm/stopping.py
    init_from: str | None = None  # a run folder: start from its tested weights and optimizer
    decay_steps: int | None = None  # cosine decay length (None: max_steps); then flat min_lr
    # auto: bf16 autocast where supported (faster, same curve), else fp32
    dtype: str = option("auto", "auto, float32 or bfloat16 (autocast).")

    def validate(self) -> None:
        for name in ("batch_size", "grad_accum", "max_steps", "eval_interval", "eval_batches"):
            positive_int(getattr(self, name), name)
        for name in ("token_budget", "train_tokens", "test_tokens", "decay_steps"):
            positive_int(getattr(self, name), name, optional=True)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ConfigError(f"warmup_steps must be >= 0, got {self.warmup_steps!r}")
        if not 0.0 < self.lr <= 1.0 or not math.isfinite(self.lr):
            raise ConfigError(
                f"learning rate {self.lr} is out of range; use 0 < lr <= 1 (e.g. 1e-3)"
            )
        if not 0.0 <= self.min_lr <= self.lr:
            raise ConfigError(f"min_lr {self.min_lr} must be in [0, lr={self.lr}]; lower --min-lr")
        if not (0.0 <= self.beta1 < 1.0 and 0.0 <= self.beta2 < 1.0):
            raise ConfigError(f"Adam betas must be in [0, 1), got {self.beta1}, {self.beta2}")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ConfigError("weight_decay and grad_clip must be >= 0 (grad_clip 0 = off)")
        if not isinstance(self.stop, StopRule):
            raise ConfigError(f"stop must be a StopRule, got {self.stop!r}")
        choice(self.dtype, "dtype", DTYPES)

    @property
    def windows_per_step(self) -> int:
        return self.batch_size * self.grad_accum


# The vocabulary comes from the data (see `preset_config`). Parameter counts (non-embedding /
# total with a 4096-token vocabulary): tiny 0.45M / 0.85M, small 3.2M / 4.3M, medium 10.6M /
# 12.3M. paper-125m is GPT-2 small with nanoGPT's padded 50304 vocabulary, trained as the seed
# paper did (nanoGPT's GPT-2 run: 0.5M-token batches, lr 6e-4 -> 6e-5, 2000 warm-up steps,
# cosine decay).
MODEL_PRESETS: dict[str, tuple[GPTConfig, TrainConfig]] = {
    "tiny": (
        GPTConfig(block_size=128, n_layer=4, n_head=4, n_embd=96),
        TrainConfig(batch_size=16, lr=2e-3, min_lr=2e-4, warmup_steps=100),
    ),
    "small": (
        GPTConfig(block_size=256, n_layer=4, n_head=4, n_embd=256),
        TrainConfig(batch_size=8, lr=1e-3, min_lr=1e-4, warmup_steps=100),
    ),
    "medium": (
        GPTConfig(block_size=256, n_layer=6, n_head=6, n_embd=384),
        TrainConfig(batch_size=8, lr=6e-4, min_lr=6e-5, warmup_steps=200),
    ),
    "paper-125m": (
        GPTConfig(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768),
        TrainConfig(
            batch_size=12,
            grad_accum=40,
            lr=6e-4,
            min_lr=6e-5,
            warmup_steps=2000,
            max_steps=600_000,
            eval_interval=2000,
            eval_batches=200,
        ),
    ),
}


def get_preset(name: str) -> tuple[GPTConfig, TrainConfig]:
    """The preset `name`: its model shape and the training defaults that go with it."""
    if name not in MODEL_PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(MODEL_PRESETS)}")
    return MODEL_PRESETS[name]


def preset_config(name: str, vocab_size: int | None = None, **overrides: object) -> GPTConfig:
    """The preset `name`'s model with the data's vocabulary size and any field overrides."""
    changes = dict(overrides)
    if vocab_size is not None:
        changes["vocab_size"] = vocab_size
    return get_preset(name)[0].replace(**changes)


def configs_for_preset(
    preset: str, data_dir: str | Path | Store, **overrides: Any
) -> tuple[GPTConfig, TrainConfig]:
    """Model and training configs for `preset` on the token store at `data_dir` (or opened:
    `text.store.Store`; its vocabulary size), with overrides given by field name (`None`
    values are ignored)."""
    from scalelab.text.store import opened

    train_cfg = get_preset(preset)[1]
    vocab = opened(data_dir).vocab_size
    given = {k: v for k, v in overrides.items() if v is not None}
    model_fields = {f.name for f in dataclasses.fields(GPTConfig)}
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)} | set(STOP_FIELDS)
    unknown = sorted(set(given) - model_fields - train_fields)
    if unknown:
        raise ConfigError(
            f"unknown option(s) {unknown}; model: {sorted(model_fields)}, "
            f"training: {sorted(train_fields)}"
        )
    model_cfg = preset_config(
        preset, vocab, **{k: v for k, v in given.items() if k in model_fields}
    )
    train = {k: v for k, v in given.items() if k in train_fields and k not in STOP_FIELDS}
    rule = train_cfg.stop.replace(**{k: v for k, v in given.items() if k in STOP_FIELDS})
    return model_cfg, train_cfg.replace(**train, stop=rule)


def warmup_cosine(step: int, *, lr: float, min_lr: float, warmup_steps: int, horizon: int) -> float:
    """The one learning-rate schedule of scalelab's training loops (language models,
    induction, manifold regressors): linear warm-up over `warmup_steps` steps to `lr`, then
    cosine decay that reaches `min_lr` at step `horizon - 1`, flat after it."""
    if step < warmup_steps:
        return lr * (step + 1) / (warmup_steps + 1)
    span = max(horizon - warmup_steps - 1, 1)
    frac = min((step - warmup_steps) / span, 1.0)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * frac)) * (lr - min_lr)


def lr_at(step: int, cfg: TrainConfig, total_steps: int) -> float:
    """`warmup_cosine` for a language-model run: the decay ends at the last step, or at step
    `decay_steps` when set, flat after it. With `decay_steps` set the schedule does not
    depend on the step budget: a longer budget replays the same steps, then continues."""
    horizon = cfg.decay_steps if cfg.decay_steps is not None else total_steps
    return warmup_cosine(
        step, lr=cfg.lr, min_lr=cfg.min_lr, warmup_steps=cfg.warmup_steps, horizon=horizon
    )


def planned_steps(cfg: TrainConfig, block_size: int) -> tuple[int, str]:
    """Steps to run and the stop reason if nothing stops the run earlier."""
    if cfg.token_budget is not None:
        by_tokens = math.ceil(cfg.token_budget / (cfg.windows_per_step * block_size))
        if by_tokens < cfg.max_steps:
            return by_tokens, "token_budget"
    return cfg.max_steps, "max_steps"
