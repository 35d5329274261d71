"""Suite-wide test settings and helpers.

Hypothesis runs derandomised, always (not only in CI): the examples a property test tries are
a function of the test alone, so a failure reproduces on any machine and a pass is repeatable.

Strict JSON, everywhere: every `--json` output of `run_cli` must parse with a strict parser,
and after each test every *.json / *.jsonl file under its `tmp_path` (what the test's runs
wrote) must hold no NaN or Infinity.
"""

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hypothesis import settings

from scalelab.cli import main

settings.register_profile("scalelab", derandomize=True, print_blob=True)
settings.load_profile("scalelab")


class NonStandardJSON(ValueError):
    """NaN, Infinity or -Infinity in JSON: strict parsers (browsers, jq, Go, Rust) reject it."""


def _refuse(token: str) -> None:
    raise NonStandardJSON(token)


def strict_json(text: str) -> object:
    """`json.loads` that refuses NaN/Infinity instead of reading them as floats."""
    return json.loads(text, parse_constant=_refuse)


@pytest.fixture(autouse=True)
def strict_json_files(request: pytest.FixtureRequest):
    """After the test: no NaN/Infinity in any JSON file under its tmp_path. Files a test
    damages on purpose (not JSON at all) are skipped; only non-standard constants fail."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None or not Path(tmp).is_dir():
        return
    for path in [*Path(tmp).rglob("*.json"), *Path(tmp).rglob("*.jsonl")]:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines() if path.suffix == ".jsonl" else [text]
        for line in lines:
            try:
                strict_json(line)
            except NonStandardJSON as err:
                pytest.fail(f"{path} holds non-standard JSON constant {err}")
            except ValueError:
                continue


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
        code = exit_info.value.code or 0
        if code == 0 and "--json" in argv and "--help" not in argv:
            strict_json(out)  # every --json output is strict JSON
        return subprocess.CompletedProcess(argv, code, out, err)

    return call
