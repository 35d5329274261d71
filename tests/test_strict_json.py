"""The suite's own strict-JSON check (tests/conftest.py) fails on what it promises to catch:
NaN in a file a module-scoped fixture wrote, Infinity and a truncated line under a test's
tmp_path, and passes a clean file. Run as a separate pytest session with this conftest."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PLANTED = """
import pytest


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared")
    (folder / "summary.json").write_text('{"fits": {"alpha": NaN}}')
    return folder


def test_module_scoped_output(shared):
    assert shared.is_dir()


def test_infinity(tmp_path):
    (tmp_path / "fits.json").write_text('{"d": Infinity}')


def test_truncated_line(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\\n{"step": 2, "lo')


def test_clean(tmp_path):
    (tmp_path / "ok.json").write_text('{"d": null, "d_nonfinite": "nan"}')
    (tmp_path / "ok.jsonl").write_text('{"step": 1}\\n')
"""


def test_strict_json_check_catches_planted_files() -> None:
    # outside this session's temporary folders, whose JSON files this session's check reads
    with tempfile.TemporaryDirectory() as tmp:
        out = _run_planted(Path(tmp))
    assert "ERROR at teardown of test_infinity" in out, out[-3000:]
    assert "non-standard constant Infinity" in out
    assert "ERROR at teardown of test_truncated_line" in out
    assert "metrics.jsonl: line 2 is not ended" in out
    assert "PASSED test_planted.py::test_clean" in out
    assert "PASSED test_planted.py::test_module_scoped_output" in out  # but, at session end:
    assert (
        "shared0/summary.json: line 1: non-standard constant NaN" in out.split("= strict JSON")[-1]
    )


def _run_planted(tmp_path: Path) -> str:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(Path(__file__).with_name("conftest.py"), suite / "conftest.py")
    (suite / "test_planted.py").write_text(PLANTED)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
         f"--basetemp={tmp_path / 'base'}", str(suite)],
        cwd=suite, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    return done.stdout
