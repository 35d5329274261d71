"""The `power` preset holds the design it declares (docs/benchmarks/scaling.md#a-protocol-
designed-by-power-and-what-it-costs-here): two decades above the transition, power >= 0.8 on
an exact power law at the design's noise, a model with at most 1.6 tokens per parameter at
the top, a step budget that holds the top run, and annealed runs. It fails when any of them
is changed away."""

from __future__ import annotations

import math

from scalelab.laws.regime.power import TARGET_POWER, regime_power
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.model import GPT
from scalelab.pipeline.config import PipelineConfig
from scalelab.sweeps.data import geometric_grid
from scalelab.sweeps.model import parse_model

TRANSITION = 25_000  # tokens: where the fit may start at BPE 320 (the jump study)
STEPS_PER_TOKEN = 0.081  # the committed cpu-regime runs at their top (design.py)


def test_the_power_preset_holds_its_design() -> None:
    cfg = PipelineConfig.from_preset("power")
    sizes = geometric_grid(cfg.min_tokens, cfg.max_tokens, cfg.points)
    assert cfg.vocab_size == 320 and sizes[0] >= TRANSITION
    assert math.log10(sizes[-1] / sizes[0]) >= 2.0 - 1e-9
    power = regime_power(sizes, cfg.seeds_per_size, 0.10, 0.0075, n_sim=100)
    assert power.power >= TARGET_POWER
    # one seed per size would not do at that noise: the seeds are part of the design
    assert regime_power(sizes, 1, 0.10, 0.0075, n_sim=100).power < TARGET_POWER
    model = parse_model(cfg.model, GPTConfig(vocab_size=cfg.vocab_size, block_size=128))[1]
    assert sizes[-1] / GPT(model).num_params(non_embedding=False) <= 1.6
    base = TrainConfig(eval_interval=cfg.train.eval_interval, batch_size=cfg.train.batch_size)
    top = cfg.schedule.train_config(base, sizes[-1], 128)
    assert top.max_steps >= STEPS_PER_TOKEN * sizes[-1]
    assert cfg.schedule.cooldown_fraction == 0.2
