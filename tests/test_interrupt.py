"""Ctrl-C (SIGINT to the whole process group, as a terminal sends it) on a sweep that trains
in two worker processes: one line, "stopped; re-run the same command to resume", exit code
130, the folder unlocked, and the same command then resumes it to the end. (Typer turns a
KeyboardInterrupt into a silent exit code 130: before, the command stopped without a word.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_sweeps_data import make_store

from scalelab.cli import STOPPED
from scalelab.runs import outdir

ENV = {**os.environ, "SCALELAB_CPU_BF16": "0", "PYTHONUNBUFFERED": "1"}


def default_sigint() -> None:
    """A terminal's Ctrl-C disposition for the child: pytest-xdist's workers ignore SIGINT,
    and an ignored signal stays ignored across exec (Python then installs no handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_says_how_to_resume_and_the_rerun_finishes(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    out = tmp_path / "sweep"
    argv = [
        sys.executable, "-m", "scalelab", "sweep", "data", "--data", str(store), "--out",
        str(out), "--model", "1x16x1", "--block-size", "32", "--batch-size", "4",
        "--sizes", "2000,4000,8000", "--min-steps", "120", "--step-cap", "120",
        "--eval-interval", "20", "--eval-batches", "2", "--workers", "2", "--quiet",
    ]  # fmt: skip
    victim = subprocess.Popen(
        argv, env=ENV, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        start_new_session=True, preexec_fn=default_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not any((out / "runs").glob("*/metrics.jsonl")):  # training under way
        assert victim.poll() is None and time.monotonic() < deadline, victim.stderr.read()
        time.sleep(0.05)
    os.killpg(victim.pid, signal.SIGINT)
    _, err = victim.communicate(timeout=60)
    assert victim.returncode == 130, err
    assert err.splitlines() == [STOPPED] == ["stopped; re-run the same command to resume"]
    outdir.lock(out)  # free: the stopped process holds no lock (a flock dies with it)
    outdir.release(out)
    finished = len(list(out.rglob("result.json")))
    assert finished < 3
    again = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert len(list((out / "runs").glob("*/result.json"))) == 3
