"""A refusal names the option the user gave, not the config field behind it, and comes before
anything is written: the manifold sweep's grid, `induction train`/`sweep`'s shapes, `train`
and `sweep data`'s training options and grid, `fit`/`forecast --n-boot`, `exponents --d-se`,
`validate --vocab-size`/`--preset`. `cli.common.configured` finds the option at fault."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from scalelab.cli.common import configured
from scalelab.config import Config
from scalelab.errors import ConfigError
from scalelab.text.corpora import Corpus, Document
from scalelab.text.store import prepare_corpus


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny real token store (BPE 300) for the commands that read one before refusing."""
    docs = tuple(Document(f"d{i}", f"line {i} of a small corpus, word {i % 7}. " * 20)
                 for i in range(40))  # fmt: skip
    out = tmp_path_factory.mktemp("refusals") / "store"
    return prepare_corpus(Corpus("mini", "CC0", "test", docs), out, vocab_size=300, quiet=True)


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (("manifold", "sweep", "--seeds", "-1"), "error: --seeds -1: every seed must be >= 0"),
        (("manifold", "sweep", "--n-values", "4,100"), "error: --n-values 4,100: every n"),
        (("manifold", "sweep", "--dims", "2", "--betas", "1.5"), "error: --betas 1.5: beta"),
        (("manifold", "sweep", "--noise-std", "-1"), "error: --noise-std -1: noise_std"),
        (("induction", "train", "--n", "0"), "error: --n 0: n must be >= 1"),
        (("induction", "train", "--steps", "0"), "error: --steps 0: max_steps must be >= 1"),
        (("induction", "train", "--width", "30", "--heads", "4"), "error: --heads 4, --width 30:"),
        (("validate", "--corpus", "shakespeare", "--vocab-size", "10"), "error: --vocab-size 10:"),
        (("validate", "--corpus", "shakespeare", "--preset", "nope"), "error: unknown preset"),
        (("induction", "sweep", "--alphabets", "2"), "error: --alphabets 2: induction sweeps"),
        (("train", "--data", "STORE", "--preset", "tiny", "--warmup-steps", "-1"),
         "error: --warmup-steps -1: warmup_steps must be >= 0"),
        (("train", "--data", "STORE", "--preset", "tiny", "--max-steps", "0"),
         "error: --max-steps 0:"),
        (("sweep", "data", "--data", "STORE", "--preset", "tiny", "--points", "1"),
         "error: --points 1: a grid needs at least 2 points"),
        (("sweep", "data", "--data", "STORE", "--preset", "tiny", "--batch-size", "0"),
         "error: --batch-size 0:"),
        (("corpus", "prepare", "shakespeare", "--val-fraction", "0.5", "--test-fraction", "0.6"),
         "error: --val-fraction 0.5, --test-fraction 0.6: val_fraction + test_fraction"),
    ],
)  # fmt: skip
def test_refusal_names_the_option_given(
    args: tuple[str, ...], start: str, run_cli: Callable, tmp_path: Path, store: Path
) -> None:
    out = tmp_path / "out"
    got = run_cli(*[store if a == "STORE" else a for a in args], "--out", out)
    assert got.returncode == 2, got
    assert got.stderr.startswith(start), got.stderr
    assert "Traceback" not in got.stderr and len(got.stderr.splitlines()) == 1
    assert not out.exists()  # refused before the sweep or run folder was made
    if "nope" in args:
        assert "(--preset)" in got.stderr and "quick" in got.stderr


def test_negative_counts_are_refused_at_parse_time(run_cli: Callable, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("tokens,loss\n1,2\n")
    for args, option in (
        # fit, forecast, exponents: their options are their configs' fields; the config refuses,
        # naming the option
        (("fit", table, "--x", "tokens", "--y", "loss", "--n-boot", "-1"), "--n-boot -1: n_boot"),
        (("forecast", table, "--n-boot", "-1"), "--n-boot -1: n_boot must be >= 0"),
        (("exponents", "--d", "2", "--d-se", "-1"), "--d-se -1: d_se must be >= 0"),
    ):
        got = run_cli(*args)
        assert got.returncode == 2 and option in got.stderr, got.stderr


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
