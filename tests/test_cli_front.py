"""What a new user meets first: `--version`, the presets listed with their times in
`validate --help`, usage lines that name arguments plainly, and `id` saying why a result has
no standard error."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import scalelab
from scalelab.cli import load_command
from scalelab.pipeline.config import VALIDATE_PRESETS, PipelineConfig

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_package_version(run_cli: Callable) -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert result.stdout == f"scalelab {declared}\n" == f"scalelab {scalelab.__version__}\n"


def test_validate_help_lists_every_preset_with_its_time() -> None:
    (preset,) = [p for p in load_command("validate").params if p.name == "preset"]
    for name in VALIDATE_PRESETS:
        start = preset.help.index(f"{name} (")
        part = preset.help[start : preset.help.index(")", start)]
        assert "minutes" in part or "not yet run" in part, part


def test_quick_preset_is_small_and_leaves_the_others_alone() -> None:
    quick = PipelineConfig.from_preset("quick")
    assert (quick.min_tokens, quick.max_tokens, quick.points) == (500, 5_000, 5)
    assert quick.model_sweep.models == () and quick.check.smallest == 0
    assert quick.vocab_size == 512
    assert PipelineConfig.from_preset("cpu-hour").model == "4x96"  # unchanged


def test_usage_lines_name_arguments_plainly(run_cli: Callable) -> None:
    """The usage line a user reads, not an attribute: TABLE, never Typer's `{table}`, also in
    a subcommand; an optional argument in brackets, a repeatable one with '...'."""
    firsts = {
        cmd: run_cli(*cmd.split(), "--help").stdout.splitlines()[0]
        for cmd in ("fit", "id", "report", "corpus prepare", "validate-many", "forecast")
    }
    assert firsts["fit"].endswith("fit [OPTIONS] TABLE"), firsts
    assert firsts["id"].endswith("id [OPTIONS] PATH"), firsts
    assert firsts["report"].endswith("report [OPTIONS] SWEEP_DIR"), firsts
    assert firsts["corpus prepare"].endswith("corpus prepare [OPTIONS] CORPUS"), firsts
    assert firsts["validate-many"].endswith("[OPTIONS] [INPUTS]..."), firsts
    assert firsts["forecast"].endswith("[OPTIONS] INPUTS..."), firsts
    assert not any("{" in line for line in firsts.values())
    missing = run_cli("fit")
    assert missing.returncode == 2 and "Missing argument 'TABLE'" in missing.stderr


def test_id_on_one_batch_says_why_there_is_no_se(run_cli: Callable, tmp_path: Path) -> None:
    path = tmp_path / "points.npy"
    np.save(path, np.random.default_rng(0).normal(size=(100, 5)))
    refused = run_cli("id", path, "--quiet")  # fewer points than one batch of 4,096
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "error: 100 points are fewer than one batch of 4,096: give at least 4,096 points, or "
        "a batch size of at most 100 (the estimate then measures at that scale)"
    ]
    one = run_cli("id", path, "--quiet", "--batch-size", "100")
    assert one.returncode == 0
    assert "one batch" in one.stdout and "--batch-size" in one.stdout  # (a table may wrap)
    two = run_cli("id", path, "--quiet", "--batch-size", "50")
    assert "(SE)" in two.stdout and "one batch" not in two.stdout
    # 30 points: halves of 15 are not above k = 20, so no smaller batch is offered
    np.save(path, np.random.default_rng(0).normal(size=(30, 5)))
    few = run_cli("id", path, "--quiet", "--json", "--batch-size", "30")
    assert few.returncode == 0 and json.loads(few.stdout)["n_batches"] == 1
    table = run_cli("id", path, "--quiet", "--batch-size", "30").stdout
    assert "one batch" in table and "--batch-size" not in table


def test_a_printed_path_is_relative_only_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scalelab.cli.common import shown

    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert shown(tmp_path / "here" / "out" / "report.html") == "out/report.html"
    assert shown(tmp_path / "here" / "..dots" / "r.html") == "..dots/r.html"  # a name, inside
    assert shown(tmp_path / "elsewhere" / "r.html") == str(tmp_path / "elsewhere" / "r.html")


def test_a_table_written_to_a_pipe_keeps_its_headers() -> None:
    """Issue 52: rich folded tables into 80 columns when stdout was not a terminal, cutting
    their headers ('alpha_D_…'); to a pipe a table now prints at its natural width."""
    import subprocess
    import sys

    headers = [f"a_long_header_number_{i}" for i in range(6)]  # about 150 columns in all
    code = (
        "from scalelab.cli.common import print_table; "
        f"print_table('wide', [dict.fromkeys({headers!r}, 1.5)])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert all(h in out for h in headers) and "…" not in out
    assert max(len(line) for line in out.splitlines()) < 200  # natural width, not 10,000
