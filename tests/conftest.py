"""Suite-wide test settings and helpers."""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from scalelab.cli import main


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One torch thread per test (restored afterwards): on a shared 2-core machine two threads
    spin-wait and run many times slower, and CPU time is what the suite's budget counts.
    Subprocesses the tests start set their own thread count."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`scalelab ARGS` through the real `main()` in this process: exit code, stdout, stderr."""

    def call(*args: str | Path) -> subprocess.CompletedProcess[str]:
        argv = ["scalelab", *map(str, args)]
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(argv, exit_info.value.code or 0, out, err)

    return call
