"""Faults: every long command killed (SIGKILL) in the middle of its work, then rerun, ends with
the same results as an uninterrupted run (bit-exact numbers), each run once; a second process
on a folder in use refuses at once; a full disk gives one line and keeps the last checkpoint.

The uninterrupted reference and the rerun go through the real `main()` in this process (fast);
only the victim is a real subprocess, so that it can be killed. The moment of the kill is read
from the victim's progress, not from a clock: the victim runs in short slices, stopped
(SIGSTOP) between them, and is killed, still stopped, at the first stop where its progress (see
`_progress`) has reached a level drawn from a generator seeded by the command name, between
"started" and "done". The state seen at that stop is the state the kill leaves behind, and the
test asserts it is partial before it reruns.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file
from test_pipeline import toy_config
from test_sweeps_data import make_store, mini_paragraphs

from scalelab.runs import outdir

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# Keys that differ between two correct runs: timings, provenance, folder paths.
TIMING = ("time", "wall", "cpu", "tokens_per", "provenance", "timing", "invocations", "stage_",
          "_dir")  # fmt: skip
TRAIN = ["--preset", "tiny", "--block-size", "32", "--batch-size", "4", "--eval-batches", "2",
         "--test-tokens", "512", "--dtype", "float32", "--threads", "1", "--quiet"]  # fmt: skip
SWEEP = ["--model", "1x32x1", "--block-size", "32", "--batch-size", "4", "--eval-batches", "2",
         "--eval-interval", "5", "--test-tokens", "512", "--policy", "epochs", "--epochs", "2",
         "--dtype", "float32", "--threads", "1", "--quiet"]  # fmt: skip
PROBE = ["--per-doc", "8", "--batch-size", "200", "--k", "10", "--device", "cpu", "--threads",
         "1", "--quiet"]  # fmt: skip


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A token store, two tiny trained runs (models to probe) and a text corpus, made once."""
    from scalelab.lm.config import configs_for_preset
    from scalelab.lm.train import train

    root = tmp_path_factory.mktemp("faults")
    store = make_store(root / "store")
    paths = {"root": root, "store": store}
    for name, width in (("run_a", 32), ("run_b", 48)):
        model_cfg, train_cfg = configs_for_preset(
            "tiny", store, block_size=32, batch_size=4, eval_batches=2, test_tokens=256,
            max_steps=4, eval_interval=2, n_layer=1, n_embd=width, n_head=1,
        )  # fmt: skip
        train(model_cfg, train_cfg, store, root / name, quiet=True)
        paths[name] = root / name
    corpus = root / "corpus.txt"
    corpus.write_text("\n\n".join(mini_paragraphs()), encoding="utf-8")
    paths["corpus"] = corpus
    outdir.release_all()
    return paths


def _strip(obj: Any) -> Any:
    """Results without timings, provenance and folder paths (they differ between runs)."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if not any(t in k for t in TIMING)}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _table(out: Path) -> list[dict]:
    table = pd.read_csv(out / "runs.csv")
    assert table["run"].is_unique  # no run twice
    keep = [c for c in table.columns if not any(t in c for t in TIMING)]
    table = table[keep].astype(object)
    return table.where(table.notna(), None).to_dict("records")  # NaN != NaN; None == None


def _train_result(out: Path) -> Any:
    weights = load_file(str(out / "checkpoint.safetensors"))
    result = json.loads((out / "result.json").read_text())
    metrics = [
        _strip(json.loads(line)) for line in (out / "metrics.jsonl").read_text().splitlines()
    ]
    return {k: v.tolist() for k, v in weights.items()}, _strip(result), metrics


def _json(name: str, *keys: str) -> Callable[[Path], Any]:
    def read(out: Path) -> Any:
        doc = json.loads((out / name).read_text())
        return _strip({k: doc[k] for k in keys} if keys else doc)

    return read


def _demo(out: Path) -> Any:
    doc = json.loads((out / "summary.json").read_text())
    return _strip({k: doc[k] for k in ("fits", "runs", "model_runs")}), _table(out / "sweep")


# name -> (command line with {store}/{run_a}/{run_b}/{out}, result reader, expected runs)
COMMANDS: dict[str, tuple[list[str], Callable[[Path], Any]]] = {
    "train": (["train", "--data", "{store}", "--out", "{out}", *TRAIN, "--max-steps", "40",
               "--eval-interval", "5", "--warmup-steps", "2"], _train_result),
    "sweep-data": (["sweep", "data", "--data", "{store}", "--out", "{out}", "--sizes",
                    "1000,2000,3000", *SWEEP], _table),
    "sweep-model": (["sweep", "model", "--data", "{store}", "--out", "{out}", "--models",
                     "1x32x1,1x48x1", "--train-tokens", "2000", *SWEEP[2:]], _table),
    # two sizes: the id run and two regressors are enough to be killed between (a third size
    # added ~10 CPU-s to each of the three passes and checked nothing more)
    "manifold-sweep": (["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--n-values",
                        "64,128", "--threads", "1"], _table),
    "induction-sweep": (["induction", "sweep", "--out", "{out}", "--ns", "8,12", "--alphabets",
                         "4", "--layers", "1,2", "--steps", "40", "--steps-one-layer", "40",
                         "--quiet"], _table),
    "estimate": (["estimate", "--model", "{run_a}", "--out", "{out}", *PROBE],
                 _json("estimate.json", "dimension", "dimension_se", "alpha_D", "counts")),
    "ablate-models": (["ablate", "models", "--model", "{run_a}", "--model", "{run_b}", "--out",
                       "{out}", *PROBE], _json("models.json", "rows")),
}  # fmt: skip


def _argv(args: list[str], work: dict[str, Path], out: Path) -> list[str]:
    names = {**work, "out": out}
    return [a.format(**names) if "{" in a else a for a in args]


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _progress(out: Path, pid: int, data: Path | None, floor: float) -> int:
    """Units of work visible from outside: 1 once the process has started working (it has the
    token store `data` mapped, has used more CPU than `floor`, what a bare start takes, or has
    written anything under `out`: a short command may finish before it passes the floor),
    plus one per line of every *.jsonl file under `out` (evaluations logged), plus one per
    result.json / estimate.json (runs finished)."""
    mapped = False
    if data is not None:
        with contextlib.suppress(OSError):  # the process may just have ended
            mapped = str(data) in Path(f"/proc/{pid}/maps").read_text()
    lines = sum(f.read_bytes().count(b"\n") for f in out.rglob("*.jsonl"))
    done = len([*out.rglob("result.json"), *out.rglob("estimate.json")])
    wrote = out.is_dir() and any(out.iterdir())
    return int(mapped or wrote or _cpu_s(pid) > floor) + lines + done


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "tTZX"
    except OSError:
        return True


def _kill_at(proc: subprocess.Popen, progress: Callable[[], int], level: int) -> int:
    """Run `proc` (a session leader) in slices of 20 ms, stopped between them; SIGKILL it at the
    first stop where `progress()` >= `level`. Returns the progress at the kill (or -1 when the
    process ended first): what the kill leaves behind, since nothing moved after it was read."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        os.killpg(proc.pid, signal.SIGSTOP)
        until = time.monotonic() + 0.2  # a parent in vfork waits (state D) on its stopped child
        while not _stopped(proc.pid) and time.monotonic() < until:
            time.sleep(0.001)
        if proc.poll() is not None:
            return -1
        if (seen := progress()) >= level:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return seen
        os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError(f"progress never reached {level}")


@pytest.fixture(scope="module")
def startup() -> float:
    """CPU seconds a subprocess needs to import scalelab and torch and run a trivial command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "scalelab", "induction", "solve", "0", "1"], env=ENV,
                   capture_output=True, check=True)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_kill_mid_work_then_rerun(
    name: str, work: dict[str, Path], tmp_path: Path, run_cli: Callable, startup: float
) -> None:
    args, read = COMMANDS[name]
    ref_out, out = tmp_path / "ref", tmp_path / "out"
    ref = run_cli(*_argv(args, work, ref_out))
    assert ref.returncode == 0, ref.stderr
    data = work["store"] if "{store}" in args or "{run_a}" in args else None
    total = _progress(ref_out, os.getpid(), None, math.inf)  # the finished reference
    finished = len([*ref_out.rglob("result.json"), *ref_out.rglob("estimate.json")])
    level = random.Random(name).randint(1, total - 1)  # started, not done
    victim = subprocess.Popen(
        [sys.executable, "-m", "scalelab", *_argv(args, work, out)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    # Half a bare start's CPU: a command that writes only at its end (estimate) is counted as
    # started well before it finishes, even when its whole work costs about one start.
    seen = _kill_at(victim, lambda: _progress(out, victim.pid, data, startup / 2), level)
    assert seen >= level, f"the victim finished before progress {level}: {victim.stderr.read()}"
    assert seen < total  # the kill landed mid-work: started, not done
    left = len([*out.rglob("result.json"), *out.rglob("estimate.json")]) if out.exists() else 0
    assert left < finished
    again = run_cli(*_argv(args, work, out))
    assert again.returncode == 0, again.stderr
    assert read(out) == read(ref_out)
    print(f"\nfault {name}: killed at progress {seen}/{total} ({left}/{finished} results)")


def test_demo_pipeline_killed_then_rerun(work: dict[str, Path], tmp_path: Path) -> None:
    """The demo's pipeline (what `scalelab demo` runs) at toy size, killed mid-work and rerun:
    the same runs, once each, and the same numbers, bit for bit."""
    from scalelab.pipeline import run_pipeline

    cfg = toy_config(work["corpus"], model_sweep=())  # the data sweep only: keep it short
    run_pipeline(tmp_path / "ref", cfg, workers=1, quiet=True, say=lambda _: None)
    outdir.release_all()
    total = _progress(tmp_path / "ref", os.getpid(), None, math.inf)
    finished = len([*(tmp_path / "ref").rglob("result.json")])
    code = (
        "import json, sys; from scalelab.pipeline import PipelineConfig, run_pipeline; "
        "run_pipeline(sys.argv[1], PipelineConfig.from_dict(json.loads(sys.argv[2])), "
        "workers=1, quiet=True, say=lambda _: None)"
    )
    out = tmp_path / "out"
    victim = subprocess.Popen(
        [sys.executable, "-c", code, str(out), json.dumps(cfg.to_dict())], env=ENV,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (out / outdir.LOCK).exists() and victim.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(Exception, match="in use by another scalelab process"):
        run_pipeline(out, cfg, workers=1, quiet=True, say=lambda _: None)  # second process
    level = random.Random("demo").randint(1, total - 1)
    seen = _kill_at(victim, lambda: _progress(out, victim.pid, None, math.inf), level)
    assert level <= seen < total, (seen, total, victim.stderr.read())
    left = len([*out.rglob("result.json")])
    assert left < finished and not (out / "summary.json").exists()
    run_pipeline(out, cfg, workers=1, quiet=True, say=lambda _: None)
    outdir.release_all()
    assert _demo(out) == _demo(tmp_path / "ref")
    print(f"\nfault demo: killed at progress {seen}/{total} ({left}/{finished} runs)")


@pytest.mark.parametrize("name", ["train", "induction-sweep"])
def test_second_process_on_a_folder_refuses_at_once(
    name: str, work: dict[str, Path], tmp_path: Path, run_cli: Callable
) -> None:
    args, _ = COMMANDS[name]
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "scalelab", *_argv(args, work, out)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (out / outdir.LOCK).exists():
        assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
        time.sleep(0.05)
    second = run_cli(*_argv(args, work, out))
    # at once: it answered while the holder still runs (waiting for the lock would have
    # meant waiting for the holder to end); no wall-clock limit, which fails under load
    assert first.poll() is None, "the holder ended before the refusal: the test proves nothing"
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert second.returncode == 2 and second.stderr.count("\n") == 1
    assert f"in use by another scalelab process (pid {first.pid})" in second.stderr
    assert run_cli(*_argv(args, work, out)).returncode == 0  # the dead holder blocks nothing


def _limit_file_size(limit: int) -> Callable[[], None]:
    def set_limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-large write fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return set_limit


def test_full_disk_is_one_line_and_keeps_the_last_checkpoint(
    work: dict[str, Path], tmp_path: Path, run_cli: Callable
) -> None:
    args = _argv(COMMANDS["train"][0], work, tmp_path / "run")
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "scalelab", *args], env=ENV,
                            stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 120
    while not (run / "state.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    state = (run / "state.pt").read_bytes()
    weights = (run / "checkpoint.safetensors").stat().st_size
    limit = (weights + len(state)) // 2  # the weights still fit, the next state.pt does not
    full = subprocess.run(
        [sys.executable, "-m", "scalelab", *args], env=ENV, capture_output=True, text=True,
        preexec_fn=_limit_file_size(limit), timeout=300,
    )  # fmt: skip
    assert full.returncode == 2, full.stderr[-2000:]
    lines = full.stderr.splitlines()  # training logs its validations; then one error line
    assert [line for line in lines if line.startswith("error:")] == lines[-1:]
    assert "File too large" in lines[-1] and "Traceback" not in full.stderr
    assert "state.pt" in lines[-1] and "rerun the same command" in lines[-1]
    assert (run / "state.pt").read_bytes() == state  # the last good checkpoint, untouched
    assert not list(run.glob(".*.tmp")) and not (run / "result.json").exists()
    torch.load(run / "state.pt", weights_only=True)
    done = run_cli(*args)  # disk space back: the run continues from that checkpoint
    assert done.returncode == 0, done.stderr
    ref = tmp_path / "ref"
    assert run_cli(*_argv(COMMANDS["train"][0], work, ref)).returncode == 0
    assert _train_result(run) == _train_result(ref)
    shutil.rmtree(ref)
