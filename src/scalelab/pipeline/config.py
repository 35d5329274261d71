"""The options of `scalelab validate` (and `scalelab demo`, which is validate on a built-in
corpus with these defaults). One definition, one place: the CLI derives its options (each
field's default and help, `config.option`) from here.

The config is nested: `PipelineConfig` holds its parts (`train`, `schedule`, `check`,
`regime`, `id`, `model_sweep`), each a frozen dataclass whose field names are the names of the
settings they become (`TrainConfig`, `Schedule`, the convergence check, the regime rules of
`laws.regime.rules`, `EstimateConfig`, the model sweep),
so a name keeps one meaning from the CLI to the trainer. Flattening happens only at the edge:
`FLAT` maps each command-line option (and each key of a validate-many declaration) to its
place, `from_options` builds a config from flat options, `flat_defaults` lists them.

How the defaults were chosen (docs/sweeps.md): by the runs' stop reasons and by time only,
never by how close the observed exponent came to a prediction. Small models, a constant
learning rate after a short warm-up, and patience on the validation loss make the runs stop by
patience well inside their budgets; the sizes keep `make demo` near 10 minutes on a quiet
2-core CPU.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from scalelab.config import Config, accepts, option
from scalelab.errors import ConfigError
from scalelab.fields import DTYPES, choice, positive_int
from scalelab.intrinsic import PAPER_BATCH_SIZE, PAPER_K
from scalelab.laws.regime.rules import RegimeConfig
from scalelab.sweeps.check import CheckConfig
from scalelab.sweeps.schedule import EVAL_INTERVAL, Schedule
from scalelab.text.tokenizer import MIN_VOCAB_SIZE


@dataclasses.dataclass(frozen=True)
class TrainPart(Config):
    """What every sweep run's `TrainConfig` (and the model's `block_size`) takes from the
    validation; the rest is the `tiny` preset's. `eval_interval` means what it means in
    `TrainConfig` (steps between validations and checkpoints); its default differs by command,
    each in one place: 100 for one `scalelab train` run (`TrainConfig`), 50 for `scalelab
    sweep` (`sweeps.schedule.EVAL_INTERVAL`), 25 here, where validate's small runs stop by a
    patience counted in validations (docs/sweeps.md); the gpu preset takes the sweep's 50 for
    its longer runs.
    tests/test_cli_defaults.py fails when one of these is written a second time."""

    block_size: int = 128  # the context length of every model, and of the probe of d
    batch_size: int = 16
    lr: float = 2e-3
    min_lr: float = 2e-3  # = lr: constant after warm-up (a decayed rate left runs crawling)
    eval_interval: int = 25
    eval_batches: int = 8
    test_tokens: int | None = 100_000

    def validate(self) -> None:
        for name in ("block_size", "batch_size", "eval_interval", "eval_batches"):
            positive_int(getattr(self, name), name)
        positive_int(self.test_tokens, "test_tokens", optional=True)
        if not 0 <= self.min_lr <= self.lr:
            raise ConfigError(f"need 0 <= min_lr <= lr, got {self.min_lr} and {self.lr}")


@dataclasses.dataclass(frozen=True)
class IdPart(Config):
    """How every model measures d (the fields of `EstimateConfig` they set)."""

    per_doc: int = option(32, "Positions per test document for d.")
    max_documents: int | None = option(
        None, "Test documents (a seeded subset) every model reads for d (default: all)."
    )
    # given reference models read only this many test documents (a declared subset, chosen
    # by the seed): a 135M model's forward pass is most of validate's time on a CPU. 272 x 32
    # positions give two batches of 4,096 with a margin for short documents and duplicates
    # (320 gave 10,217 points, 2,025 of them left out of the exact batches)
    reference_documents: int | None = option(
        272,
        "Test documents (a seeded subset) each given reference model reads for d (the "
        "cpu-hour preset: every one).",
    )
    k: int = option(PAPER_K, "Neighbours for the MLE.")
    batch_size: int = option(PAPER_BATCH_SIZE, "Points per MLE batch.")
    # The forward pass's dtype of every model that measures d (`EstimateConfig.dtype`).
    dtype: str = option(
        "auto",
        "Forward-pass dtype of the models that measure d: auto|float32|bfloat16.",
        retired="--precision",
    )

    def validate(self) -> None:
        positive_int(self.per_doc, "per_doc")
        positive_int(self.max_documents, "max_documents", optional=True)
        positive_int(self.reference_documents, "reference_documents", optional=True)
        positive_int(self.k, "k")
        choice(self.dtype, "dtype", DTYPES)
        if self.batch_size <= self.k:
            raise ConfigError(f"batch size {self.batch_size} must exceed K = {self.k}; raise it")


@dataclasses.dataclass(frozen=True)
class ModelSweepPart(Config):
    """The model-size sweep: its shapes (none: no model sweep) and its training tokens. None by
    default: at the default 50,000 tokens every model of a CPU-sized sweep is data-limited
    (25-40 passes at its best step), so its alpha_N is no reading; `--preset model-side`
    (or `--model-sweep 1x16,1x32,2x48`) runs one."""

    models: tuple[str, ...] = option(
        (), "Model-size sweep shapes LAYERSxWIDTH, comma-separated ('' for none)."
    )
    # None: the data sweep's max_tokens
    train_tokens: int | None = option(
        None, "The model sweep's training tokens (default: --max-tokens)."
    )

    def validate(self) -> None:
        if self.models and len(self.models) < 3:
            raise ConfigError("a model sweep needs at least 3 models to fit; list more or none")
        positive_int(self.train_tokens, "train_tokens", optional=True)


# validate's training length: `Schedule`'s defaults (the rule: patience 4, fraction 0.25;
# 40 passes) with a decay over 3 passes and a smaller step budget; every preset below starts
# from it, so a default is written once.
SCHEDULE = Schedule(decay_epochs=3.0, min_steps=400, step_cap=4000)


PARTS: dict[str, type[Config]] = {
    "train": TrainPart,
    "schedule": Schedule,
    "check": CheckConfig,
    "regime": RegimeConfig,
    "id": IdPart,
    "model_sweep": ModelSweepPart,
}


@dataclasses.dataclass(frozen=True)
class PipelineConfig(Config):
    """Everything that defines a validation (saved as pipeline.json, checked on resume)."""

    corpus: str = option(
        "shakespeare",
        "A built-in name, a text file, a folder, a .jsonl/.parquet file or a prepared token store.",
    )
    split_on: str = option("blank", "Text files: documents end at 'blank' lines or each 'line'.")
    glob: str = option("**/*.txt", "Folders: files to read.")
    text_field: str = option("text", "JSONL field / Parquet column holding the text.")
    vocab_size: int = option(2048, "BPE vocabulary (ignored for a token store).")
    # the data sweep's model (LAYERSxWIDTH[xHEADS]); its largest run
    model: str = option("2x48", "The data sweep's model shape LAYERSxWIDTH[xHEADS].")
    # is the own reference model; two decades below max_tokens
    min_tokens: int = option(500, "Smallest training set (tokens).")
    # the demo's time (docs/sweeps.md#how-the-defaults-were-chosen)
    max_tokens: int = option(50_000, "Largest training set (tokens); also the model sweep's data.")
    # 5 of them from 5,000 tokens up: the regime test needs 5 in the fit range
    points: int = option(9, "Sizes in the data sweep's geometric grid.")
    # data-sweep runs per size (seeds seed, seed + 1, ...)
    seeds_per_size: int = option(
        1,
        "Data-sweep runs per size (seeds seed, seed + 1, ...; the same nested subset): the "
        "regime test reads their scatter as the noise.",
    )
    train: TrainPart = dataclasses.field(default_factory=TrainPart)
    schedule: Schedule = SCHEDULE
    check: CheckConfig = dataclasses.field(default_factory=CheckConfig)
    regime: RegimeConfig = dataclasses.field(default_factory=RegimeConfig)  # the fit range
    id: IdPart = dataclasses.field(default_factory=IdPart)
    model_sweep: ModelSweepPart = dataclasses.field(default_factory=ModelSweepPart)
    n_boot: int = option(1000, "Bootstrap resamples for the fits' intervals.")
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        for name, part in PARTS.items():
            if not isinstance(getattr(self, name), part):
                raise ConfigError(f"{name} must be a {part.__name__}, got {getattr(self, name)!r}")
        if not 0 < self.min_tokens < self.max_tokens:
            raise ConfigError(
                f"min_tokens {self.min_tokens}, max_tokens {self.max_tokens}: need "
                "0 < min_tokens < max_tokens; lower min_tokens or raise max_tokens"
            )
        if self.points < 3:
            raise ConfigError(f"points must be >= 3 to fit an exponent, got {self.points}")
        positive_int(self.seeds_per_size, "seeds_per_size")
        if not 1 <= self.check.largest <= self.points:
            raise ConfigError(
                f"check_largest must be in [1, points {self.points}], got {self.check.largest}"
            )
        if self.check.smallest > self.points:
            raise ConfigError(
                f"check_smallest must be in [0, points {self.points}], got {self.check.smallest}"
            )
        positive_int(self.vocab_size, "vocab_size")
        if self.vocab_size < MIN_VOCAB_SIZE:  # refused now, not after reading the corpus
            raise ConfigError(
                f"vocab_size {self.vocab_size}: a byte-level BPE needs at least "
                f"{MIN_VOCAB_SIZE} tokens (256 bytes + end of text); give {MIN_VOCAB_SIZE} or more"
            )
        self._check_shapes()

    def _check_shapes(self) -> None:
        """Refuse a model shape now, not after the tokenizer and the data sweep have run."""
        from scalelab.lm.config import preset_config
        from scalelab.sweeps.model import parse_model

        base = preset_config("tiny", max(self.vocab_size, 257))
        shapes = [("model", self.model)] + [("model_sweep", m) for m in self.model_sweep.models]
        for name, text in shapes:
            try:
                parse_model(text, base)
            except ConfigError as err:
                raise ConfigError(f"{name} {text}: {err}") from None

    @property
    def model_sweep_tokens(self) -> int:
        """The model sweep's training tokens."""
        return self.model_sweep.train_tokens or self.max_tokens

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """The config saved by `to_dict` (nested), or flat options (`FLAT`'s names; a flat
        config saved by an older version, as docs/benchmarks/cpu-hour/summary.json holds, has
        them once `runs.migrate` has read it)."""
        nested = {f.name for f in dataclasses.fields(cls)}
        if any(k in FLAT and k not in nested for k in data):
            return cls.from_options(**data)
        return super().from_dict(data)

    @classmethod
    def from_options(cls, base: PipelineConfig | None = None, **options: Any) -> PipelineConfig:
        """`base` (default: the defaults) with flat options (`FLAT`'s keys: the CLI's and a
        declaration's names, e.g. `id_k`, `check_largest`, `model_sweep`) put in place."""
        base = base or cls()
        unknown = sorted(set(options) - set(FLAT))
        if unknown:
            raise ConfigError(f"unknown option(s) {unknown}; valid options: {sorted(FLAT)}")
        values = {f.name: getattr(base, f.name) for f in dataclasses.fields(cls)}
        for key, value in options.items():
            part, field = FLAT[key]
            if part is None:
                values[field] = value
            elif field is None:  # the whole part (a Schedule, or its dict)
                values[part] = value if isinstance(value, Config) else PARTS[part].from_dict(value)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in options.items():
            part, field = FLAT[key]
            if part is not None and field is not None:
                value = tuple(value) if (part, field) == ("model_sweep", "models") else value
                nested.setdefault(part, {})[field] = value
        for part, changes in nested.items():  # one part at a time: validated as a whole
            values[part] = _replaced(values[part], part, changes)
        return cls(**values)

    @classmethod
    def from_preset(cls, name: str, **options: Any) -> PipelineConfig:
        """The preset `name` (VALIDATE_PRESETS: flat options over the defaults above) with flat
        `options` on top."""
        if name not in VALIDATE_PRESETS:
            raise ConfigError(
                f"unknown preset {name!r} (--preset); choose one of {sorted(VALIDATE_PRESETS)}"
            )
        return cls.from_options(cls.from_options(**VALIDATE_PRESETS[name]), **options)


def _flat() -> dict[str, tuple[str | None, str | None]]:
    """Flat option name → (part, field): `PART_FIELD` for the parts' fields, with the
    command-line's established names for two of them; the top-level fields as they are."""
    flat: dict[str, tuple[str | None, str | None]] = {}
    for f in dataclasses.fields(PipelineConfig):
        flat[f.name] = (f.name, None) if f.name in PARTS else (None, f.name)
    for part in ("train", "check", "regime", "id"):
        for f in dataclasses.fields(PARTS[part]):
            flat[f"{part}_{f.name}"] = (part, f.name)
    flat["model_sweep"] = ("model_sweep", "models")
    flat["model_sweep_tokens"] = ("model_sweep", "train_tokens")
    return flat


FLAT = _flat()


def _replaced(part: Config, name: str, changes: dict[str, Any]) -> Config:
    """`part` with `changes`; a refusal names the flat option(s) at fault as a caller gives
    them (`id_batch_size`; the CLI shows its --id-batch-size), found by trying each change
    alone."""
    try:
        return part.replace(**changes)
    except ConfigError as err:
        alone = [f for f in changes if not accepts(part.replace, **{f: changes[f]})]
        alone = alone or list(changes)
        keys = {v: k for k, v in FLAT.items()}
        given = ", ".join(f"{keys[(name, f)]} {changes[f]!r}" for f in alone)
        raise ConfigError(f"{given}: {err}") from None


def flat_defaults(cfg: PipelineConfig | None = None) -> dict[str, Any]:
    """Every flat option with its value in `cfg` (default: the defaults)."""
    cfg = cfg or PipelineConfig()
    out = {}
    for key, (part, field) in FLAT.items():
        holder = cfg if part is None else getattr(cfg, part)
        out[key] = holder if field is None else getattr(holder, field)
    return out


#: cpu-regime's schedule (sized below), which the power preset extends.
CPU_REGIME_SCHEDULE = SCHEDULE.replace(
    stop=SCHEDULE.stop.replace(patience=20),
    max_epochs=400.0,
    decay_epochs=None,  # as sized (docs/benchmarks/scaling.md): a constant rate
    min_steps=1_000,
    step_cap=16_000,
)

# Named presets (`scalelab validate --preset NAME`): flat options over the defaults above, one
# place. How each was sized, and which corpora reach its sizes: docs/sweeps.md#presets. Neither
# was tuned on an exponent.
VALIDATE_PRESETS: dict[str, dict[str, Any]] = {
    # A first try of `validate` on 2 CPU cores (docs/sweeps.md#presets): the default model on
    # 5 sizes, 500 ... 5,000 tokens, BPE 512, no model sweep, the check of the largest run only;
    # 136 CPU-seconds on shakespeare. Too small for any regime: it shows the steps and the
    # report, not a law.
    "quick": {
        "vocab_size": 512,
        "min_tokens": 500,
        "max_tokens": 5_000,
        "points": 5,  # 3 give a fit range of 2 sizes (1,581 and 5,000 on shakespeare): too few
        "model_sweep": (),
        "check_smallest": 0,
    },
    # 2 CPU cores, one hour in the worst case (every run at its 4,000-step cap, the check's
    # stricter run continuing to 3x that cap and its reseeded run to the cap), from float32
    # tokens per CPU-second measured per shape; shakespeare's train split holds the sizes.
    "cpu-hour": {
        "model": "4x96",
        "min_tokens": 2_500,
        "max_tokens": 250_000,
        "points": 7,
        "model_sweep": ("1x32", "2x48", "3x64", "4x96"),
        "id_reference_documents": None,
    },
    # Reaching a power-law regime of the data sweep (issue: the fit range by rules, the
    # curvature test): a vocabulary of 320 so that tokens are cheap and the model, not the
    # embedding, holds the parameters; `2x32` (about 115,000 tokens per second per core on
    # the float32 path); 11 sizes over two decades, 500 ... 64,000 tokens. Sized by time and
    # stop reasons only: budgets of 400 passes (at most 16,000 steps) so that runs end by
    # the rule, and a patience of 20 validations (500 steps) with a floor of 1,000 steps so
    # that the small runs cannot stop on the slow stretch that the patience of 4 cut short
    # (docs/benchmarks/scaling.md, the third try). No model sweep: it measures alpha_D.
    "cpu-regime": {
        "vocab_size": 320,
        "model": "2x32",
        "min_tokens": 500,
        "max_tokens": 64_000,
        "points": 11,
        "schedule": CPU_REGIME_SCHEDULE,
        "model_sweep": (),
    },
    # Designed by the regime test's power, not by any exponent
    # (docs/benchmarks/scaling.md#a-protocol-designed-by-power-and-what-it-costs-here): two
    # decades above the learning transition at BPE 320 (25,000 ... 2,500,000 tokens), 5 sizes
    # x 2 seeds (power 0.99 on an exact power law of slope 0.10 at noise 0.0075), `2x256` (1.6
    # tokens per parameter at the top, where `2x32` at 64,000 tokens is already model-limited
    # in 2 of 6 corpora), cpu-regime's stopping rule with a cap that holds the top run's
    # 0.081 steps per token, and every run annealed over 20% of its horizon. About 60-150 hours
    # of 2 CPU cores per corpus: GPU or cluster work (`--backend ray`), not yet run.
    "power": {
        "vocab_size": 320,
        "model": "2x256",
        "min_tokens": 25_000,
        "max_tokens": 2_500_000,
        "points": 5,
        "seeds_per_size": 2,
        "schedule": CPU_REGIME_SCHEDULE.replace(step_cap=250_000, cooldown_fraction=0.2),
        "model_sweep": (),
    },
    # The model side where it can be read: a vocabulary of 320 (the 256 bytes, end-of-text and
    # 63 merges) so that non-embedding parameters are the larger part of every model
    # (59-91%), four widths at depth 6 (5,248 ... 300,032 non-embedding parameters, 1.76
    # decades), each on 2,048,000 tokens so that the 4,000-step cap is at most 4 passes:
    # no model can be data-limited by the report's rule. Corpora: >= 2,048,000 train tokens
    # with BPE 320 (shakespeare has 2.5M).
    "model-side": {
        "vocab_size": 320,
        "model_sweep": ("6x8", "6x16", "6x32", "6x64"),
        "model_sweep_tokens": 2_048_000,
    },
    # One H200-class GPU: 4.93M-85.1M non-embedding parameters, 10M-100M tokens (a corpus with
    # at least 100M training tokens); its data sweep is bench/gpu_validate.py's 8 minutes.
    "gpu": {
        "vocab_size": 4096,
        "model": "4x320x5",
        "train_block_size": 512,
        "train_batch_size": 128,
        "train_lr": 1e-3,
        "train_min_lr": 1e-3,
        "min_tokens": 10_000_000,
        "max_tokens": 100_000_000,
        "points": 4,
        "train_eval_interval": EVAL_INTERVAL,
        "train_test_tokens": 2_000_000,
        "schedule": SCHEDULE.replace(
            max_epochs=2.0, decay_epochs=2.0, min_steps=100, step_cap=20_000
        ),
        "model_sweep": ("4x320x5", "6x512x8", "8x640x10", "12x768x12"),
        "id_max_documents": 2_000,
    },
}
