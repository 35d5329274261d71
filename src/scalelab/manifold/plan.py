"""What a manifold sweep runs: its config, the named presets, and the list of runs.

Five kinds of run (column `task` of runs.csv):
- `id`: the intrinsic-dimension engine on the sampled inputs;
- `data`: for every (d, β, seed, n), the regressor on n noisy samples (data scaling);
- `wide`: the same at the largest n with a wider model (is the model the limit?);
- `model`: widths at the largest n (model scaling at finite n, the `full` preset);
- `online`: widths trained on fresh noise-free samples every step (the infinite-data limit,
  where the approximation error, hence α_N = 2β/d, is what is measured).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.fields import choice
from scalelab.manifold.config import FitConfig, RegressorConfig, ScheduleConfig
from scalelab.manifold.geometry import MANIFOLDS, make_manifold
from scalelab.manifold.problem import TARGETS, ProblemConfig
from scalelab.runs.sweep import RunSpec

KIND = "manifold"
SCHEDULES = ("patience", "fixed")


@dataclass(frozen=True)
class ManifoldSweepConfig(Config):
    """Everything that defines a manifold sweep (saved in sweep.json; resuming checks it)."""

    manifold: str = option("sphere", f"One of: {', '.join(MANIFOLDS)}.")
    target: str = "waves"
    dims: tuple[int, ...] = option(
        (2, 4), "Intrinsic dimensions (the model, online and extra runs follow them)."
    )
    betas: tuple[float, ...] = option((1.0,), "Hölder exponents in (0, 1].")
    # (d, β) pairs run on top of dims × betas, e.g. ((1, 0.5), (4, 0.5))
    extra_problems: tuple[tuple[int, float], ...] = ()
    n_values: tuple[int, ...] = option((100, 250, 630, 1600, 4000, 10000), "Training sizes.")
    seeds: tuple[int, ...] = option((0, 1), "Data/init seeds.")
    D: int = 32
    noise_std: float = option(0.5, "Label noise standard deviation.")
    warp: float = 0.0
    problem_seed: int = 0
    n_test: int = 8192
    val_fraction: float = 0.25
    val_size: int = 0  # > 0: a validation set of this fixed size at every n
    # regressor (model-scaling runs vary n_embd, with ffn_width = 2 n_embd)
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    ffn_width: int = 64
    ffn_depth: int = 2
    attention: str = option("relu", "relu (the paper's) or softmax.")
    model_dims: tuple[int, ...] = option((), "Dimensions for model scaling.")
    model_widths: tuple[int, ...] = option(
        (), "Model-scaling widths n_embd at the largest n (with --model-dims)."
    )
    wide_width: int = 0  # > 0: one `wide` run per (d, β) at the largest n, seed seeds[0]
    online_dims: tuple[int, ...] = option((), "Dimensions of the online runs.")
    online_widths: tuple[int, ...] = option((), "Widths of the online runs.")
    online_steps: int = option(
        2000, "Steps of the online (fresh-sample) runs, e.g. 6000 (the theorem preset)."
    )
    # the online runs' seeds (empty: seeds[0] alone); steps = online_steps ·
    # (width / narrowest)^online_step_growth; online_long_factor > 1 adds, per width, a run
    # with that many times the steps (seed online_seeds[0]): the tripled-steps check
    online_seeds: tuple[int, ...] = ()
    online_step_growth: float = 0.0
    online_long_factor: int = 0
    # True: only the ID and online runs (α_N alone; n_values still set the field's cap)
    online_only: bool = False
    # optimiser: "patience" (plateau LR halving, early stop) or "fixed" (ScheduleConfig)
    schedule: str = "patience"
    lr: float = 2e-3
    batch_size: int = 128
    max_steps: int = 20000
    patience: int = 12
    # patience rule: validate every epoch, or every this many steps where an epoch is shorter
    min_eval_steps: int = 25
    epochs: float = 20.0  # fixed schedule: steps = clip(epochs·n/batch, min_steps, max_steps)
    min_steps: int = 400
    # intrinsic dimension of the inputs, and (hidden_id) of the trained models' states
    id_points: int = 8192
    id_estimator: str = "mle"
    hidden_id: bool = False
    # > 1: every data and wide run is an ensemble of this many inits (one sample), trained
    # together (`manifold.batched`); its prediction is their mean. Member 0 is the run's
    # single model (init and batch order from the run's seed), so single against ensemble is
    # measured on the same seeds.
    ensemble: int = option(1, "Inits per data run, trained together; the run predicts their mean.")
    # True: runs ordered curve by curve ((d, β): every seed and size, then its wide run), so a
    # sweep stopped early holds whole curves
    by_curve: bool = False
    width_rule: bool = option(
        False,
        "Grow each data run's width with n so its parameters grow as n^(d/(2β+d)) "
        "(Theorem 1's N), from the config's width at the middle n.",
    )
    # (d, β, cap_n): a curve whose field is capped at another n than max(n_values). A
    # combined table (`manifold.combine`) keeps each curve's field as its own sweep drew it.
    field_caps: tuple[tuple[int, float, int], ...] = ()

    def validate(self) -> None:
        if self.manifold not in MANIFOLDS:
            raise ConfigError(
                f"unknown manifold {self.manifold!r}; choose one of {sorted(MANIFOLDS)}"
            )
        choice(self.target, "target", TARGETS)
        choice(self.schedule, "schedule", SCHEDULES)
        for name in ("dims", "betas", "n_values", "seeds"):
            if not getattr(self, name):
                raise ConfigError(f"{name} must not be empty")
        if min(self.n_values) < 8:
            raise ConfigError("every n must be >= 8 (training needs a few points)")
        if min(self.seeds) < 0:
            raise ConfigError(f"every seed must be >= 0, got {min(self.seeds)}")
        if not 0 < self.val_fraction <= 1 or self.val_size < 0:
            raise ConfigError("val_fraction must be in (0, 1] and val_size >= 0")
        if set(self.model_dims) - set(self.dims) or set(self.online_dims) - set(self.dims):
            raise ConfigError("model_dims and online_dims must be subsets of dims")
        if bool(self.model_dims) != bool(self.model_widths):
            raise ConfigError("give both model_dims and model_widths, or neither")
        if bool(self.online_dims) != bool(self.online_widths):
            raise ConfigError("give both online_dims and online_widths, or neither")
        for d, beta, cap in self.field_caps:
            if (int(d), float(beta)) not in self.problems or cap < 1:
                raise ConfigError(
                    f"field_caps entry ({d}, {beta}, {cap}): name a (d, β) of the sweep and a "
                    "cap n >= 1"
                )
        for d, beta in self.problems:
            make_manifold(self.manifold, d)  # e.g. the Swiss roll needs d >= 2
            self.problem(d, beta)  # validates d, beta, noise, target
        for width in (None, *self.model_widths, *self.online_widths, self.wide_width or None):
            self.regressor(width)  # e.g. widths divisible by n_head
        self.fit()
        if self.ensemble < 1:
            raise ConfigError(
                f"ensemble must be >= 1 (inits per run), got {self.ensemble}; use 1 for one model"
            )
        if self.online_step_growth < 0 or self.online_long_factor < 0:
            raise ConfigError(
                "online_step_growth and online_long_factor must be >= 0, got "
                f"{self.online_step_growth} and {self.online_long_factor}; use 0 to turn "
                "either off"
            )
        if self.online_only and not self.online_dims:
            raise ConfigError("online_only needs online runs: give online_dims and online_widths")
        if self.online_steps < 1:
            raise ConfigError(
                f"online_steps (--online-steps) must be >= 1, got {self.online_steps}; "
                "use 1 or more steps, e.g. --online-steps 6000"
            )
        self.schedule_for(min(self.n_values))

    @property
    def problems(self) -> list[tuple[int, float]]:
        """Every (d, β) of the sweep: dims × betas, then the extra pairs."""
        pairs = [(d, b) for d in self.dims for b in self.betas]
        return pairs + [(int(d), float(b)) for d, b in self.extra_problems if (d, b) not in pairs]

    def problem(self, d: int, beta: float) -> ProblemConfig:
        return ProblemConfig(
            manifold=self.manifold,
            d=d,
            D=self.D,
            beta=beta,
            noise_std=self.noise_std,
            warp=self.warp,
            target=self.target,
            cap_n=self.field_cap(d, beta),
            seed=self.problem_seed,
        )

    def field_cap(self, d: int, beta: float) -> int:
        """The n the (d, β) field is capped at: `field_caps`' entry, else the largest n."""
        caps = {(int(cd), float(cb)): int(cn) for cd, cb, cn in self.field_caps}
        return caps.get((int(d), float(beta)), max(self.n_values))

    def data_width(self, d: int, beta: float, n: int) -> int | None:
        """A data run's width: the config's (None) or, with `width_rule`, the width at which
        the parameters (≈ width² at fixed depth) grow as n^(d/(2β+d)), Theorem 1's choice of
        N: n_embd·(n/n_mid)^(d/(2(2β+d))), n_mid the geometric middle of n_values, rounded to
        a multiple of n_head (at least n_head)."""
        if not self.width_rule:
            return None
        mid = math.sqrt(min(self.n_values) * max(self.n_values))
        width = self.n_embd * (n / mid) ** (d / (2 * (2 * beta + d)))
        return self.n_head * max(1, round(width / self.n_head))

    def regressor(self, width: int | None = None) -> RegressorConfig:
        return RegressorConfig(
            D=self.D,
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_embd=width or self.n_embd,
            ffn_width=2 * width if width else self.ffn_width,
            ffn_depth=self.ffn_depth,
            attention=self.attention,
        )

    def fit(self) -> FitConfig:
        return FitConfig(
            lr=self.lr,
            batch_size=self.batch_size,
            max_steps=self.max_steps,
            min_eval_steps=self.min_eval_steps,
            patience=self.patience,
        )

    def schedule_for(
        self, n: int | None, width: int | None = None, factor: int = 1
    ) -> ScheduleConfig:
        """The fixed schedule at training size n (None: an online run of this width, its
        steps grown with width, times `factor`)."""
        if n is None:
            steps = self.online_steps * factor
            if width is not None and self.online_widths:
                growth = (width / min(self.online_widths)) ** self.online_step_growth
                steps = round(self.online_steps * growth) * factor
        else:
            steps = math.ceil(self.epochs * n / self.batch_size)
            steps = min(max(steps, self.min_steps), self.max_steps)
        return ScheduleConfig(lr=self.lr, batch_size=self.batch_size, max_steps=steps)

    def val_count(self, n: int) -> int:
        return self.val_size or max(32, round(self.val_fraction * n))

    def with_dims(self, dims: tuple[int, ...]) -> ManifoldSweepConfig:
        """This sweep on other intrinsic dimensions: the model-scaling, online and extra (d, β)
        runs keep only the dimensions among `dims` (so a preset runs on any d)."""
        keep = set(dims)
        model_dims = tuple(d for d in self.model_dims if d in keep)
        online_dims = tuple(d for d in self.online_dims if d in keep)
        return self.replace(
            dims=tuple(dims),
            model_dims=model_dims,
            model_widths=self.model_widths if model_dims else (),
            online_dims=online_dims,
            online_widths=self.online_widths if online_dims else (),
            extra_problems=tuple(p for p in self.extra_problems if p[0] in keep),
        )


def run_rng(cfg: ManifoldSweepConfig, d: int, beta: float, n: int | None, seed: int) -> Any:
    """The generator of one run's draws: its training sample first, then its validation set
    (the online runs: the validation set, then a fresh batch every step)."""
    return np.random.default_rng([cfg.problem_seed, seed, n or 0, d, int(beta * 1000)])


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def config_from_json(data: dict[str, Any]) -> ManifoldSweepConfig:
    """The config back from its sweep.json form (JSON lists become tuples)."""
    return ManifoldSweepConfig.from_dict({k: _tuples(v) for k, v in data.items()})


#: 13 sizes, evenly spaced in log over two decades (rounded): the `theorem` preset's grid.
THEOREM_SIZES = tuple(round(100 * 10 ** (i / 6)) for i in range(13))

MANIFOLD_PRESETS: dict[str, ManifoldSweepConfig] = {
    "smoke": ManifoldSweepConfig(
        dims=(2,), n_values=(64, 256), seeds=(0,), n_test=1024, n_embd=16, ffn_width=32,
        max_steps=300, id_points=1024,
    ),
    "quick": ManifoldSweepConfig(dims=(2, 4)),
    "full": ManifoldSweepConfig(
        dims=(2, 4, 6, 8), betas=(1.0, 0.5), seeds=(0, 1, 2),
        model_dims=(2,), model_widths=(8, 16, 32, 64),
    ),
    # Theorem 1 where d is known (docs/benchmarks/manifold.md): the Gaussian field on T^d,
    # 13 sizes over two decades, 3 seeds, each run an ensemble of 4 inits trained until
    # patience stops it (the design and why: docs/benchmarks/manifold.md).
    "theorem": ManifoldSweepConfig(
        manifold="torus", target="field", dims=(1, 2, 3, 4, 6, 8), betas=(1.0,),
        extra_problems=((1, 0.5), (4, 0.5)), n_values=THEOREM_SIZES, seeds=(0, 1, 2), D=16,
        val_size=512, schedule="patience", lr=2e-3, batch_size=64, max_steps=50000,
        min_eval_steps=100, patience=12, ensemble=4, by_curve=True, wide_width=64,
        hidden_id=True,
    ),
    # The same path in minutes: one d, five sizes, two seeds, ensembles of two.
    "theorem-quick": ManifoldSweepConfig(
        manifold="torus", target="field", dims=(2,), n_values=(100, 178, 316, 562, 1000),
        seeds=(0, 1), D=16, n_test=2048, val_size=256, schedule="patience", lr=2e-3,
        batch_size=64, max_steps=50000, min_eval_steps=100, patience=12, ensemble=2,
        by_curve=True, wide_width=64, hidden_id=True, id_points=4096,
    ),
    # α_N where d is known: online runs alone (fresh noise-free samples every step) on the
    # theorem preset's field, 3 seeds, steps growing with width (2,000 at width 4, ∝ width),
    # and every width again with 3x the steps: the widths where that changes the error by
    # less than the seed noise are approximation-limited (docs/benchmarks/manifold.md).
    "theorem-width": ManifoldSweepConfig(
        manifold="torus", target="field", dims=(2, 4), betas=(1.0,), n_values=THEOREM_SIZES,
        seeds=(0,), D=16, val_size=512, schedule="fixed", lr=5e-3, batch_size=64,
        online_dims=(2, 4), online_widths=(4, 8, 16, 32, 64), online_steps=2000,
        online_seeds=(0, 1, 2), online_step_growth=1.0, online_long_factor=3, online_only=True,
    ),
    # The first theorem design (docs/benchmarks/manifold_theorem was run with it): one model
    # per run, a fixed schedule capped at 2000 steps, 5 sizes.
    "theorem-v1": ManifoldSweepConfig(
        manifold="torus", target="field", dims=(1, 2, 3, 4, 6, 8), betas=(1.0,),
        extra_problems=((1, 0.5), (4, 0.5)), n_values=(100, 316, 1000, 3162, 10000),
        seeds=(0, 1, 2), D=16, val_size=512, schedule="fixed", lr=5e-3, batch_size=64,
        epochs=20.0, min_steps=400, max_steps=2000, wide_width=64,
        online_dims=(2, 4), online_widths=(4, 8, 16, 32, 64), online_steps=2000,
        hidden_id=True,
    ),
}  # fmt: skip
# The theorem preset with 4 blocks instead of 2, declared 2026-12-05 from the `depth`
# lever (docs/benchmarks/manifold.md § 3) before any of its curves ran: at d = 2 … 8 it
# lowered the ensemble's Bayes ratio at n = 10,000 by 13–22% and kept it within
# 0.81–1.21x of n = 316's, where training length, batch and the width rule did not; at
# d = 1 it did not help (2.66 against 2.29).
MANIFOLD_PRESETS["theorem-deep"] = MANIFOLD_PRESETS["theorem"].replace(n_layer=4)


def _data_spec(
    cfg: ManifoldSweepConfig, base: dict, d: int, beta: float, n: int, seed: int
) -> RunSpec:
    params = {"task": "data", **base, "d": d, "beta": beta, "n": n, "seed": seed}
    width = cfg.data_width(d, beta, n) or cfg.n_embd
    return RunSpec(f"data_d{d}_b{beta:g}_n{n}_s{seed}", {**params, "n_embd": width})


def _data_specs(cfg: ManifoldSweepConfig, seed: int, base: dict) -> list[RunSpec]:
    return [
        _data_spec(cfg, base, d, beta, n, seed)
        for d, beta in cfg.problems
        for n in sorted(cfg.n_values)
    ]


def specs_for(cfg: ManifoldSweepConfig) -> list[RunSpec]:
    """All runs of a sweep. Patience sweeps: cheapest first. Fixed-schedule sweeps: seed by
    seed (each seed a full set of curves), the online runs after the second seed and the
    wide runs after them, so a sweep cut short still has whole curves of every kind."""
    base = {"manifold": cfg.manifold, "D": cfg.D, "noise_std": cfg.noise_std}
    specs = [
        RunSpec(f"id_d{d}", {"task": "id", **base, "d": d, "beta": cfg.betas[0], "seed": 0})
        for d in cfg.dims
    ]
    n_big = max(cfg.n_values)
    online_seeds = cfg.online_seeds or cfg.seeds[:1]
    online = [
        RunSpec(
            f"online_d{d}_w{width}_s{seed}",
            {"task": "online", **base, "d": d, "beta": cfg.betas[0], "n": None,
             "seed": seed, "n_embd": width},
        )
        for seed in online_seeds for d in cfg.online_dims for width in sorted(cfg.online_widths)
    ]  # fmt: skip
    if cfg.online_long_factor > 1:
        online += [
            RunSpec(
                f"online_long_d{d}_w{width}_s{online_seeds[0]}",
                {"task": "online_long", **base, "d": d, "beta": cfg.betas[0], "n": None,
                 "seed": online_seeds[0], "n_embd": width},
            )
            for d in cfg.online_dims for width in sorted(cfg.online_widths)
        ]  # fmt: skip
    if cfg.online_only:
        return specs + online
    wide = [
        RunSpec(
            f"wide_d{d}_b{beta:g}_w{cfg.wide_width}_s{cfg.seeds[0]}",
            {"task": "wide", **base, "d": d, "beta": beta, "n": n_big, "seed": cfg.seeds[0],
             "n_embd": cfg.wide_width},
        )
        for d, beta in (cfg.problems if cfg.wide_width else [])
    ]  # fmt: skip
    if cfg.by_curve:
        for d, beta in cfg.problems:
            for seed in cfg.seeds:
                specs += [s for s in _data_specs(cfg, seed, base) if s.params["d"] == d
                          and s.params["beta"] == beta]  # fmt: skip
            specs += [s for s in wide if s.params["d"] == d and s.params["beta"] == beta]
        return specs + online + _model_specs(cfg, base)
    if cfg.schedule == "fixed":
        for i, seed in enumerate(cfg.seeds):
            specs += _data_specs(cfg, seed, base)
            if i == min(1, len(cfg.seeds) - 1):
                specs += online + wide
        return specs + _model_specs(cfg, base)
    for n in sorted(cfg.n_values):
        for d, beta in cfg.problems:
            specs += [_data_spec(cfg, base, d, beta, n, seed) for seed in cfg.seeds]
    return specs + _model_specs(cfg, base) + wide + online


def _model_specs(cfg: ManifoldSweepConfig, base: dict) -> list[RunSpec]:
    n_big = max(cfg.n_values)
    specs = []
    for width in sorted(cfg.model_widths):
        for d in cfg.model_dims:
            for seed in cfg.seeds:
                params = {"task": "model", **base, "d": d, "beta": cfg.betas[0], "n": n_big}
                name = f"model_d{d}_w{width}_s{seed}"
                specs.append(RunSpec(name, {**params, "seed": seed, "n_embd": width}))
    return specs


def plan_words(cfg: ManifoldSweepConfig) -> str:
    """One line naming what the sweep runs, said before it starts: its data curves, with
    those from `extra_problems` marked (a preset's extra pairs stay under `--dims`/`--betas`
    while their d is chosen), and its runs by task."""
    params = [s.params for s in specs_for(cfg)]
    runs = ", ".join(f"{task} {k}" for task, k in Counter(p["task"] for p in params).items())
    chosen = {(d, b) for d in cfg.dims for b in cfg.betas}
    curves = sorted({(p["d"], p["beta"]) for p in params if p["task"] == "data"})
    named = [f"d={d} β={b:g}{'' if (d, b) in chosen else ' (extra_problems)'}" for d, b in curves]
    return f"curves {', '.join(named) or 'none'}; runs: {runs}"
