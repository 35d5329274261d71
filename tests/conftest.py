"""Suite-wide test settings and helpers.

Hypothesis runs derandomised, always (not only in CI): the examples a property test tries are
a function of the test alone, so a failure reproduces on any machine and a pass is repeatable.

Strict JSON, everywhere: every `--json` output of `run_cli` must parse with a strict parser,
and every *.json / *.jsonl file the suite writes must be strict JSON (no NaN or Infinity, not
truncated, not empty): those under a test's `tmp_path` after that test (the test fails), and at
the end of the session every such file under pytest's base temporary folder, which also holds
what module- and session-scoped fixtures wrote (the session fails, listing the files). Files a
test damages on purpose are listed in DAMAGED_ON_PURPOSE.
"""

import fnmatch
import json
import re
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


# Files tests write malformed on purpose (to check that scalelab refuses them), as patterns
# relative to pytest's base temporary folder: the JSON check skips these and nothing else.
DAMAGED_ON_PURPOSE = (
    "bad-input*/corrupt_sweep/sweep.json",  # test_bad_input.py: report-corrupt-sweep-json
    "test_bad_sweep_folders_raise_a*/sweep.json",  # test_report_lm.py: "{not json"
    "test_jsonl_and_parquet_text_fi*/c.jsonl",  # test_text_corpora.py: a line "{oops"
    "test_damaged_stores_are_refuse*/broken/meta.json",  # test_text_store.py: truncated
)


def json_problem(path: Path) -> str | None:
    """Why `path` (a .json or .jsonl file) is not strict JSON, or None when it is."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return f"unreadable ({err})"
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    if path.suffix == ".json":
        lines = [(1, text)]
    elif text and not text.endswith("\n"):
        return f"line {len(text.splitlines())} is not ended (a truncated append)"
    for number, line in lines:
        try:
            strict_json(line)
        except NonStandardJSON as err:
            return f"line {number}: non-standard constant {err}"
        except ValueError as err:
            return f"line {number}: {err}"
    return None


def json_problems(root: Path, base: Path) -> list[str]:
    """Every JSON file below `root` that is not strict JSON (those damaged on purpose aside)."""
    found = []
    for path in sorted([*root.rglob("*.json"), *root.rglob("*.jsonl")]):
        rel = str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
        rel = re.sub(r"^popen-gw\d+/", "", rel)  # under pytest-xdist: one folder per worker
        if not path.is_file() or any(fnmatch.fnmatch(rel, p) for p in DAMAGED_ON_PURPOSE):
            continue
        if (why := json_problem(path)) is not None:
            found.append(f"{path}: {why}")
    return found


@pytest.fixture(autouse=True)
def strict_json_files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """After the test: every JSON file under its tmp_path is strict JSON."""
    yield
    tmp = request.node.funcargs.get("tmp_path")
    if tmp is None or not Path(tmp).is_dir():
        return
    if problems := json_problems(Path(tmp), tmp_path_factory.getbasetemp()):
        pytest.fail("not strict JSON:\n" + "\n".join(problems))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every JSON file the session wrote, module- and session-scoped fixtures' included."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or getattr(factory, "_basetemp", None) is None:
        return  # no test asked for a temporary folder
    base = factory.getbasetemp()
    if problems := json_problems(base, base):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "not strict JSON (written during this session):\n" + "\n".join(problems)
        if reporter is not None:
            reporter.write_sep("=", "strict JSON", red=True)
            reporter.write_line(text)
        else:
            print(text, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread_in_fixtures():
    """One torch thread from the start of the session: module- and session-scoped fixtures
    (the trained tiny models many modules share) are set up before any function-scoped
    fixture, so without this they trained on every core. Measured on the 2-core machine at
    load ≈ 8: the seeds/anneal module's sweep took 24.7 CPU-s on 2 threads, 1.1 on one.

    numba's kernels (the k-NN search, duplicate removal) run on one thread too: numba's
    OpenMP pool shares torch's thread count here, and starting it set torch's to every core,
    so any test that trained after a numba call (the manifold sweep: an `id` run, then the
    regressors) trained on 2 threads despite `--threads 1`, at 10x the CPU time. The library
    now starts the pool at torch's count (`intrinsic.neighbors_kernels._start_pool`, tested in
    tests/test_neighbors_kernels.py); here numba's own kernels are held to one thread too."""
    import numba

    numba.set_num_threads(1)  # starts numba's pool (which sets OpenMP's count to all cores)
    torch.set_num_threads(1)  # and then back to one, for both


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
