"""The CLI starts without its heavy libraries: the top-level help lists every command from
`scalelab.cli.COMMANDS` without importing them, and the one-line helps there match each
command's own docstring. `import scalelab` does not import torch."""

import inspect
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scalelab.cli import COMMANDS, load_command, short_help
from scalelab.cli.induction import HEADS

SRC = str(Path(__file__).resolve().parents[1] / "src")
HEAVY = ("torch", "matplotlib", "pandas", "numba", "transformers", "sklearn", "scipy")

PROBE = """
import json, sys
from scalelab.cli import main
try:
    main({args!r})
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def _heavy_imported(args: list[str]) -> list[str]:
    code = PROBE.format(args=args, heavy=HEAVY)
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (["--help"], set()),
        (["exponents", "--d", "8"], set()),
        (["fit", "--help"], set()),
        (["forecast", "--help"], set()),
        (["id", "--help"], {"torch", "numba"}),
        # options whose defaults and help come from configs read them without torch
        (["validate", "--help"], set()),
        (["demo", "--help"], set()),
        (["validate-many", "--help"], set()),
        (["train", "--help"], set()),
        (["sweep", "data", "--help"], set()),
        (["sweep", "model", "--help"], set()),
        (["report", "--help"], set()),
        (["corpus", "list"], set()),
        (["manifold", "sweep", "--help"], set()),
        (["manifold", "construct", "--help"], set()),
        # the induction group lists its torch experiments without importing them
        (["induction", "--help"], set()),
        (["induction", "solve", "1", "2", "1"], set()),
    ],
)
def test_commands_import_only_what_they_need(args: list[str], allowed: set[str]) -> None:
    assert set(_heavy_imported(args)) <= allowed


def test_id_on_points_runs_without_torch(tmp_path: Path) -> None:
    """`scalelab id` on a CPU-sized .npy file searches neighbours without torch (the
    torch-free float32 search; numba brings scipy's BLAS bindings), and `--device` is what
    brings torch in."""
    from scalelab.intrinsic.synthetic import curved_manifold

    path = tmp_path / "points.npy"
    np.save(path, curved_manifold(300, 4, 16, seed=0))
    heavy = set(_heavy_imported(["id", str(path), "--quiet", "--json", "--batch-size", "100"]))
    assert "numba" in heavy  # the search really ran
    assert not heavy & {"torch", "matplotlib", "pandas", "sklearn", "transformers"}
    with_device = _heavy_imported(
        ["id", str(path), "--quiet", "--device", "cpu", "--batch-size", "100"]
    )
    assert "torch" in with_device


def test_import_scalelab_is_cheap() -> None:
    code = "import sys, scalelab; print([m for m in ('torch', 'numpy') if m in sys.modules])"
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_help_matches_the_command(name: str) -> None:
    own = inspect.cleandoc(load_command(name).help or "").split("\n\n")[0].replace("\n", " ")
    listed = COMMANDS[name][1]
    for limit in (40, 60, 1000):
        assert short_help(listed, limit) == short_help(own, limit)


def test_short_help_keeps_whole_words() -> None:
    assert short_help("One two. Three.", 100) == "One two."
    assert short_help("alpha beta gamma delta", 14) == "alpha beta..."
    assert short_help("short", 5) == "short"


@pytest.mark.parametrize("name", list(HEADS))
def test_listed_induction_help_matches_the_command(name: str) -> None:
    own = inspect.cleandoc(load_command(name, HEADS).help or "").split("\n\n")[0]
    assert HEADS[name][1] == own.replace("\n", " ")
