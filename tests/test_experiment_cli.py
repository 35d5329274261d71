"""A new experiment is 2 files: its own module (config, run, figure, tables, how its result is
read back, and an `EXPERIMENT` record) and one line in the registry
(`induction.experiments.EXPERIMENTS`, which `cli.induction` lists). Here a toy experiment,
written as that module into a temporary folder and given that one line, gets a listed command
with the config's options, --preset quick, --config, --json and its figure, and a section in
`scalelab report OUT`: its name, help line, figure and table; a real one (formation) too."""

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
from scalelab.runs.experiment import Experiment, save_figure, saved_json


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
    load=saved_json("toy.json", "rows"),
)
'''


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy module on the path and its one registry line (HEADS, the lazy listing, is
    made from EXPERIMENTS when `cli.induction` is imported: the same entry here)."""
    (tmp_path / "toy_experiment.py").write_text(TOY)
    # the same toy, its result not read back (no `load`): the report shows its saved PNG
    (tmp_path / "toy_unread.py").write_text(
        TOY.replace('    load=saved_json("toy.json", "rows"),\n', "")
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    line = ("toy_experiment", "The squares of the first k numbers: a toy experiment.")
    monkeypatch.setitem(EXPERIMENTS, "toy", line)
    monkeypatch.setitem(HEADS, "toy", ("experiment", line[1]))
    unread = ("toy_unread", "The same squares, not read back.")
    monkeypatch.setitem(EXPERIMENTS, "toy-unread", unread)
    monkeypatch.setitem(HEADS, "toy-unread", ("experiment", unread[1]))


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


def _report(run_cli: Callable, out: Path) -> str:
    made = run_cli("report", out, "--json")
    assert made.returncode == 0, made.stderr
    paths = json.loads(made.stdout)
    assert Path(paths["html"]).is_file()
    return Path(paths["markdown"]).read_text()


@pytest.mark.usefixtures("toy")
def test_a_registered_experiment_gets_a_report_section(run_cli: Callable, tmp_path: Path) -> None:
    """The command leaves its marker; `scalelab report OUT` then draws the experiment's
    section: name, help line, its figure redrawn from the result `load` reads back, the table
    its command prints, and the config the folder saved."""
    out = tmp_path / "out"
    assert run_cli("induction", "toy", "--out", out, "--k", "4", "--scale", "3").returncode == 0
    marker = json.loads((out / "experiment.json").read_text())
    assert marker["kind"] == "experiment" and marker["experiment"] == "toy"
    assert marker["config"] == {"k": 4, "scale": 3.0}

    md = _report(run_cli, out)
    assert "# scalelab report: toy experiment in" in md
    assert "## Experiment: scalelab induction toy" in md
    assert "The squares of the first k numbers: a toy experiment." in md
    assert "### toy, k = 4" in md  # the table's title, then its rows: 3·i² for i < 4
    for i in range(4):
        assert f"| {i} | {3 * i * i:g} |" in md
    assert "toy.png. Drawn by `scalelab induction toy` from its result." in md
    assert (out / "report" / "report_files" / "figure1.png").read_bytes()[:4] == b"\x89PNG"
    assert '"scale": 3.0' in md  # the config, as the folder saved it

    # without `load`: the folder's own PNG, and no table
    plain = tmp_path / "plain"
    assert run_cli("induction", "toy-unread", "--out", plain, "--k", "2").returncode == 0
    md = _report(run_cli, plain)
    assert "toy.png. As `scalelab induction toy-unread` saved it." in md
    assert "is not read back from its folder" in md and "| i | square |" not in md

    # one folder, one experiment: another one's command refuses it before any work
    other = run_cli("induction", "toy-unread", "--out", out, "--k", "4", "--scale", "3")
    assert other.returncode == 2 and "holds the output of 'toy'" in other.stderr


def test_a_real_experiment_gets_its_report_section(run_cli: Callable, tmp_path: Path) -> None:
    """The fastest of the registered experiments (formation, quick and shortened): its
    report holds the numbers of the table its command printed, and its figure."""
    out = tmp_path / "formation"
    args = ("--preset", "quick", "--max-steps", "20", "--eval-interval", "10")
    printed = run_cli("induction", "formation", "--out", out, *args, "--json")
    assert printed.returncode == 0, printed.stderr
    rows = json.loads(printed.stdout)  # the rows of the command's table

    md = _report(run_cli, out)
    assert "## Experiment: scalelab induction formation" in md
    assert EXPERIMENTS["formation"][1] in md
    assert "formation.png. Drawn by `scalelab induction formation` from its result." in md
    assert (out / "report" / "report_files" / "figure1.png").is_file()
    assert "| n_layer | seed | width | params | formed_at |" in md
    for row in rows:
        cells = (row["n_layer"], row["seed"], row["width"], row["params"])
        assert "| " + " | ".join(map(str, cells)) + " |" in md
        assert f"{row['final_induction_max']:.4g}" in md
