"""Byte-level BPE tokenizers (HF `tokenizers`): trained on a corpus, or loaded from disk.

Byte-level means every string round-trips exactly (`decode(encode(t)) == t`): there is no
normaliser and no unknown token. `<|endoftext|>` is the only special token (id 0 when we
train); the token store appends it after every document.

Vocabulary rule: a merge is only learned from a pair of tokens seen at least
`MIN_FREQUENCY` (2) times in the training text, so a vocabulary larger than
256 bytes + 1 special + (number of such merges) is more than the corpus supports and
`train_bpe` refuses it, naming the largest size that works.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from scalelab.errors import ConfigError, InputError

EOT = "<|endoftext|>"
MIN_FREQUENCY = 2
#: 256 byte tokens + the end-of-text token.
MIN_VOCAB_SIZE = 257
#: Common end-of-text/end-of-sequence spellings in pretrained tokenizers, tried in order.
_EOT_CANDIDATES = (EOT, "</s>", "<eos>", "<|end_of_text|>", "[SEP]")


def train_bpe(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """Train a byte-level BPE with exactly `vocab_size` tokens (including `<|endoftext|>`)."""
    if not isinstance(vocab_size, int) or vocab_size < MIN_VOCAB_SIZE:
        raise ConfigError(
            f"vocab size must be at least {MIN_VOCAB_SIZE} (256 bytes + {EOT}), not {vocab_size}"
        )
    tok = _train(texts, vocab_size)
    got = tok.get_vocab_size()
    if got < vocab_size:
        raise InputError(
            f"vocab size {vocab_size} is more than this corpus supports: byte-level BPE finds "
            f"only {got - MIN_VOCAB_SIZE} merges of pairs seen at least {MIN_FREQUENCY} times; "
            f"use --vocab-size {got} or less, or a larger corpus"
        )
    return tok


def supported_vocab_size(texts: Iterable[str]) -> int:
    """The largest vocabulary `train_bpe` accepts for these texts: every merge they support."""
    return _train(texts, 1 << 20).get_vocab_size()


def _train(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_FREQUENCY,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,  # its own bar writes blank lines to stdout off a terminal
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def load_tokenizer(path: str | Path) -> Tokenizer:
    """A `tokenizer.json`, or a HF tokenizer folder holding one, or a GPT-2 style folder
    holding `vocab.json` + `merges.txt` (read as a byte-level BPE)."""
    path = Path(path)
    gpt2_files = [path / "vocab.json", path / "merges.txt"]
    if not (path / "tokenizer.json").is_file() and all(f.is_file() for f in gpt2_files):
        return _load_vocab_merges(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        raise InputError(
            f"no tokenizer at {path}: give a tokenizer.json file or a folder holding one "
            "(or vocab.json + merges.txt)"
        )
    try:
        return Tokenizer.from_file(str(file))
    except Exception as err:  # tokenizers raises a bare Exception on malformed files
        raise InputError(f"{file} is not a valid tokenizer.json ({err}); re-create it") from err


def _load_vocab_merges(folder: Path) -> Tokenizer:
    try:
        model = models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt"))
    except Exception as err:  # tokenizers raises a bare Exception on malformed files
        raise InputError(f"{folder}: unreadable vocab.json/merges.txt ({err})") from err
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def eot_id(tok: Tokenizer, folder: str | Path | None = None) -> int:
    """The id of the end-of-text token: `<|endoftext|>`, else the folder's declared
    eos_token, else a common spelling of it."""
    candidates = list(_EOT_CANDIDATES)
    config = Path(folder) / "tokenizer_config.json" if folder else None
    if config is not None and config.is_file():
        eos = json.loads(config.read_text(encoding="utf-8")).get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if isinstance(eos, str):
            candidates.insert(1, eos)
    for token in candidates:
        tid = tok.token_to_id(token)
        if tid is not None:
            return tid
    raise InputError(
        f"the tokenizer has no end-of-text token (tried {candidates}); add {EOT} to it"
    )
