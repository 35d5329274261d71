"""A new experiment is 2 files: its own module (config, run, figure, tables and an
`EXPERIMENT` record) and one line in the registry (`cli.induction.EXPERIMENTS`). Here a toy
experiment, written as that module into a temporary folder and given that one line, gets a
listed command with the config's options, --preset quick, --config, --json and its
figure."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from scalelab.cli.induction import EXPERIMENTS, HEADS

TOY = '''
"""A toy experiment: k squares into a folder."""

import dataclasses
from pathlib import Path

from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json
from scalelab.runs.experiment import Experiment, save_figure


@dataclasses.dataclass(frozen=True)
class ToyConfig(Config):
    k: int = option(4, "How many squares.")
    scale: float = option(1.0, "Multiplier of each square.")

    def validate(self):
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")

    def quick(self):
        return self.replace(k=2)


def run_toy(cfg, out):
    rows = [{"i": i, "square": cfg.scale * i * i} for i in range(cfg.k)]
    atomic_write_json(Path(out) / "toy.json", {"config": cfg.to_dict(), "rows": rows})
    return rows


def write_toy_figure(rows, out):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.subplots().plot([r["i"] for r in rows], [r["square"] for r in rows])
    return save_figure(fig, Path(out) / "toy.png")


EXPERIMENT = Experiment(
    config=ToyConfig,
    run=run_toy,
    draw=write_toy_figure,
    tables=lambda rows, cfg, out: [(f"toy, k = {cfg.k}", rows)],
    out_help="Folder for toy.json and toy.png.",
    quick="two squares",
)
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy module on the path and its one registry line (HEADS, the lazy listing, is
    made from EXPERIMENTS when `cli.induction` is imported: the same entry here)."""
    (tmp_path / "toy_experiment.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    line = ("toy_experiment", "The squares of the first k numbers: a toy experiment.")
    monkeypatch.setitem(EXPERIMENTS, "toy", line)
    monkeypatch.setitem(HEADS, "toy", ("experiment", line[1]))


@pytest.mark.usefixtures("toy")
def test_a_registered_experiment_gets_a_command(run_cli: Callable, tmp_path: Path) -> None:
    listed = run_cli("induction", "--help")
    assert "toy" in listed.stdout and "The squares of the first k numbers" in listed.stdout

    helped = run_cli("induction", "toy", "--help")
    for text in ("--out", "Folder for toy.json", "--k", "How many squares.", "--scale"):
        assert text in helped.stdout
    assert "--preset" in helped.stdout and "quick: two squares" in helped.stdout
    assert "--config" in helped.stdout and "--json" in helped.stdout
    assert "--quiet" not in helped.stdout  # the toy has no progress to silence

    out = tmp_path / "out"
    res = run_cli("induction", "toy", "--out", out, "--k", "3", "--scale", "2", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [{"i": i, "square": 2.0 * i * i} for i in range(3)]
    assert (out / "toy.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "toy.json").read_text())["config"] == {"k": 3, "scale": 2.0}

    table = run_cli("induction", "toy", "--out", tmp_path / "q", "--preset", "quick")
    assert table.returncode == 0 and "toy, k = 2" in table.stdout

    settings = tmp_path / "toy.toml"
    settings.write_text("k = 5\n")
    filed = run_cli("induction", "toy", "--out", tmp_path / "f", "--config", settings, "--json")
    assert len(json.loads(filed.stdout)) == 5

    refused = run_cli("induction", "toy", "--out", tmp_path / "r", "--k", "0")
    assert refused.returncode == 2 and "--k 0: k must be >= 1" in refused.stderr
    a_file = tmp_path / "toy.toml"
    not_a_folder = run_cli("induction", "toy", "--out", a_file)
    assert not_a_folder.returncode == 2 and "give a folder path" in not_a_folder.stderr


def test_every_listed_experiment_has_its_record() -> None:
    """Each registry line names a module whose `EXPERIMENT` the command is made from."""
    import importlib

    from scalelab.runs.experiment import Experiment

    for name, (module, _) in EXPERIMENTS.items():
        assert isinstance(importlib.import_module(module).EXPERIMENT, Experiment), name
        assert HEADS[name] == ("experiment", EXPERIMENTS[name][1])
