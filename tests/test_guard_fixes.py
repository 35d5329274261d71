"""One test per input-handling bug fixed in issue 12 (each failed before its fix)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from scalelab.device import resolve_device
from scalelab.errors import ConfigError
from scalelab.intrinsic import neighbors_kernels
from scalelab.io import append_jsonl, atomic_write_json, to_json
from scalelab.runs import outdir


def strict_loads(text: str) -> object:
    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("bad", [["--layers", "0"], ["--heads", "3", "--widths", "64"]])
def test_induction_sweep_checks_every_run_before_writing(
    tmp_path: Path, run_cli: Callable, bad: list[str]
) -> None:
    out = tmp_path / "sweep"
    tiny = ["--ns", "8", "--alphabets", "4", "--steps", "2", "--steps-one-layer", "2",
            "--no-construction", "--quiet"]  # fmt: skip
    result = run_cli("induction", "sweep", "--out", out, *tiny, *bad)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert not out.exists()
    fixed = run_cli("induction", "sweep", "--out", out, *tiny, "--layers", "1")
    assert fixed.returncode == 0, fixed.stderr  # the folder was not poisoned


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["induction", "sweep"], "Missing option '--out'"),
        (["induction", "train", "--out", "x", "--n", "abc"], "Invalid value for '--n'"),
        (["no-such-command"], "No such command"),
        (["fit", "--no-such-option"], "No such option"),
    ],
)
def test_usage_errors_are_one_line_exit_2(run_cli: Callable, args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert message in result.stderr and "--help" in result.stderr


def test_solve_reads_negative_numbers_as_numbers(run_cli: Callable) -> None:
    result = run_cli("induction", "solve", "0", "-1", "2")
    assert result.returncode == 2 and "token ids must be >= 0, got -1" in result.stderr
    assert result.stderr.count("\n") == 1
    ok = run_cli("induction", "solve", "0", "1", "0", "1", "--json")
    assert strict_loads(ok.stdout) == {"input": [0, 1, 0, 1], "output": [None, None, 1, 0]}


def test_bare_cuda_under_torchrun_is_the_local_rank_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)  # also where one GPU is real
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert resolve_device("cuda") == torch.device("cuda", 1)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)  # an explicit index is kept
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.delenv("LOCAL_RANK")
    assert resolve_device("cuda") == torch.device("cuda")
    with pytest.raises(ConfigError, match="unknown device"):
        resolve_device("tpu7")


def test_more_torchrun_processes_than_gpus_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rank 1 on a one-GPU machine: a one-line fix instead of CUDA's "invalid device ordinal"."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert resolve_device(None) == torch.device("cuda", 0)
    monkeypatch.setenv("LOCAL_RANK", "1")
    for name in (None, "auto", "cuda", "cuda:1"):
        with pytest.raises(ConfigError, match=r"cuda:1 does not exist.*--nproc_per_node=1"):
            resolve_device(name)
    assert resolve_device("cpu") == torch.device("cpu")


def test_knn_kernels_keep_inf_semantics() -> None:
    kernels = neighbors_kernels
    for kernel in (
        kernels.rerank_kernel,
        kernels.row_sq_norms,
        kernels.keep_smallest,
        kernels.keep_smallest_columns,
    ):
        flags = kernel.targetoptions["fastmath"]
        assert isinstance(flags, set) and not flags & {"nnan", "ninf", "fast"}
    # fewer candidates than k: the unfilled slots keep their +inf placeholder and index -1
    x = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]], dtype=np.float32)
    sq, idx = kernels.rerank_kernel(x, np.array([0]), np.array([[2, 1]]), 3)
    assert sq[0, :2].tolist() == [25.0, 100.0] and idx[0].tolist() == [1, 2, -1]
    assert math.isinf(sq[0, 2]) and sq[0, 2] > 0


def test_json_writer_is_strict_and_says_why_a_value_is_null(tmp_path: Path) -> None:
    obj = {"a": float("nan"), "b": [1.0, float("inf")], "c": np.float32(-np.inf), "d": 2.5}
    text = to_json(obj)
    assert strict_loads(text) == {
        "a": None, "a_nonfinite": "nan", "b": [1.0, None], "c": None, "c_nonfinite": "-inf",
        "d": 2.5,
    }  # fmt: skip
    atomic_write_json(tmp_path / "x.json", obj)
    append_jsonl(tmp_path / "x.jsonl", obj)
    strict_loads((tmp_path / "x.json").read_text())
    strict_loads((tmp_path / "x.jsonl").read_text())


def test_lock_refuses_a_second_holder_and_dies_with_its_process(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from scalelab.runs import outdir; "
         "outdir.lock(sys.argv[1]); print('locked', flush=True); time.sleep(600)", str(folder)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=f"in use by another scalelab process .pid {holder.pid}"):
        outdir.lock(folder)
    assert time.monotonic() - t0 < 1.0  # refused at once, no waiting
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (folder / outdir.LOCK).exists()  # the stale lock file stays ...
    outdir.lock(folder)  # ... and does not block
    assert (folder / outdir.LOCK).read_text().strip() == str(os.getpid())
    outdir.release(folder)
