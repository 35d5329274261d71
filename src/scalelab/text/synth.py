"""Synthetic corpora whose data-scaling exponent is set by a knob, made like any corpus.

Why: the real corpora scalelab has measured all scale with exponents near 0.08, so a
predictor that always says 0.08 scores as well as one that reads the intrinsic dimension.
These generators give text whose exponent is known (or moved in a known direction) over a
wide range; they produce plain documents, so `prepare`, sweeps and `validate` treat them as
they treat any corpus. Every generator is seeded (numpy Generator) and deterministic, and a
larger `tokens` extends the same document stream (a smaller corpus is a prefix of a larger).

Families:

- ``facts`` (Hutter 2021, arXiv 2102.04074): every document states facts
  ``key = value ;``. Keys are drawn from a Zipf law with exponent 1 + a over `words^key_len`
  keys; each key has one fixed random value of `value_len` words. Why: it is the simplest
  model with an exact learning curve, error `U(n) ~ n^-(a/(1+a))` for a learner that
  memorises (`synth_theory.py`), so the knob a moves the exponent from 0.2 (a = 0.25) to
  0.67 (a = 2) while the data range scalelab sweeps stays inside the power-law regime.
  The exponent is that of the excess loss L - E (E, the key law's entropy, is exact); a
  power law fitted without E sees far less (docs/corpora.md).
- ``markov``: a bigram chain over `states` words whose every row is a Zipf law (1 + a) over
  a fixed random ordering of the words. Why: the learning is estimation of a stochastic
  language (every context is seen often; what is learned is the tail of each row), not
  memorising deterministic facts. Its irreducible loss is exact (the rows' entropy); its
  exponent is a/(1+a) only asymptotically, for counts per context m with
  states << m << states^(1+a). With a word vocabulary small enough for one token per word,
  that window is narrow: over a sweep an add-1/S count learner's exponent rises with a
  (tested), an add-1/2 learner's stays near 0.7 for every a. No closed form pins it.

Symbols are short letter words (`WORDS`) separated by spaces, so a byte-level BPE given
enough vocabulary (`supported_vocab_size`) spells each as one token; the tests check it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scalelab import seeds
from scalelab.config import Config, option
from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json, atomic_write_text, provenance
from scalelab.text.synth_theory import (
    FactsTheory,
    facts_theory,
    markov_entropy_per_token,
    zipf_entropy,
    zipf_probabilities,
)
from scalelab.text.tokenizer import supported_vocab_size

PREFIX = "synth:"
#: The data range scalelab's sweeps cover; `effective_exponent` is reported over it.
SWEEP_RANGE_TOKENS = (2_500, 1_000_000)
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
#: 980 distinct consonant-vowel-consonant words; a corpus uses the first `words` of them.
WORDS: tuple[str, ...] = tuple(
    _CONSONANTS[i % 14] + _VOWELS[(i // 14) % 5] + _CONSONANTS[i // 70] for i in range(14 * 5 * 14)
)
_CHUNK = 1 << 16  # draws per batch: fixed, so a longer corpus extends a shorter one


@dataclass(frozen=True)
class SynthConfig(Config):
    """What every family takes: the corpus size in tokens (each symbol one token, plus one
    end-of-text per document) and the seed."""

    tokens: int = option(1_250_000, "Corpus size (one token per symbol, EOT per doc).")
    seed: int = option(0, "Random seed (recorded with the results).")

    def validate(self) -> None:
        _int_range(self.tokens, "tokens", 100, 10**9)
        _int_range(self.seed, "seed", 0, 2**63 - 1)


@dataclass(frozen=True)
class FactsConfig(SynthConfig):
    """A facts corpus: keys Zipf(1 + a) over words^key_len keys, `value_len` value words.

    Defaults: 2^24 keys keep the truncated law within 0.02 of a/(1+a) over 2.5k-1M tokens
    for a >= 0.5 (0.015 at a = 0.25; `FactsTheory.effective_exponent`)."""

    a: float = 0.5
    words: int = 64
    key_len: int = 4
    value_len: int = 6
    facts_per_doc: int = 16

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.a, int | float) or not 0.05 <= self.a <= 20:
            raise ConfigError(f"a must be a number in [0.05, 20], got {self.a!r}; try a=0.5")
        if self.words not in (4, 8, 16, 32, 64, 128, 256):
            raise ConfigError(
                f"words must be a power of two from 4 to 256, got {self.words!r}; try words=64"
            )
        bits = self.words.bit_length() - 1
        _int_range(self.key_len, "key_len", 1, 60 // bits)
        _int_range(self.value_len, "value_len", 1, 64 // bits)
        _int_range(self.facts_per_doc, "facts_per_doc", 1, 10_000)

    @property
    def tokens_per_doc(self) -> int:
        return self.facts_per_doc * (self.key_len + self.value_len + 2) + 1

    def theory(self) -> FactsTheory:
        return facts_theory(self.a, self.words, self.key_len, self.value_len, self.facts_per_doc)


def _int_range(value: Any, name: str, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ConfigError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")


# --- facts -------------------------------------------------------------------------------


def zipf_ranks(rng: np.random.Generator, s: float, K: int, n: int) -> np.ndarray:
    """`n` draws of `k` in 1..K with `P(k) ∝ k^-s`: numpy's Zipf law, rejecting k > K."""
    parts, got = [], 0
    while got < n:
        draw = rng.zipf(s, _CHUNK)
        draw = draw[(draw > 0) & (draw <= K)]  # numpy returns int64 max on overflow
        parts.append(draw)
        got += draw.size
    return np.concatenate(parts)[:n]


def _splitmix64(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _scramble(x: np.ndarray, bits: int, odd: tuple[int, int, int]) -> np.ndarray:
    """A seeded bijection of `bits`-bit integers (odd multipliers and xor-shifts), so that
    frequent keys are spelled by unrelated words."""
    mask, shift = np.uint64((1 << bits) - 1), np.uint64(max(1, bits // 2))
    z = (x.astype(np.uint64) * np.uint64(odd[0]) + np.uint64(odd[2])) & mask
    z ^= z >> shift
    z = (z * np.uint64(odd[1])) & mask
    return z ^ (z >> shift)


def _digits(x: np.ndarray, bits: int, count: int) -> np.ndarray:
    shifts = np.arange(count, dtype=np.uint64) * np.uint64(bits)
    return ((x[:, None] >> shifts[None, :]) & np.uint64((1 << bits) - 1)).astype(np.int64)


def facts_keys(cfg: FactsConfig, n_facts: int) -> np.ndarray:
    """The Zipf ranks (1 = most frequent key) of the corpus's first `n_facts` facts."""
    rng = np.random.default_rng([cfg.seed, seeds.SYNTH_SAMPLES])
    return zipf_ranks(rng, 1.0 + cfg.a, cfg.words**cfg.key_len, n_facts)


def facts_symbols(cfg: FactsConfig, ranks: np.ndarray) -> np.ndarray:
    """Word indices of each fact's key and value, shape (n, key_len + value_len)."""
    tables = np.random.default_rng([cfg.seed, seeds.SYNTH_TABLES])
    odd = tuple(int(v) | 1 for v in tables.integers(1, 2**62, size=3))
    salt = np.uint64(int(tables.integers(0, 2**62)))
    bits = cfg.words.bit_length() - 1
    index = ranks.astype(np.uint64) - np.uint64(1)
    key = _digits(_scramble(index, bits * cfg.key_len, odd), bits, cfg.key_len)
    value = _digits(_splitmix64(index ^ salt), bits, cfg.value_len)
    return np.concatenate([key, value], axis=1)


def facts_documents(cfg: FactsConfig) -> list[str]:
    """Documents of `facts_per_doc` facts ` k1 .. kK = v1 .. vV ;` (each starts with a space
    so that every word is spelled the same way, with its leading space)."""
    n_docs = math.ceil(cfg.tokens / cfg.tokens_per_doc)
    sym = facts_symbols(cfg, facts_keys(cfg, n_docs * cfg.facts_per_doc))
    vocab = np.array((*WORDS[: cfg.words], "=", ";"), dtype=object)
    n = sym.shape[0]
    marks = np.full((n, 1), cfg.words)
    parts = [sym[:, : cfg.key_len], marks, sym[:, cfg.key_len :], marks + 1]
    table = vocab[np.concatenate(parts, axis=1)].reshape(n_docs, -1)
    return [" " + " ".join(row) for row in table]


# --- markov ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkovConfig(SynthConfig):
    """A bigram chain over `states` words: from each word the next is the r-th of a fixed
    random ordering of all words with probability ∝ r^-(1+a); documents of `doc_len` words,
    the first uniform."""

    a: float = 1.0
    states: int = 256
    doc_len: int = 127

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.a, int | float) or not 0.05 <= self.a <= 20:
            raise ConfigError(f"a must be a number in [0.05, 20], got {self.a!r}; try a=1")
        _int_range(self.states, "states", 2, len(WORDS))
        _int_range(self.doc_len, "doc_len", 2, 100_000)


def markov_documents(cfg: MarkovConfig) -> list[str]:
    """Documents of `doc_len` words drawn from the chain, in fixed-size batches."""
    S, L = cfg.states, cfg.doc_len
    tables = np.random.default_rng([cfg.seed, seeds.SYNTH_TABLES])
    order = np.argsort(tables.random((S, S)), axis=1)  # order[s, r]: the r-th likeliest next
    cdf = np.cumsum(zipf_probabilities(1.0 + cfg.a, S))
    rng = np.random.default_rng([cfg.seed, seeds.SYNTH_SAMPLES])
    vocab = np.array(WORDS[:S], dtype=object)
    n_docs, batch = math.ceil(cfg.tokens / (L + 1)), max(1, _CHUNK // L)
    out: list[str] = []
    while len(out) < n_docs:
        u = rng.random((batch, L))
        seq = np.empty((batch, L), dtype=np.int64)
        seq[:, 0] = np.minimum((u[:, 0] * S).astype(np.int64), S - 1)
        ranks = np.minimum(np.searchsorted(cdf, u[:, 1:], side="right"), S - 1)
        for t in range(1, L):
            seq[:, t] = order[seq[:, t - 1], ranks[:, t - 1]]
        out.extend(" " + " ".join(row) for row in vocab[seq])
    return out[:n_docs]


def _markov_prediction(cfg: MarkovConfig) -> dict[str, Any]:
    return {
        "exponent": cfg.a / (1.0 + cfg.a),
        "exponent_form": (
            "a/(1+a) only asymptotically, while the counts per context m satisfy "
            "states << m << states^(1+a); over a sweep it rises with a but is not pinned"
        ),
        "irreducible_nats_per_token": markov_entropy_per_token(cfg.a, cfg.states, cfg.doc_len),
        "row_entropy_nats": zipf_entropy(1.0 + cfg.a, cfg.states),
    }


# --- registry and specs ------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """A generator: its config class, documents from a config, and its prediction."""

    config: type[SynthConfig]
    documents: Callable[[Any], list[str]]
    theory: Callable[[Any], dict[str, Any]]
    summary: str


def _facts_prediction(cfg: FactsConfig) -> dict[str, Any]:
    th = cfg.theory()
    lo, hi = SWEEP_RANGE_TOKENS
    return {
        "exponent": th.exponent,
        "exponent_form": "a/(1+a) (Hutter 2021), excess loss of the ideal memorising learner",
        "effective_exponent": th.effective_exponent(lo, hi),
        "effective_range_tokens": [lo, hi],
        "irreducible_nats_per_token": th.irreducible_nats_per_token,
        "key_entropy_nats": th.key_entropy_nats,
        "value_nats": th.value_nats,
        "tokens_per_fact": th.tokens_per_fact,
        "keys": th.keys,
        "ideal_loss_nats_per_token": {
            str(n): float(th.loss_per_token(n)[0]) for n in (2_500, 25_000, 250_000, 1_000_000)
        },
    }


def _families() -> dict[str, Family]:
    return {
        "facts": Family(FactsConfig, facts_documents, _facts_prediction, "Zipf facts"),
        "markov": Family(MarkovConfig, markov_documents, _markov_prediction, "Zipf bigram"),
    }


def family(name: str) -> Family:
    """The family called `name` (ConfigError listing the families otherwise)."""
    families = _families()
    if name not in families:
        raise ConfigError(f"unknown synthetic family {name!r}; choose one of {', '.join(families)}")
    return families[name]


def make_config(name: str, params: dict[str, Any] | Iterable[str] = ()) -> SynthConfig:
    """A family's config from `{name: value}` or `["name=value", ...]` (strings are parsed
    to the field's type)."""
    cls = family(name).config
    fields = {f.name: f for f in dataclasses.fields(cls)}
    pairs = params.items() if isinstance(params, dict) else (_split(p) for p in params)
    values: dict[str, Any] = {}
    for key, raw in pairs:
        if key not in fields:
            raise ConfigError(f"unknown {name} parameter {key!r}; use one of {', '.join(fields)}")
        values[key] = _parse(raw, type(fields[key].default), key)
    return cls(**values)


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"parameter {pair!r} is not NAME=VALUE; give for example a=0.5")
    return key.strip(), value.strip()


def _parse(raw: Any, kind: type, key: str) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"parameter {key}={raw!r} is not a number; give e.g. {key}=1") from None
    if kind is int:
        if not value.is_integer():
            raise ConfigError(f"parameter {key} must be an integer, got {raw!r}")
        return int(value)
    return value


def parse_spec(spec: str) -> SynthConfig:
    """`synth:FAMILY[:name=value,...]` (e.g. `synth:facts:a=0.5,tokens=200000`) → config."""
    body = spec.removeprefix(PREFIX)
    name, _, rest = body.partition(":")
    return make_config(name, [p for p in rest.split(",") if p.strip()])


def spec_of(cfg: SynthConfig) -> str:
    """The canonical spec naming this exact corpus (every field written out)."""
    name = family_name(cfg)
    fields = ",".join(f"{f.name}={getattr(cfg, f.name)}" for f in dataclasses.fields(cfg))
    return f"{PREFIX}{name}:{fields}"


def family_name(cfg: SynthConfig) -> str:
    """The name of the family `cfg` belongs to."""
    return next(k for k, f in _families().items() if f.config is type(cfg))


def documents(cfg: SynthConfig) -> list[str]:
    """The corpus's documents, in order."""
    return family(family_name(cfg)).documents(cfg)


def prediction(cfg: SynthConfig) -> dict[str, Any]:
    """What theory says about this corpus: exponent, irreducible loss, ideal-learner curve."""
    return family(family_name(cfg)).theory(cfg)


# --- writing a corpus file ----------------------------------------------------------------

LICENSE = "CC0-1.0 (generated by scalelab)"


def meta_path(out: Path) -> Path:
    """Where `write_corpus` records the spec and prediction: FILE.meta.json, DIR/synth.json."""
    return out / "synth.json" if _is_dir_target(out) else out.with_name(out.name + ".meta.json")


def _is_dir_target(out: Path) -> bool:
    return out.is_dir() or out.suffix == ""


def write_corpus(cfg: SynthConfig, out: str | Path) -> dict[str, Any]:
    """Write the corpus to `out` in a form `load_corpus` reads, and the spec, prediction,
    BPE vocabulary size and provenance beside it. `out`: a `.jsonl` file (one document per
    line, field "text"), a `.txt` file (documents separated by blank lines), or a folder
    (one `.txt` file per document). Every file is written atomically."""
    out = Path(out)
    if out.suffix not in ("", ".jsonl", ".ndjson", ".txt"):
        raise ConfigError(
            f"--out {out} has suffix {out.suffix!r}; give a .jsonl or .txt file or a folder"
        )
    docs = documents(cfg)
    if _is_dir_target(out):
        _write_folder(out, docs)
    elif out.suffix == ".txt":
        atomic_write_text(out, "\n\n".join(docs) + "\n")
    else:
        atomic_write_text(out, "".join(json.dumps({"text": d}) + "\n" for d in docs))
    summary = {
        "out": str(out),
        "spec": spec_of(cfg),
        "family": family_name(cfg),
        "config": cfg.to_dict(),
        "n_documents": len(docs),
        "n_tokens_one_per_symbol": sum(d.count(" ") + 1 for d in docs),
        "vocab_size": supported_vocab_size(docs),
        "prediction": prediction(cfg),
    }
    atomic_write_json(meta_path(out), {**summary, "provenance": provenance()})
    return summary


def _write_folder(out: Path, docs: list[str]) -> None:
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"folder {out} is not empty; remove it or give a new --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        width = len(str(len(docs)))
        for i, doc in enumerate(docs):
            (tmp / f"{i:0{width}d}.txt").write_text(doc, encoding="utf-8")
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
