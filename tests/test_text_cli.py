"""`scalelab corpus`: bad input is one line on stderr, exit 2, no folder.

Most cases call the real entry point `scalelab.cli.main` in-process (a subprocess costs
seconds of imports on a loaded machine); one of each kind also runs as a real subprocess.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scalelab.text.store import TokenStore


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scalelab", "corpus", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def run_main(run_cli: Callable) -> Callable:
    """`scalelab corpus ARGS` through the real `main()`, in this process."""
    return functools.partial(run_cli, "corpus")


def test_list_shows_both_builtins(run_main: Callable) -> None:
    result = run_main("list", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["python-stdlib"]["available"] is True
    assert rows["python-stdlib"]["license"] == "PSF-2.0"
    assert "shakespeare" in rows


def test_prepare_a_line_per_document_file_then_info(tmp_path: Path, run_main: Callable) -> None:
    lines = [f"line {i}: a quick fox {i % 13} jumps over {i * 7 % 31} dogs" for i in range(300)]
    src = tmp_path / "lines.txt"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "store"
    options = ["--split-on", "line", "--vocab-size", "300", "--seed", "4", "--json", "-q"]
    result = run_main("prepare", src, "--out", out, *options)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["vocab_size"] == 300 and summary["corpus"] == "lines"
    counts = summary["splits"]
    assert sum(s["n_documents"] for s in counts.values()) == 300
    assert counts["test"]["n_tokens"] == TokenStore(out, "test").n_tokens
    info = run_main("info", out, "--json")
    assert info.returncode == 0 and json.loads(info.stdout) == summary


def _bad_inputs(tmp: Path) -> dict[str, tuple[list[str | Path], str]]:
    (tmp / "empty.txt").write_text("\n\n  \n")
    (tmp / "blob.bin").write_bytes(bytes(range(256)))
    (tmp / "nodocs").mkdir()
    (tmp / "nodocs" / "a.md").write_text("markdown, not txt")
    (tmp / "small.txt").write_text("\n".join(f"doc {i} text" for i in range(60)))
    (tmp / "c.jsonl").write_text('{"body": "x"}\n')
    pq.write_table(pa.table({"body": ["x", "y"]}), tmp / "c.parquet")
    return {
        "empty": ([tmp / "empty.txt"], "no non-empty documents"),
        "binary": ([tmp / "blob.bin"], "binary file"),
        "no-match": ([tmp / "nodocs"], "no files in"),
        "vocab": ([tmp / "small.txt", "--split-on", "line", "--vocab-size", "4096"], "vocab size"),
        "jsonl-field": ([tmp / "c.jsonl"], "no 'text' field"),
        "parquet-field": ([tmp / "c.parquet"], "no column 'text'"),
        "unknown": (["no-such-corpus"], "neither a built-in corpus"),
        "fraction": ([tmp / "small.txt", "--test-fraction", "1.5"], "test_fraction"),
    }


@pytest.mark.parametrize(
    "case",
    ["empty", "binary", "no-match", "vocab", "jsonl-field", "parquet-field", "unknown", "fraction"],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path, case: str, run_main: Callable
) -> None:
    args, message = _bad_inputs(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    runner = run if case == "binary" else run_main  # one real subprocess, end to end
    result = runner("prepare", *args, "--out", tmp_path / "out", "-q")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert message in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no out/, no temp folder
