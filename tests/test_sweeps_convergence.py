"""The convergence check: a budget-independent schedule, exact replay and continuation
(compared bit for bit with fresh runs given the longer budget), and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweeps_data import make_store

from scalelab.errors import ConfigError
from scalelab.io import read_json
from scalelab.lm.config import lr_at
from scalelab.lm.model import GPTConfig
from scalelab.lm.train import TrainConfig, train
from scalelab.runs.sweep import RunSpec
from scalelab.sweeps import convergence
from scalelab.sweeps.schedule import Schedule
from scalelab.sweeps.worker import run_params

MODEL = GPTConfig(block_size=32, n_layer=1, n_head=1, n_embd=32, vocab_size=384)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("conv") / "store")


def _cfg(**kw: object) -> TrainConfig:
    base = dict(batch_size=4, lr=3e-3, min_lr=3e-4, warmup_steps=4, decay_steps=40)
    base.update(eval_interval=10, eval_batches=2, test_tokens=512, seed=1)
    return TrainConfig(**{**base, **kw})


def test_fixed_decay_schedule_ignores_the_budget() -> None:
    a, b = _cfg(max_steps=60), _cfg(max_steps=120)
    assert [lr_at(s, a, 60) for s in range(60)] == [lr_at(s, b, 120) for s in range(60)]
    assert lr_at(39, a, 60) == pytest.approx(3e-4) and lr_at(100, b, 120) == pytest.approx(3e-4)
    budget = TrainConfig(lr=3e-3, min_lr=3e-4, warmup_steps=4)  # cosine over the budget
    assert lr_at(30, budget, 60) != lr_at(30, budget, 120)


def test_schedule_sets_a_budget_independent_decay() -> None:
    sched = Schedule(max_epochs=20, decay_epochs=4, min_steps=10, step_cap=100)
    base = TrainConfig(batch_size=4, warmup_steps=50)
    small = sched.train_config(base, 640, 32)  # 5 steps per pass
    assert (small.max_steps, small.decay_steps, small.warmup_steps) == (100, 20, 2)  # eval 100
    big = sched.train_config(base, 6400, 32)  # budget capped at 100; decay 200 -> 100
    assert (big.max_steps, big.decay_steps) == (100, 100)
    assert Schedule().train_config(base, 640, 32).decay_steps is None
    with pytest.raises(ConfigError, match="decay_epochs"):
        Schedule(decay_epochs=0)


def test_actions() -> None:
    fixed = _cfg(max_steps=60).to_dict()
    assert convergence.action_for(fixed, {"steps": 30, "stop_reason": "patience"}) == "replay"
    assert convergence.action_for(fixed, {"steps": 60, "stop_reason": "max_steps"}) == "continue"
    odd = _cfg(max_steps=65).to_dict()  # last checkpoint not a regular validation
    assert convergence.action_for(odd, {"steps": 65, "stop_reason": "max_steps"}) == "rerun"
    cosine = _cfg(max_steps=60, decay_steps=None).to_dict()
    assert convergence.action_for(cosine, {"steps": 30, "stop_reason": "patience"}) == "rerun"


def _spec(name: str, cfg: TrainConfig, store: Path) -> RunSpec:
    return RunSpec(name, run_params(MODEL, cfg, store, train_tokens=cfg.train_tokens))


def test_replay_and_continuation_equal_fresh_longer_runs(store: Path, tmp_path: Path) -> None:
    """The proof in code: the longer-budget results the check uses are those of fresh runs
    with twice the budget, bit for bit."""
    sweep, check = tmp_path / "sweep", tmp_path / "check"
    capped = _cfg(max_steps=30, train_tokens=20_000)  # ends at its budget
    stops = _cfg(max_steps=400, patience=2, train_tokens=1_000, lr=1e-2)  # overfits: patience
    specs = [_spec("a-stops", stops, store), _spec("b-capped", capped, store)]
    for s in specs:
        train(
            MODEL,
            TrainConfig.from_dict(s.params["train"]),
            store,
            sweep / "runs" / s.name,
            quiet=True,
        )
    first = read_json(sweep / "runs" / "a-stops" / "result.json")
    assert first["stop_reason"] == "patience" and first["steps"] < 400
    rows = convergence.run_check(sweep, check, specs, largest=2)
    assert [r["action"] for r in rows] == ["replay", "continue"]
    assert not (check / "runs" / "a-stops").exists()  # replayed: nothing trained
    for spec, row in zip(specs, rows, strict=True):
        cfg = TrainConfig.from_dict(spec.params["train"])
        fresh = train(
            MODEL,
            cfg.replace(max_steps=2 * cfg.max_steps),
            store,
            tmp_path / f"fresh-{spec.name}",
            quiet=True,
        )
        assert row["test_loss_nats_longer"] == fresh["test_loss_nats"]
        assert row["steps_longer"] == fresh["steps"]
    assert rows[1]["steps_longer"] == 60 and rows[1]["steps"] == 30


def test_verdict_flags_a_moving_exponent() -> None:
    """A synthetic sweep whose largest sizes were stopped early: L = 2 + 10 n^-0.3 observed
    with the two largest losses too high; the longer budget restores them."""
    import numpy as np

    from scalelab.laws.fit import fit_power_law

    n = np.geomspace(1e4, 1e6, 6)
    true = 10 * n**-0.3
    capped = true.copy()
    capped[-2:] *= 1.25
    short = fit_power_law(n, capped, form="power", n_boot=0).exponent
    long = fit_power_law(n, true, form="power", n_boot=0).exponent
    rows = [{"run": "x", "action": "continue"}]
    v = convergence.verdict(short, long, rows)
    assert v["budget_limited"] and v["shift"] > 0.01 and "BUDGET-LIMITED" in v["text"]
    assert long == pytest.approx(0.3, abs=1e-9)
    same = convergence.verdict(long, long + 0.005, rows)
    assert not same["budget_limited"] and "Converged" in same["text"]
    capped = [{"run": "x", "action": "continue", "stop_reason_longer": "max_steps"}]
    assert "still improving" in convergence.verdict(long, long, capped)["text"]
