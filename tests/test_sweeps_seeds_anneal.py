"""Seeds per size and annealing within each run's horizon, on a real (tiny) data sweep: the
runs each option adds, their seeds and schedules, the table the regime test reads, resume,
and the cooldown rule against a hand computation."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from test_sweeps_data import make_store

from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig, TrainConfig
from scalelab.lm.stopping import StopRule
from scalelab.sweeps import data as data_sweep
from scalelab.sweeps.result import CONSTANT_LR
from scalelab.sweeps.schedule import Schedule, cooled

MODEL = GPTConfig(vocab_size=384, block_size=32, n_layer=1, n_head=1, n_embd=16)
TRAIN = TrainConfig(
    batch_size=4, eval_interval=10, eval_batches=2, test_tokens=1024, seed=3, dtype="float32"
)
SCHEDULE = Schedule(
    stop=StopRule(2, 0.25), max_epochs=4.0, min_steps=20, step_cap=60, cooldown_fraction=0.5
)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, data_sweep.DataSweepConfig]:
    root = tmp_path_factory.mktemp("seeds")
    store = make_store(root / "store")
    cfg = data_sweep.make_config(store, MODEL, TRAIN, SCHEDULE, [600, 1200], seeds=2)
    sweep = root / "sweep"
    data_sweep.data_sweep(sweep, cfg, quiet=True)
    return sweep, cfg


def test_seeds_are_runs_with_the_next_seeds_on_the_same_subset(swept) -> None:
    _, cfg = swept
    specs = data_sweep.specs(cfg)
    assert [s.name for s in specs[:2]] == ["n0000000600", "n0000000600-s1"]
    seeds = [s.train.seed for s in specs]
    assert seeds == [3, 4] * 2
    assert {s.params["train_tokens"] for s in specs[:2]} == {600}
    one = data_sweep.make_config(cfg.data_dir, MODEL, TRAIN, SCHEDULE, [600, 1200])
    assert one.to_dict()["seeds"] == 1  # saved; a folder from before seeds reads as 1 (migrate)


def test_the_annealed_table_holds_every_run_once_with_its_cooldown(swept) -> None:
    sweep, cfg = swept
    table = pd.read_csv(sweep / "runs.csv")
    assert list(table["run"]) == [s.name for s in data_sweep.specs(cfg)]
    for row in table.itertuples():
        main = json.loads((sweep / "runs" / row.run / "result.json").read_text())
        cool = json.loads((sweep / "runs" / f"{row.run}-cool" / "result.json").read_text())
        assert getattr(row, CONSTANT_LR) == pytest.approx(main["test_loss_nats"])
        assert row.test_loss_nats == pytest.approx(cool["test_loss_nats"])
        # the cooldown: from the best step, half of the steps to it, whole intervals, >= 2
        want = max(2, math.ceil(0.5 * main["best_step"] / 10)) * 10
        assert cool["steps"] == want
        assert cool["train"]["init_from"].endswith(row.run)
        assert cool["train"]["min_lr"] == 0.0 and cool["train"]["patience"] is None


def test_a_killed_annealed_sweep_resumes_to_the_same_table(swept, tmp_path: Path) -> None:
    sweep, cfg = swept
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    shutil.rmtree(copy / "runs" / "n0000001200-s1-cool")  # its cooldown never ran
    (copy / "runs.csv").unlink()
    again = data_sweep.data_sweep(copy, cfg, quiet=True)
    before = pd.read_csv(sweep / "runs.csv")
    pd.testing.assert_series_equal(again["test_loss_nats"], before["test_loss_nats"])


def test_the_cooldown_rule_and_its_refusals(tmp_path: Path) -> None:
    t = TrainConfig(eval_interval=25, lr=2e-3, min_lr=2e-3, stop=StopRule(4))
    c = cooled(t, 1000, tmp_path, 0.2)
    assert c.max_steps == 200 and c.min_lr == 0.0 and c.warmup_steps == 0
    assert cooled(t, 10, tmp_path, 0.2).max_steps == 50  # at least two validation intervals
    with pytest.raises(ConfigError, match="cooldown_fraction"):
        Schedule(cooldown_fraction=0.0)
    with pytest.raises(ConfigError, match="converge"):
        Schedule(policy="epochs", cooldown_fraction=0.2)


def test_the_model_sweep_refuses_a_cooldown(swept, capsys: pytest.CaptureFixture[str]) -> None:
    from test_sweeps_data import cli

    _, cfg = swept
    args = ["sweep", "model", "--data", cfg.data_dir, "--out", "never-made", "--models"]
    code, _, err = cli([*args, "1x8,1x16,1x32", "--cooldown-fraction", "0.2"], capsys)
    assert code == 2 and "--cooldown-fraction 0.2" in err and not Path("never-made").exists()
