"""Retired option spellings (cli.common.renamed_option): the old spelling still works, means
what the new one means, prints one note naming the new option, and is absent from --help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sweeps_data import cli, make_store

# (command, retired spelling, the one name)
RENAMED = [
    (["train"], "--context-len", "--block-size"),
    (["sweep", "data"], "--context-len", "--block-size"),
    (["sweep", "model"], "--context-len", "--block-size"),
    (["fit"], "--context-len", "--block-size"),
    (["estimate"], "--precision", "--dtype"),
    (["validate"], "--id-precision", "--id-dtype"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_store(tmp_path_factory.mktemp("renamed") / "store")


@pytest.mark.parametrize(("command", "old", "new"), RENAMED)
def test_help_shows_only_the_one_name(
    command: list[str], old: str, new: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli([*command, "--help"], capsys)
    assert code == 0 and new in out and old not in out


def test_retired_spelling_works_and_names_the_new_option(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", "data", "--data", store, "--out", tmp_path / "s", "--plan", "--json"]
    args += ["--min-tokens", "2000", "--max-tokens", "8000", "--points", "2"]
    plans = {}
    for flag, value in (("--block-size", 16), ("--context-len", 16), ("--block-size", 64)):
        code, out, err = cli([*args, flag, value], capsys)
        assert code == 0, err
        plans[flag, value] = (json.loads(out), err)
    (new, new_err), (old, old_err) = plans["--block-size", 16], plans["--context-len", 16]
    assert old == new and new_err == ""  # the same runs, planned from the same context length
    assert old != plans["--block-size", 64][0]  # ... which the plan depends on
    assert old_err.strip() == "note: --context-len is deprecated; use --block-size"


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "--model", "no-such-run", "--precision", "fp16"],
        ["validate", "--corpus", "shakespeare", "--out", "{out}", "--id-precision", "fp16"],
    ],
)
def test_retired_dtype_spellings_reach_the_dtype_field(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The value given under the old spelling is the one the config checks (refused before any
    model loads or corpus is read), and the note comes first."""
    out = tmp_path / "v"
    code, _, err = cli([a.replace("{out}", str(out)) for a in args], capsys)
    note, refusal = err.strip().splitlines()
    assert code == 2 and note.startswith("note: --") and "is deprecated; use --" in note
    assert "'fp16'" in refusal and "dtype" in refusal and not out.exists()
