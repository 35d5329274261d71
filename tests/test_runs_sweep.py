"""The shared sweep runner: resumable at run granularity, one row per finished run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from scalelab.errors import ConfigError
from scalelab.runs.sweep import RunSpec, open_sweep, run_sweep


def square_worker(params: dict, run_dir: Path) -> dict:
    """Counts its calls in a file, so a test can see which runs were redone."""
    calls = run_dir.parent.parent / "calls.txt"
    with open(calls, "a") as f:
        f.write(f"{params['x']}\n")
    if params["x"] == 3 and not (run_dir.parent.parent / "allow3").exists():
        raise RuntimeError("simulated crash")
    return {"y": params["x"] ** 2}


def test_sweep_resumes_without_redoing_finished_runs(tmp_path: Path) -> None:
    specs = [RunSpec(f"x{x}", {"x": x}) for x in (1, 2, 3, 4)]
    open_sweep(tmp_path, "toy", {"xs": [1, 2, 3, 4]})
    with pytest.raises(RuntimeError):
        run_sweep(tmp_path, specs, square_worker, quiet=True)
    partial = pd.read_csv(tmp_path / "runs.csv")
    assert list(partial["x"]) == [1, 2]
    (tmp_path / "allow3").touch()
    table = run_sweep(tmp_path, specs, square_worker, quiet=True)
    assert list(table["y"]) == [1, 4, 9, 16]
    assert (tmp_path / "calls.txt").read_text().split() == ["1", "2", "3", "3", "4"]
    assert len(pd.read_csv(tmp_path / "runs.csv")) == 4
    assert json.loads((tmp_path / "runs" / "x4" / "result.json").read_text()) == {"y": 16}


def test_parallel_workers_give_the_same_table(tmp_path: Path) -> None:
    (tmp_path / "allow3").touch()
    specs = [RunSpec(f"x{x}", {"x": x}) for x in (1, 2, 3, 4)]
    open_sweep(tmp_path, "toy", {})
    table = run_sweep(tmp_path, specs, square_worker, workers=2, quiet=True)
    assert list(table["y"]) == [1, 4, 9, 16]


def test_sweep_folder_from_other_config_is_refused(tmp_path: Path) -> None:
    open_sweep(tmp_path, "toy", {"xs": [1, 2]})
    with pytest.raises(ConfigError, match="different config"):
        open_sweep(tmp_path, "toy", {"xs": [1, 3]})
    with pytest.raises(ConfigError, match="not 'other'"):
        open_sweep(tmp_path, "other", {"xs": [1, 2]})


def test_atomic_write_leaves_no_temp_and_uses_umask_permissions(tmp_path: Path) -> None:
    import os
    import stat

    from scalelab.io import atomic_write_json, read_json

    target = atomic_write_json(tmp_path / "r.json", {"a": 1})
    assert read_json(target) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def _alive(pid: int) -> bool:
    """Running (a zombie left for a non-reaping init counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_workers_die_with_a_killed_sweep_process(tmp_path: Path) -> None:
    """SIGKILL of the sweep process must not leave workers training orphaned (they would
    hold run folders' locks against the rerun)."""
    (tmp_path / "sleepy.py").write_text(
        "import os, time\n"
        "def sleepy(params, run_dir):\n"
        "    (run_dir / 'pid').write_text(str(os.getpid()))\n"
        "    time.sleep(120)\n"
        "    return {}\n"
    )
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from sleepy import sleepy\n"
        "from scalelab.runs.sweep import RunSpec, open_sweep, run_sweep\n"
        "root = Path(sys.argv[1]) / 'sweep'\n"
        "open_sweep(root, 'toy', {})\n"
        "run_sweep(root, [RunSpec(f'r{i}', {}) for i in range(2)], sleepy, workers=2, quiet=True)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
    pid_files = [tmp_path / "sweep" / "runs" / f"r{i}" / "pid" for i in range(2)]
    deadline = time.monotonic() + 120
    while not all(p.exists() and p.read_text() for p in pid_files):
        assert parent.poll() is None and time.monotonic() < deadline, "workers never started"
        time.sleep(0.2)
    workers = [int(p.read_text()) for p in pid_files]
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed sweep process"


UNGUARDED = """
from pathlib import Path
from scalelab.runs.sweep import RunSpec, open_sweep, run_sweep

def double(params, run_dir):
    return {"y": 2 * params["x"]}

folder = Path(FOLDER)
open_sweep(folder, "toy", {"xs": [1, 2]})
run_sweep(folder, [RunSpec("a", {"x": 1}), RunSpec("b", {"x": 2})], double, workers=2,
          quiet=True)
print("finished")
"""


def test_a_script_without_the_main_guard_is_told_so(tmp_path: Path) -> None:
    """Spawned workers import the main module again: an unguarded script re-runs its sweep in
    them and finds the folder locked by the parent. Both the worker's and the parent's
    message name the missing guard (the guarded path: test_parallel_workers_give_the_same_table)."""
    script = tmp_path / "script.py"
    script.write_text(UNGUARDED.replace("FOLDER", repr(str(tmp_path / "sweep"))))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode != 0 and "finished" not in done.stdout
    assert "locked by this worker's parent process" in done.stderr  # the worker's line
    assert 'if __name__ == "__main__":' in done.stderr.splitlines()[-1]  # the parent's
