"""A refusal names the option the user gave, not the config field behind it, and comes before
anything is written: the manifold sweep's grid, `induction train`'s shapes, `fit --n-boot`,
`validate --vocab-size`/`--preset`. `cli.common.configured` finds the option at fault."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from scalelab.cli.common import configured
from scalelab.config import Config
from scalelab.errors import ConfigError


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (("manifold", "sweep", "--seeds", "-1"), "error: --seeds -1: every seed must be >= 0"),
        (("manifold", "sweep", "--n-values", "4,100"), "error: --n-values 4,100: every n"),
        (("manifold", "sweep", "--dims", "2", "--betas", "1.5"), "error: --betas 1.5: beta"),
        (("manifold", "sweep", "--noise-std", "-1"), "error: --noise-std -1: noise_std"),
        (("induction", "train", "--n", "0"), "error: --n 0: max_len must be >= 1"),
        (("induction", "train", "--steps", "0"), "error: --steps 0: max_steps must be >= 1"),
        (("induction", "train", "--width", "30", "--heads", "4"), "error: --heads 4, --width 30:"),
        (("validate", "--corpus", "shakespeare", "--vocab-size", "10"), "error: --vocab-size 10:"),
        (("validate", "--corpus", "shakespeare", "--preset", "nope"), "error: unknown preset"),
    ],
)
def test_refusal_names_the_option_given(
    args: tuple[str, ...], start: str, run_cli: Callable, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    got = run_cli(*args, "--out", out)
    assert got.returncode == 2, got
    assert got.stderr.startswith(start), got.stderr
    assert "Traceback" not in got.stderr and len(got.stderr.splitlines()) == 1
    assert not out.exists()  # refused before the sweep or run folder was made
    if "--preset" in args:
        assert "(--preset)" in got.stderr and "quick" in got.stderr


def test_fit_refuses_a_negative_n_boot_at_parse_time(run_cli: Callable, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("tokens,loss\n1,2\n")
    got = run_cli("fit", table, "--x", "tokens", "--y", "loss", "--n-boot", "-1")
    assert got.returncode == 2 and "'--n-boot'" in got.stderr, got.stderr


@dataclasses.dataclass(frozen=True)
class _Pair(Config):
    a: int = 2
    b: int = 4

    def validate(self) -> None:
        if self.a < 1 or self.b < 1:
            raise ConfigError("a and b must be >= 1")
        if self.b % self.a:
            raise ConfigError(f"b {self.b} is not a multiple of a {self.a}")


def test_configured_names_the_field_at_fault_or_those_the_message_names() -> None:
    options = {"a": "--alpha", "b": "--beta"}
    assert configured(_Pair, options, a=1, b=3) == _Pair(1, 3)
    with pytest.raises(ConfigError, match=r"^--beta 0: a and b must be >= 1$"):
        configured(_Pair, options, a=2, b=0)
    # no field fails alone (4 and 6 each pass with the other's default): both named
    with pytest.raises(ConfigError, match=r"^--alpha 4, --beta 6: b 6 is not a multiple"):
        configured(_Pair, options, a=4, b=6)
