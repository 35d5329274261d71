"""The convergence check: a budget-independent schedule, exact continuation under a stricter
stopping rule (bit for bit against fresh runs), the cooldown, a check that fires on runs
stopped too early, and the verdict."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from test_sweeps_data import make_store

from scalelab.errors import ConfigError
from scalelab.io import read_json
from scalelab.laws.fit.power_law import fit_power_law
from scalelab.lm.config import lr_at
from scalelab.lm.model import GPTConfig
from scalelab.lm.stopping import StopRule
from scalelab.lm.train import TrainConfig, train
from scalelab.runs.sweep import RunSpec
from scalelab.sweeps import check as sweep_check
from scalelab.sweeps.schedule import Schedule
from scalelab.sweeps.worker import LMRun, lm_run

MODEL = GPTConfig(block_size=32, n_layer=1, n_head=1, n_embd=32, vocab_size=384)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("conv") / "store")


def _cfg(**kw: object) -> TrainConfig:
    base = dict(batch_size=4, lr=3e-3, min_lr=3e-4, warmup_steps=4, decay_steps=40)
    base.update(eval_interval=10, eval_batches=2, test_tokens=512, seed=1)
    rule = {k: kw.pop(k) for k in ("patience", "min_delta_sd") if k in kw}
    return TrainConfig(**{**base, **kw}, stop=StopRule(**rule))


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


def _rule(**kw: object) -> sweep_check.CheckConfig:
    """The check with `kw` over the one-sided defaults these tests read: the largest run alone,
    no wider model."""
    return sweep_check.CheckConfig(**{"largest": 1, "smallest": 0, "width_factor": None, **kw})


def _spec(name: str, cfg: TrainConfig, store: Path) -> LMRun:
    return lm_run(name, MODEL, cfg, store, train_tokens=cfg.train_tokens)


def _train(spec: LMRun, store: Path, where: Path) -> dict:
    cfg = spec.train
    return train(MODEL, cfg, store, where / "runs" / spec.name, quiet=True)


def test_budget_free_schedules() -> None:
    assert sweep_check.budget_free(_cfg(max_steps=60))  # fixed decay length
    assert sweep_check.budget_free(_cfg(decay_steps=None, min_lr=3e-3))  # flat after warm-up
    assert not sweep_check.budget_free(_cfg(decay_steps=None))  # cosine over the budget
    assert not sweep_check.budget_free(_cfg(token_budget=1000))


def test_stricter_continuation_equals_a_fresh_stricter_run(store: Path, tmp_path: Path) -> None:
    """The proof in code: the check continues a run stopped by patience (and one ended at its
    budget) from its last checkpoint, and gets what a fresh run with the stricter rule and
    budget gets, bit for bit."""
    sweep, check = tmp_path / "sweep", tmp_path / "check"
    stops = _cfg(max_steps=400, patience=2, train_tokens=1_000, lr=1e-2)  # overfits: patience
    capped = _cfg(max_steps=30, train_tokens=20_000)  # ends at its budget
    specs = [_spec("a-stops", stops, store), _spec("b-capped", capped, store)]
    for spec in specs:
        _train(spec, store, sweep)
    first = read_json(sweep / "runs" / "a-stops" / "result.json")
    assert first["stop_reason"] == "patience" and first["steps"] < 400
    rows = sweep_check.run_check(sweep, check, specs, _rule(largest=2))
    stricter = [r for r in rows if r["perturbation"] == "stricter"]
    assert [r["how"] for r in stricter] == ["continued", "continued"]
    for spec, row in zip(specs, stricter, strict=True):
        fresh_spec = sweep_check.stricter(spec)
        fresh = _train(fresh_spec, store, tmp_path / "fresh")
        assert fresh_spec.train.stop.patience in (6, None)
        assert row["test_loss_nats_perturbed"] == fresh.test_loss_nats
        assert row["steps_perturbed"] == fresh.steps
    assert stricter[1]["steps_perturbed"] == 90  # the capped run: 3x its budget
    assert stricter[0]["steps_perturbed"] > stricter[0]["steps"]  # patience 6 went on


def test_cooldown_starts_from_the_tested_weights_and_ends_at_zero(
    store: Path, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep"
    spec = _spec("r", _cfg(max_steps=60, train_tokens=20_000), store)
    base = _train(spec, store, sweep)
    cool = sweep_check.cooldown(spec, sweep / "runs" / "r", fraction=0.2)
    t = cool.train
    best = base.best_step
    assert t.max_steps == max(2, -(-best // 5 // 10)) * 10 and t.warmup_steps == 0
    got = _train(cool, store, tmp_path / "cool")
    rows = [
        json.loads(x) for x in (tmp_path / "cool/runs/r/metrics.jsonl").read_text().splitlines()
    ]
    assert rows[-1]["lr"] < 0.05 * base.train.lr  # decayed towards zero
    # it starts where the run's tested weights are, far below a fresh model's loss
    fresh = _train(
        dataclasses.replace(cool.with_train(t.replace(init_from=None)), name="f"),
        store,
        tmp_path / "fresh",
    )
    assert rows[0]["val_loss_nats"] < base.best_val_loss_nats + 0.3
    assert got.test_loss_nats < fresh.test_loss_nats - 0.3


def test_check_fires_on_runs_stopped_too_early(store: Path, tmp_path: Path) -> None:
    """Built to be under-trained: every run stops at its second validation (an improvement
    must beat 50 SEs), so all sizes reach the same loss and the slope is flat. The stricter
    rule trains the largest runs on, and the check must say BUDGET-LIMITED."""
    sweep, check = tmp_path / "sweep", tmp_path / "check"
    sizes = [2_000, 6_000, 20_000]
    hasty = dict(max_steps=300, patience=1, min_delta_sd=50.0, lr=3e-3, min_lr=3e-3)
    specs = [_spec(f"n{n}", _cfg(train_tokens=n, **hasty), store) for n in sizes]
    results = [_train(s, store, sweep) for s in specs]
    assert [r.steps for r in results] == [20, 20, 20]
    rows = sweep_check.run_check(sweep, check, specs, _rule(largest=2, factor=10))
    x = np.array(sizes, float)
    y = np.array([r.test_loss_nats for r in results])
    perturbed = {}
    for p in sweep_check.PERTURBATIONS:
        y_p = y.copy()
        for r in rows:
            if r["perturbation"] == p:
                y_p[[s.name for s in specs].index(r["run"])] = r["test_loss_nats_perturbed"]
        perturbed[p] = fit_power_law(x, y_p, form="power", n_boot=0).exponent
    exponent = fit_power_law(x, y, form="power", n_boot=0).exponent
    v = sweep_check.verdict(exponent, perturbed, rows)
    assert v["budget_limited"] and "BUDGET-LIMITED" in v["text"], v["text"]
    assert v["shifts"]["stricter"] > 0.01


def test_verdict_by_hand() -> None:
    rows = [{"run": "x", "perturbation": "stricter", "stop_reason_perturbed": "patience"}]
    v = sweep_check.verdict(0.10, {"stricter": 0.105, "cooldown": 0.125, "seed": 0.095}, rows)
    assert v["labels"] == ["BUDGET-LIMITED"] and not v["protocol_limited"]
    assert v["systematic_interval"] == pytest.approx([0.095, 0.125])
    assert v["shifts"] == pytest.approx({"stricter": 0.005, "cooldown": 0.025, "seed": -0.005})
    v = sweep_check.verdict(0.10, {"stricter": 0.104, "cooldown": 0.108, "seed": 0.085}, rows)
    assert v["labels"] == ["PROTOCOL-LIMITED"] and "another seed" in v["text"]
    v = sweep_check.verdict(0.10, {"stricter": 0.104, "cooldown": 0.092, "seed": 0.101}, rows)
    assert v["labels"] == [] and v["text"].startswith("Converged within the check")
    assert v["systematic_interval"] == pytest.approx([0.092, 0.104])
    capped = [{"run": "x", "perturbation": "stricter", "stop_reason_perturbed": "max_steps"}]
    v = sweep_check.verdict(0.10, {"stricter": 0.10, "cooldown": 0.10, "seed": 0.10}, capped)
    assert "ended at their budget" in v["text"] and v["budget_ended"] == ["x"]
    assert "Not checked" not in v["text"] and v["unchecked_budget_ended"] == []
    v = sweep_check.verdict(0.10, {"stricter": 0.10}, rows, unchecked_ended=["a", "b"])
    assert v["labels"] == [] and v["unchecked_budget_ended"] == ["a", "b"]
    assert "Not checked: 2 run(s) ended at their step budget" in v["text"]
    assert "(a, b)" in v["text"]


def test_stricter_rule_waits_three_times_longer_after_the_best() -> None:
    """The stricter rule's patience fraction makes the wait after the best validation 3x
    longer (not the fraction 3x larger, which would wait forever from f = 1/3 on)."""
    from scalelab.lm.stopping import replay

    val = [10.0 - 0.01 * i for i in range(60)] + [9.5] * 400  # best at validation 59
    rule = StopRule(patience=4, patience_fraction=0.25)
    spec = lm_run("r", MODEL, TrainConfig(stop=rule), Path("."))
    strict = sweep_check.stricter(spec).train.stop
    assert strict.patience == 12 and strict.patience_fraction == pytest.approx(0.5)
    stop, best = replay(val, rule)
    stop_strict, best_strict = replay(val, StopRule(12, strict.patience_fraction))
    assert best == best_strict == 59
    wait, wait_strict = stop - best, stop_strict - best_strict
    assert (wait, wait_strict) == (20, 60)  # stops at validations 79 and 119


def _lone_run(store: Path, where: Path, width: int, tokens: int) -> list[LMRun]:
    """One trained run of a width-`width` model on `tokens` tokens (stopped by patience)."""
    model = GPTConfig(block_size=32, n_layer=1, n_head=1, n_embd=width, vocab_size=384)
    cfg = _cfg(train_tokens=tokens, max_steps=400, patience=3, min_lr=3e-3, decay_steps=None)
    spec = lm_run(f"n{tokens}", model, cfg, store, train_tokens=tokens)
    train(model, cfg, store, where / "runs" / spec.name, quiet=True)
    return [spec]


def test_model_limited_fires_on_a_too_small_model_and_not_on_a_data_limited_one(
    store: Path, tmp_path: Path
) -> None:
    """A 4-wide model on 20,000 tokens is held back by its size: a 4x wider one gains about a
    nat, far above another seed's change. A 48-wide model on 1,500 tokens is held back by the
    data: the wider model does no better (it over-fits sooner)."""
    small = _lone_run(store, tmp_path / "small", width=4, tokens=20_000)
    rows = sweep_check.run_check(tmp_path / "small", tmp_path / "c1", small, _rule(width_factor=4))
    fired = sweep_check.model_limited(rows)
    assert fired["limited"] and fired["gain_nats"] > 5 * fired["noise_nats"], fired
    v = sweep_check.verdict(0.1, {"stricter": 0.1}, rows)
    assert v["model_limited"] and "MODEL-LIMITED" in v["labels"] and "wider model" in v["text"]
    big = _lone_run(store, tmp_path / "big", width=48, tokens=1_500)
    rows = sweep_check.run_check(tmp_path / "big", tmp_path / "c2", big, _rule(width_factor=4))
    quiet = sweep_check.model_limited(rows)
    assert not quiet["limited"] and quiet["gain_nats"] < quiet["noise_nats"], quiet
    v = sweep_check.verdict(0.1, {"stricter": 0.1}, rows)
    assert not v["model_limited"] and "MODEL-LIMITED" not in v["labels"]
    assert ("Not model-limited" in v["text"]) != quiet["wide_unconverged"]  # worse: no reading
    wide = sweep_check.wider(big[0], 4).model
    assert (wide.n_embd, wide.n_head) == (192, 4)  # heads of the same width


def test_model_limited_by_hand() -> None:
    """The noise is the larger of another seed's change and 2 SE of the test loss."""
    base = {"run": "r", "test_loss_nats": 3.0, "test_loss_se_nats": 0.01}
    seed = {**base, "perturbation": "seed", "test_loss_nats_perturbed": 3.02}
    for wide_loss, limited in ((2.97, True), (2.99, False)):
        wide = {**base, "perturbation": "wider", "test_loss_nats_perturbed": wide_loss}
        got = sweep_check.model_limited([seed, wide])
        assert got["noise_nats"] == pytest.approx(0.02) and got["limited"] is limited
    wide = {**base, "perturbation": "wider", "test_loss_nats_perturbed": 2.97}
    assert sweep_check.model_limited([wide])["noise_nats"] == pytest.approx(0.02)  # 2 SE
    assert sweep_check.model_limited([seed]) is None


def test_a_wider_model_that_trains_worse_is_no_reading() -> None:
    """Issue 52: a wider model 0.2987 nats worse against a noise of 0.0225 is no agreement
    (its run did not converge, or it over-fits sooner): the check says so instead of calling
    the change 'within the noise'."""
    base = {"run": "r", "test_loss_nats": 3.0, "test_loss_se_nats": 0.005}
    seed = {**base, "perturbation": "seed", "test_loss_nats_perturbed": 3.0225}
    wide = {**base, "perturbation": "wider", "test_loss_nats_perturbed": 3.2987}
    rows = [
        {**r, "key": r["perturbation"], "steps": 1, "stop_reason": "patience"} for r in (seed, wide)
    ]
    got = sweep_check.model_limited(rows)
    assert got["wide_unconverged"] and not got["limited"]
    text = sweep_check.verdict(0.1, {"seed": 0.1}, rows)["text"]
    assert "within the noise" not in text and "Not model-limited" not in text
    assert "the wider model trained worse, by +0.2987 nats, more than the noise 0.0225" in text
    assert "No sign of a model limit, but no agreement either" in text
    near = {**wide, "test_loss_nats_perturbed": 3.01}  # worse, but within the noise
    assert "Not model-limited" in sweep_check.verdict(0.1, {"seed": 0.1}, [seed, near])["text"]


def test_both_ends_are_perturbed(store: Path, tmp_path: Path) -> None:
    """With `smallest`, the smallest run gets the stricter and seed perturbations, named apart
    from the largest's; a run among the largest is not perturbed twice."""
    sweep = tmp_path / "sweep"
    specs = [
        _spec(f"n{n}", _cfg(train_tokens=n, max_steps=20, patience=2), store)
        for n in (2_000, 6_000)
    ]
    for s in specs:
        _train(s, store, sweep)
    rows = sweep_check.plan(sweep, specs, _rule(smallest=1))
    assert [(r["run"], r["key"]) for r in rows] == [
        ("n6000", "stricter"), ("n6000", "cooldown"), ("n6000", "seed"),
        ("n2000", "stricter (smallest)"), ("n2000", "seed (smallest)"),
    ]  # fmt: skip
    assert len(sweep_check.plan(sweep, specs, _rule(largest=2, smallest=1))) == 6  # no repeats
    with pytest.raises(ConfigError, match="smallest runs must be 0 to 2"):
        sweep_check.plan(sweep, specs, _rule(smallest=3))


def test_refits_stop_below_a_model_limited_largest_run(tmp_path: Path, monkeypatch) -> None:
    """When the wider model beats the largest run, the check's exponent and its shifts are
    fitted below that run, as the fit range is; when it does not, over every run."""
    import pandas as pd

    from scalelab.sweeps.result import SweepResult

    sizes, loss = [100, 200, 400, 800], [4.0, 3.6, 3.3, 3.25]
    names = [f"n{n}" for n in sizes]
    table = pd.DataFrame({"run": names, "train_tokens": sizes, "test_loss_nats": loss,
                          "stop_reason": "patience"})  # fmt: skip
    sweep = SweepResult(tmp_path, tuple(RunSpec(n) for n in names), table, "train_tokens")
    top = {"run": "n800", "test_loss_nats": 3.25, "test_loss_se_nats": 0.001, "end": "largest"}
    small = {"run": "n100", "test_loss_nats": 4.0, "test_loss_se_nats": 0.001}
    for wide_loss, limited in ((3.0, True), (3.25, False)):
        rows = [
            {**top, "perturbation": "wider", "key": "wider", "test_loss_nats_perturbed": wide_loss},
            {**top, "perturbation": "seed", "key": "seed", "test_loss_nats_perturbed": 3.2},
            {**small, "perturbation": "seed", "key": "seed (smallest)",
             "test_loss_nats_perturbed": 3.9},
        ]  # fmt: skip
        monkeypatch.setattr(sweep_check, "run_check", lambda *a, rows=rows, **k: rows)
        v = sweep_check.check_sweep(sweep, tmp_path / "check", _rule(smallest=1))
        keep = slice(0, 3) if limited else slice(0, 4)
        want = fit_power_law(sizes[keep], loss[keep], n_boot=0).exponent
        assert v["model_limited"] is limited and v["exponent"] == pytest.approx(want)
        moved = fit_power_law(sizes[keep], [3.9, *loss[1:]][keep], n_boot=0).exponent
        assert v["perturbed"]["seed (smallest)"] == pytest.approx(moved)
        assert (v["shifts"]["seed"] == 0.0) is limited  # the dropped run's seed moves nothing
