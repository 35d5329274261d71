"""Many regressors trained as one batched model end where each would alone, and the noise
split recovers known variance components."""

import numpy as np
import pytest
import torch

from scalelab.errors import InputError
from scalelab.manifold.batched import Member, fit_members, fit_members_schedule
from scalelab.manifold.config import FitConfig, RegressorConfig, ScheduleConfig
from scalelab.manifold.model import TransformerRegressor
from scalelab.manifold.noise import noise_split
from scalelab.manifold.train import epoch_batches, fit_regressor, fit_schedule

CFG = RegressorConfig(D=6, n_layer=2, n_head=2, n_embd=8, ffn_width=16, attention="relu")
E = 3


def _members(n: int = 96) -> list[Member]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(E):  # a different sample per member: the noise split's design
        x, xv = rng.standard_normal((n, 6)), rng.standard_normal((40, 6))
        y = np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(n)
        out.append(Member(x, y, xv, np.sin(2 * xv[:, 0])))
    return out


def _models() -> list[TransformerRegressor]:
    models = []
    for e in range(E):
        torch.manual_seed(e)
        models.append(TransformerRegressor(CFG))
    return models


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> float:
    return max(
        float((p - q).detach().abs().max())
        for p, q in zip(a.parameters(), b.parameters(), strict=True)
    )


def test_batched_patience_training_equals_one_at_a_time() -> None:
    """The rule with LR halving and stopping by patience: same stops, losses and weights."""
    cfg = FitConfig(lr=5e-3, batch_size=32, max_steps=400, min_eval_steps=6, patience=5,
                    lr_patience=2)  # fmt: skip
    members = _members()
    alone = []
    for e, model in enumerate(_models()):
        m = members[e]
        gen = torch.Generator().manual_seed(10 + e)
        summary = fit_regressor(model, m.x_train, m.y_train, m.x_val, m.y_val, cfg, generator=gen)
        alone.append((summary, model))
    together = _models()
    gens = [torch.Generator().manual_seed(10 + e) for e in range(E)]
    summaries = fit_members(together, members, cfg, gens)
    reasons = set()
    for (one, model), many, other in zip(alone, summaries, together, strict=True):
        for key in ("steps", "best_step", "stop_reason"):
            assert one[key] == many[key]
        assert many["val_mse"] == pytest.approx(one["val_mse"], rel=1e-4)
        assert many["train_mse"] == pytest.approx(one["train_mse"], rel=1e-4)
        assert _same_weights(model, other) < 1e-5
        reasons.add(one["stop_reason"])
    assert "patience" in reasons  # the stopping path itself was exercised


def test_batched_schedule_training_equals_one_at_a_time() -> None:
    cfg = ScheduleConfig(lr=5e-3, batch_size=32, max_steps=120, n_evals=6)
    members = _members()
    alone = []
    for e, model in enumerate(_models()):
        m = members[e]
        batches = epoch_batches(m.x_train, m.y_train, 32, torch.Generator().manual_seed(e))
        alone.append((fit_schedule(model, batches, m.x_val, m.y_val, cfg), model))
    together = _models()
    gens = [torch.Generator().manual_seed(e) for e in range(E)]
    summaries = fit_members_schedule(together, members, cfg, gens)
    for (one, model), many, other in zip(alone, summaries, together, strict=True):
        assert one["best_step"] == many["best_step"]
        assert many["val_mse"] == pytest.approx(one["val_mse"], rel=1e-4)
        assert _same_weights(model, other) < 1e-5


def test_noise_split_recovers_known_components() -> None:
    """log e = a_sample + b_init + ε with known sds: each part and the pooled sds come back."""
    rng = np.random.default_rng(3)
    s, i = 400, 300
    a, b, rest = 0.10, 0.20, 0.05
    y = a * rng.standard_normal((s, 1)) + b * rng.standard_normal((1, i))
    y = y + rest * rng.standard_normal((s, i))
    split = noise_split(y)
    assert split.data_component_sd == pytest.approx(a, rel=0.1)
    assert split.init_component_sd == pytest.approx(b, rel=0.1)
    assert split.rest_sd == pytest.approx(rest, rel=0.02)
    assert split.init_sd == pytest.approx(np.hypot(b, rest), rel=0.1)
    assert split.data_sd == pytest.approx(np.hypot(a, rest), rel=0.1)
    assert split.seed_sd == pytest.approx(np.sqrt(a * a + b * b + rest * rest), rel=0.1)


def test_noise_split_with_no_init_effect_puts_it_all_on_the_data() -> None:
    y = np.repeat(np.array([[0.0], [1.0], [2.0]]), 4, axis=1)  # inits change nothing
    split = noise_split(y)
    assert split.init_sd == 0.0 and split.init_component_sd == 0.0
    assert split.data_component_sd == pytest.approx(1.0)


def test_noise_split_refuses_a_design_without_replicates() -> None:
    with pytest.raises(InputError, match="2 samples x >= 2 inits"):
        noise_split(np.zeros((1, 5)))
