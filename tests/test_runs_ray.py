"""The Ray backend on a local Ray instance of 2 CPUs (one per module: starting Ray costs
seconds): a driver killed mid-sweep (SIGKILL) leaves a folder the next invocation finishes
without redoing a finished run, with the same runs.csv as the local backend, bit for bit
(every run of it trained on Ray, before or after the kill), and a rerun after it redoes
nothing; a worker that cannot see the sweep folder stops the sweep with a ConfigError that
names the fix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from test_sweeps_data import make_store
from test_sweeps_resume import n_lines, sweep_args

from scalelab.errors import ConfigError
from scalelab.runs.sweep import Backend, RunSpec, open_sweep, run_sweep

ray = pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install '.[ray]'")

LOSSES = ["test_loss_nats", "best_val_loss_nats", "best_step", "steps"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray instance with 2 CPUs; yields its address for other drivers."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 2**20,
        logging_level="ERROR",
    )
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("ray") / "store")


@pytest.fixture(scope="module")
def local_table(store: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The reference: the same sweep on the local backend, in this process."""
    from scalelab.cli import main

    out = tmp_path_factory.mktemp("ray") / "local"
    old = sys.argv
    sys.argv = ["scalelab", *sweep_args(store, out)]
    try:
        with pytest.raises(SystemExit) as stop:
            main()
    finally:
        sys.argv = old
    assert not stop.value.code
    return pd.read_csv(out / "runs.csv")


def _wait_for_free_cpus(n: float, timeout: float = 60) -> None:
    """Ray kills a dead driver's tasks; wait until their CPUs are back."""
    deadline = time.monotonic() + timeout
    while ray.available_resources().get("CPU", 0) < n:
        assert time.monotonic() < deadline, ray.available_resources()
        time.sleep(0.2)


def _kill_driver_then_resume(out: Path, cluster: str, store: Path, local_table, run_cli) -> list:
    """Kill the Ray driver while one run is finished and another going, rerun; return the runs
    that continued from their checkpoint (none when the going run's task outlived the kill)."""
    args = [*sweep_args(store, out), "--backend", "ray", "--ray-address", cluster]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "scalelab", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    runs = [out / "runs" / name for name in local_table["run"]]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        done = [r for r in runs if (r / "result.json").exists()]
        going = [r for r in runs if r not in done and n_lines(r / "metrics.jsonl") >= 2]
        if done and going:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, proc.stderr.read().decode()
    _wait_for_free_cpus(2)  # the dead driver's tasks are gone
    finished = {
        r: (r / "result.json").stat().st_mtime_ns for r in runs if (r / "result.json").exists()
    }
    assert 0 < len(finished) < len(runs), "the kill came too late to test a resume"
    if (out / "runs.csv").exists():  # the driver may die before writing the newest row
        assert set(pd.read_csv(out / "runs.csv")["run"]) <= {r.name for r in finished}

    result = run_cli(*sweep_args(store, out), "--backend", "ray")
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "runs.csv")
    for col in LOSSES:
        assert list(table[col]) == list(local_table[col]), col
    assert {r: (r / "result.json").stat().st_mtime_ns for r in finished} == finished
    # A rerun on Ray redoes nothing.
    stamps = [p.stat().st_mtime_ns for p in sorted(out.glob("runs/*/result.json"))]
    assert run_cli(*sweep_args(store, out), "--backend", "ray").returncode == 0
    assert [p.stat().st_mtime_ns for p in sorted(out.glob("runs/*/result.json"))] == stamps
    return [r for r in runs if r not in finished and "resuming" in (r / "train.log").read_text()]


def test_killed_ray_driver_resumes(cluster: str, store: Path, local_table, tmp_path, run_cli):
    # A task can finish its run in the moment before Ray reaps it; then nothing is left to
    # resume, so the kill is tried again (at most three times) in a fresh folder.
    for attempt in range(3):
        out = tmp_path / f"killed{attempt}"
        if _kill_driver_then_resume(out, cluster, store, local_table, run_cli):
            return
    raise AssertionError("no killed run continued from its checkpoint in 3 kills")


def test_unseen_sweep_folder_is_a_clear_error(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scalelab.manifold.sweep import run_worker
    from scalelab.runs import ray_backend
    from scalelab.runs.ray_backend import MARKER, check_visible

    with pytest.raises(ConfigError, match=r"cannot see the sweep folder.*--backend local"):
        check_visible(tmp_path, "abc")  # no marker: a node without the shared filesystem
    (tmp_path / MARKER).write_text("other")
    with pytest.raises(ConfigError, match="another sweep's token"):
        check_visible(tmp_path, "abc")
    # Through Ray: workers that see another folder than the driver wrote (here: the driver's
    # token write is diverted) stop the sweep with the same error, before any run starts.
    monkeypatch.setattr(ray_backend, "atomic_write_text", lambda path, _: path.write_text("x"))
    open_sweep(tmp_path, "toy", {})
    specs = [RunSpec("a", {"x": 1})]
    with pytest.raises(ConfigError, match="cannot see the sweep folder"):
        run_sweep(tmp_path, specs, run_worker, backend=Backend(kind="ray"), quiet=True)
    assert not (tmp_path / "runs" / "a").exists()


def test_backend_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="not one of"):
        Backend(kind="slurm")
    with pytest.raises(ConfigError, match="need --backend ray"):
        Backend(kind="local", address="host:6379")
    with pytest.raises(ConfigError, match=">= 1"):
        Backend(kind="ray", num_cpus=0)
