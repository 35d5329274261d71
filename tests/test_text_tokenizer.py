"""Byte-level BPE: exact round trips, exact vocabulary size, deterministic, clear limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from scalelab.errors import ConfigError, InputError
from scalelab.text.corpora import load_corpus
from scalelab.text.tokenizer import EOT, eot_id, load_tokenizer, train_bpe


@pytest.fixture(scope="module")
def texts() -> list[str]:
    docs = load_corpus("python-stdlib").documents
    return [d.text[:3000] for d in docs[:120]]


@pytest.fixture(scope="module")
def tok(texts: list[str]) -> Tokenizer:
    return train_bpe(texts, 600)


def test_vocab_is_exact_and_eot_is_id_zero(tok: Tokenizer) -> None:
    assert tok.get_vocab_size() == 600
    assert tok.token_to_id(EOT) == 0 == eot_id(tok)
    assert sorted(tok.get_vocab().values()) == list(range(600))


def test_training_is_deterministic(texts: list[str], tok: Tokenizer) -> None:
    assert train_bpe(texts, 600).to_str() == tok.to_str()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_round_trips_exactly(tok: Tokenizer, text: str) -> None:
    assert tok.decode(tok.encode(text).ids) == text


def test_real_text_round_trips_and_compresses(tok: Tokenizer, texts: list[str]) -> None:
    sample = "\r\n\t  émigré 🙂 naïve\x0b" + texts[5]
    ids = tok.encode(sample).ids
    assert tok.decode(ids) == sample
    assert len(ids) < len(sample.encode()) / 1.5  # 343 merges learned from code compress code


def test_too_large_vocab_names_the_largest_that_works(texts: list[str]) -> None:
    with pytest.raises(InputError, match=r"use --vocab-size (\d+) or less") as err:
        train_bpe(texts[:2], 5000)
    largest = int(err.value.args[0].split("--vocab-size ")[1].split()[0])
    assert 257 < largest < 5000
    assert train_bpe(texts[:2], largest).get_vocab_size() == largest
    with pytest.raises(ConfigError, match="at least 257"):
        train_bpe(texts, 200)


def test_load_tokenizer_file_and_folder(tmp_path: Path, tok: Tokenizer) -> None:
    tok.save(str(tmp_path / "tokenizer.json"))
    assert load_tokenizer(tmp_path).to_str() == tok.to_str()
    from_file = load_tokenizer(tmp_path / "tokenizer.json")
    assert from_file.encode("x = 1").ids == tok.encode("x = 1").ids
    with pytest.raises(InputError, match="no tokenizer at"):
        load_tokenizer(tmp_path / "nothing")
    (tmp_path / "broken.json").write_text('{"not": "a tokenizer"}')
    with pytest.raises(InputError, match=r"not a valid tokenizer\.json"):
        load_tokenizer(tmp_path / "broken.json")


def test_gpt2_style_vocab_and_merges_folder(tmp_path: Path, tok: Tokenizer) -> None:
    tok.model.save(str(tmp_path))  # writes vocab.json + merges.txt
    loaded = load_tokenizer(tmp_path)
    sample = "def f(x):\n    return x + 1  # ünïcode"
    assert loaded.encode(sample).ids == tok.encode(sample).ids
    assert loaded.decode(loaded.encode(sample).ids) == sample
    assert eot_id(loaded) == 0


def test_eot_id_of_foreign_tokenizers(tmp_path: Path) -> None:
    vocab = {"<unk>": 0, "</s>": 1, "<|im_end|>": 2, "hello": 3}
    foreign = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    foreign.pre_tokenizer = pre_tokenizers.Whitespace()
    assert eot_id(foreign) == 1
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    assert eot_id(foreign, tmp_path) == 2
    bare = Tokenizer(models.WordLevel({"<unk>": 0, "hi": 1}, unk_token="<unk>"))
    with pytest.raises(InputError, match="no end-of-text token"):
        eot_id(bare)
