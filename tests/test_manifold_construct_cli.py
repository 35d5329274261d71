"""`scalelab manifold construct` through the real main(): the rate table on a tiny grid, the
files it writes, and one line with exit 2 on bad input (nothing written)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from scalelab.manifold.construction_rate import load_result

TINY = ("--d", "1", "--beta", "1", "--grid", "3,4,5,6,8", "--draws", "1", "--n-eval", "64",
        "--targets", "multiscale", "--dense-points", "1", "--dense-budget", "1e4")  # fmt: skip


@pytest.fixture
def construct(run_cli: Callable) -> Callable:
    return functools.partial(run_cli, "manifold", "construct")


def test_tiny_grid_prints_the_rate_table_and_writes_its_files(
    tmp_path: Path, construct: Callable
) -> None:
    res = construct(*TINY, "--out", tmp_path, "--trained", tmp_path / "none.csv")
    assert res.returncode == 0, res.stderr
    assert "constructed Lemma-1 transformer" in res.stdout and "2.000" in res.stdout  # 2β/d
    doc = json.loads((tmp_path / "construct.json").read_text())
    assert [r["G"] for r in doc["rows"]] == [3, 4, 5, 6, 8]
    # the dense pass ran where heads·l² ≤ 1e4 (every G here: at G = 8, 25·17² = 7225), and agreed
    assert [c["G"] for c in doc["dense"]] == [3, 4, 5, 6, 8]
    assert all(c["max_diff_float64"] <= 1e-6 for c in doc["dense"])
    assert {c["convention"] for c in doc["checks"]} == {"dense", "appendix_b"}
    assert doc["checks"][0]["predicted"] == 2.0
    assert {"git_revision", "python", "torch"} <= set(doc["provenance"])
    for name in ("construct.md", "construct.png", "rows.csv"):
        assert (tmp_path / name).stat().st_size > 0
    assert [r.G for r in load_result(tmp_path).rows] == [3, 4, 5, 6, 8]  # reads back


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--grid", "1,4"), "--grid 1,4: a grid needs G >= 2"),
        (("--d", "0"), "--d 0: every dimension d must be an integer >= 1"),
        (("--beta", "0"), "--beta 0: the Hölder exponent β must be in (0, 1]"),
        (("--beta", "1.5"), "--beta 1.5: the Hölder exponent β must be in (0, 1]"),
        (("--targets", "sphere"), "unknown target(s) ['sphere']"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, construct: Callable, args: tuple, message: str
) -> None:
    res = construct(*args, "--out", tmp_path / "out")
    assert res.returncode == 2
    assert message in res.stderr and res.stderr.count("\n") == 1
    assert "use" in res.stderr  # names the fix
    assert not (tmp_path / "out").exists()
