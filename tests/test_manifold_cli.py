"""`scalelab manifold ...` through the real main(): results on success, exit 2 on bad input."""

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def run_main(run_cli: Callable) -> Callable:
    """`scalelab manifold ARGS` through the real `main()`, in this process."""
    return functools.partial(run_cli, "manifold")


def test_sample_writes_points_on_the_sphere(tmp_path: Path, run_main: Callable) -> None:
    out = tmp_path / "pts.npz"
    res = run_main("sample", "--out", out, "--d", "3", "--n", "500", "--D", "16", "--json")
    assert res.returncode == 0, res.stderr
    data = np.load(out)
    assert data["x"].shape == (500, 16)
    # the unit sphere S^3 rotated into R^16: every point has norm 1
    np.testing.assert_allclose(np.linalg.norm(data["x"], axis=1), 1.0, atol=1e-12)
    assert (tmp_path / "pts.json").exists()
    # its JSON as --config is the same problem: the same points at the same sample seed
    again = run_main("sample", "--out", tmp_path / "again.npz", "--config", tmp_path / "pts.json",
                     "--n", "500")  # fmt: skip
    assert again.returncode == 0, again.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "again.npz")["x"], data["x"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sweep", "--out", "{tmp}/s", "--dims", "two"), "comma-separated integers"),
        (("sweep", "--out", "{tmp}/s", "--preset", "huge"), "unknown preset"),
        (("sweep", "--out", "{tmp}/s", "--betas", "1.5"), "beta must be in (0, 1]"),
        (("sweep", "--out", "{tmp}/s", "--manifold", "klein"), "unknown manifold"),
        (("sweep", "--out", "{tmp}/s", "--attention", "linear"), "attention must be"),
        (("sample", "--out", "{tmp}/p.txt"), "name it *.npz"),
        (("sample", "--out", "{tmp}/p.npz", "--d", "9", "--D", "4"), "ambient dimension"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, run_main: Callable, args: tuple, message: str
) -> None:
    res = run_main(*(a.format(tmp=tmp_path) for a in args))
    assert res.returncode == 2
    assert message in res.stderr and res.stderr.count("\n") == 1
    assert not list(tmp_path.rglob("*.npz")) and not list(tmp_path.rglob("runs.csv"))


def test_levers_config_file_is_the_folders_own(tmp_path: Path, run_main: Callable) -> None:
    """A levers folder's config.json (with its provenance) as --config is the same design: the
    folder resumes with every cell read, not rerun, and the same rows."""
    out = tmp_path / "lv"
    args = ("--dims", "2", "--n-values", "16", "--samples", "2", "--inits", "2", "--levers", "v1")
    first = run_main("levers", *args, "--out", out, "--json", "-q")
    assert first.returncode == 0, first.stderr
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    again = run_main("levers", "--config", out / "config.json", "--out", out, "--json", "-q")
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == stamps


def test_a_levers_folder_grows_by_levers_but_refuses_another_design(
    tmp_path: Path, run_main: Callable
) -> None:
    """Cells are named by lever, d, n and sample: a rerun may add levers (the committed
    folders grew so), but not change what every cell depends on (inits, β, the field's cap,
    the seed): that is refused in one line, before any cell is touched."""
    out = tmp_path / "lv"
    args = ("--dims", "2", "--n-values", "16", "--samples", "2", "--levers", "v1")
    assert run_main("levers", *args, "--inits", "2", "--out", out, "-q").returncode == 0
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    saved = (out / "config.json").read_bytes()
    res = run_main("levers", *args, "--inits", "3", "--out", out, "-q")
    assert res.returncode == 2 and "inits: saved=2 now=3" in res.stderr
    assert res.stderr.count("\n") == 1
    assert (out / "config.json").read_bytes() == saved
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()} == stamps
    wider = ("--dims", "2", "--n-values", "16,32", "--samples", "2", "--levers", "v1")
    res = run_main("levers", *wider, "--inits", "2", "--out", out, "-q")
    assert res.returncode == 2 and "field_cap_n: saved=16 now=32" in res.stderr
    more = ("--dims", "2", "--n-values", "16", "--samples", "2", "--levers", "v1,patience")
    assert run_main("levers", *more, "--inits", "2", "--out", out, "-q").returncode == 0
    after = {p.name: p.stat().st_mtime_ns for p in (out / "cells").iterdir()}
    assert {k: after[k] for k in stamps} == stamps and len(after) == 2 * len(stamps)
