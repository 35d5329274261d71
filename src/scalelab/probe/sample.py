"""The seed paper's embedding protocol: one random window per document, a few random positions
per window, the hidden states of one (or several) layers at those positions.

Documents are held as one flat token array plus offsets (the token store's layout), so windows
and positions are drawn for all documents at once, without Python loops over tokens. Sampling
depends only on the documents, the options and the seed, never on how the model is batched, so
the same seed gives the same positions on any device and with any batch size.

Layer indices follow `GPT.hidden_states`: ``0`` is the embedding output (token + position),
``1 … n_layer`` the residual stream after each block (before the final LayerNorm), and
``n_layer + 1`` the output of the final LayerNorm, the tensor the language-model head reads.
The protocol's "final layer" is that last tensor (alias ``final``); ``final-pre-ln`` names the
residual stream after the last block.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from scalelab.errors import ConfigError, InputError
from scalelab.fields import positive_int
from scalelab.lm.load import StatesFn
from scalelab.probe.config import BATCH_TOKENS
from scalelab.progress import progress

LAYER_ALIASES: dict[str, int] = {"final": -1, "final-pre-ln": -2, "embeddings": 0}


def resolve_layer(layer: int | str, n_states: int) -> int:
    """A layer given as an index (negative counts from the end) or an alias, as an index in
    ``[0, n_states)``; out of range is a ConfigError naming the valid range."""
    if isinstance(layer, str):
        key = layer.strip().lower()
        if key in LAYER_ALIASES:
            layer = LAYER_ALIASES[key]
        else:
            try:
                layer = int(key)
            except ValueError:
                raise ConfigError(
                    f"layer {layer!r} is neither an index nor one of {sorted(LAYER_ALIASES)}; "
                    "give an index or one of those"
                ) from None
    if not -n_states <= layer < n_states:
        raise ConfigError(
            f"layer {layer} is out of range: this model has {n_states} hidden states "
            f"(0 = embeddings … {n_states - 1} = after the final LayerNorm); "
            f"use an index in [{-n_states}, {n_states - 1}] or one of {sorted(LAYER_ALIASES)}"
        )
    return layer % n_states


def layer_name(index: int, n_states: int) -> str:
    """Human name of a hidden-state index (for tables and plots)."""
    if index == 0:
        return "embeddings"
    if index == n_states - 1:
        return "final (after final LN)"
    if index == n_states - 2:
        return f"block {index} (final, before LN)"
    return f"block {index}"


@dataclass(frozen=True)
class TokenDocuments:
    """Tokenised documents: `tokens[offsets[i]:offsets[i + 1]]` is document i, with no
    separator tokens at its ends."""

    tokens: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.ndim != 1 or len(self.offsets) < 1 or self.offsets[0] != 0:
            raise InputError("offsets must be a 1-D array starting at 0")
        if self.offsets[-1] != len(self.tokens) or np.any(np.diff(self.offsets) < 0):
            raise InputError("offsets must be non-decreasing and end at len(tokens)")

    @classmethod
    def from_list(cls, docs: Sequence[np.ndarray | Sequence[int]]) -> TokenDocuments:
        lengths = np.array([len(d) for d in docs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = [np.asarray(d, dtype=np.int64) for d in docs]
        tokens = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64)
        return cls(tokens.astype(np.int64), offsets)

    @property
    def n_documents(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def select(self, index: np.ndarray) -> TokenDocuments:
        """The documents `index` (in that order), copied into a new flat array."""
        lengths = self.lengths[index]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        gather = ragged_arange(self.offsets[index], lengths)
        return TokenDocuments(np.asarray(self.tokens[gather], dtype=np.int64), offsets)


def ragged_arange(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of `arange(s, s + n)` for each (s, n), vectorised."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    seg_start = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=np.int64) - np.repeat(seg_start, lengths)
    return np.repeat(np.asarray(starts, dtype=np.int64), lengths) + within


@dataclass(frozen=True)
class Windows:
    """One window per document: tokens `[start, start + length)` of document `doc`."""

    doc: np.ndarray
    start: np.ndarray
    length: np.ndarray


def sample_windows(lengths: np.ndarray, context_len: int, rng: np.random.Generator) -> Windows:
    """One uniformly placed window of `context_len` tokens per non-empty document; a shorter
    document is taken whole (step 2 of the protocol)."""
    positive_int(context_len, "context_len")
    lengths = np.asarray(lengths, dtype=np.int64)
    doc = np.flatnonzero(lengths > 0)
    n = lengths[doc]
    room = np.maximum(n - context_len, 0) + 1
    start = np.floor(rng.random(len(doc)) * room).astype(np.int64)
    return Windows(doc=doc, start=start, length=np.minimum(n, context_len))


@dataclass(frozen=True)
class Positions:
    """Sampled positions: `offset` inside window `window` (an index into `Windows`), and the
    position group it was drawn for (0 unless positions are grouped by context range)."""

    window: np.ndarray
    offset: np.ndarray
    group: np.ndarray


def sample_positions(
    window_lengths: np.ndarray,
    valid: np.ndarray,
    per_doc: int,
    rng: np.random.Generator,
    *,
    groups: int = 1,
    context_len: int | None = None,
) -> Positions:
    """Up to `per_doc` distinct random valid positions per window (per window and group when
    `groups > 1`: group g covers offsets [g·T/G, (g+1)·T/G) of a T = `context_len` window).

    `valid` is the concatenation of the windows' masks (False at separator/special tokens).
    A window with fewer valid positions gives all of them. Vectorised: one random key per valid
    position, sorted within (window, group), the first `per_doc` kept.
    """
    positive_int(per_doc, "per_doc")
    positive_int(groups, "groups")
    window_lengths = np.asarray(window_lengths, dtype=np.int64)
    window = np.repeat(np.arange(len(window_lengths), dtype=np.int64), window_lengths)
    offset = ragged_arange(np.zeros(len(window_lengths), dtype=np.int64), window_lengths)
    if len(valid) != len(window):
        raise InputError("valid mask length differs from the total window length")
    keys = rng.random(len(window))  # drawn for every position so masks do not shift the stream
    keep = np.asarray(valid, dtype=bool)
    window, offset, keys = window[keep], offset[keep], keys[keep]
    span = int(context_len or (window_lengths.max() if len(window_lengths) else 1))
    group = np.minimum(offset * groups // span, groups - 1)
    order = np.lexsort((keys, group, window))
    window, offset, group = window[order], offset[order], group[order]
    cell = window * groups + group
    first = np.r_[True, cell[1:] != cell[:-1]] if len(cell) else np.zeros(0, dtype=bool)
    cell_start = np.maximum.accumulate(np.where(first, np.arange(len(cell)), 0))
    rank = np.arange(len(cell)) - cell_start
    take = rank < per_doc
    window, offset, group = window[take], offset[take], group[take]
    order = np.lexsort((offset, window))
    return Positions(window=window[order], offset=offset[order], group=group[order])


@dataclass(frozen=True)
class Sample:
    """Windows and positions drawn from documents, with the window tokens (flat, ragged)."""

    windows: Windows
    positions: Positions
    window_tokens: np.ndarray
    window_offsets: np.ndarray

    @property
    def n_points(self) -> int:
        return len(self.positions.window)

    def subset(self, index: np.ndarray) -> Sample:
        """The same windows with only the positions `index` (in that order): step 4's
        shuffle and cap, applied before the model runs so capped points cost nothing."""
        p = self.positions
        kept = Positions(window=p.window[index], offset=p.offset[index], group=p.group[index])
        return Sample(self.windows, kept, self.window_tokens, self.window_offsets)


def sample_protocol(
    docs: TokenDocuments,
    *,
    context_len: int,
    per_doc: int,
    seed: int,
    special_ids: Sequence[int] = (),
    groups: int = 1,
) -> Sample:
    """Steps 2–3 of the protocol without the model: a window per document, then positions
    that are not special (EOS/padding) tokens."""
    rng = np.random.default_rng(seed)
    windows = sample_windows(docs.lengths, context_len, rng)
    gather = ragged_arange(docs.offsets[windows.doc] + windows.start, windows.length)
    window_tokens = np.asarray(docs.tokens[gather], dtype=np.int64)
    valid = ~np.isin(window_tokens, np.asarray(list(special_ids), dtype=np.int64))
    positions = sample_positions(
        windows.length, valid, per_doc, rng, groups=groups, context_len=context_len
    )
    window_offsets = np.concatenate([[0], np.cumsum(windows.length)]).astype(np.int64)
    return Sample(windows, positions, window_tokens, window_offsets)


def sample_for_batches(
    docs: TokenDocuments,
    *,
    context_len: int,
    per_doc: int,
    batch_size: int,
    seed: int,
    special_ids: Sequence[int] = (),
    groups: int = 1,
) -> tuple[Sample, int]:
    """The protocol's sample and the positions per window it took: `per_doc`, or, where that
    gives fewer than two batches of `batch_size` distinct points (`distinct_points`: the MLE
    drops a point whose window prefix another point has), the fewest positions per window, up
    to the window's length, that give two batches (one where two cannot be had). A corpus of
    few long documents thus gets its batches from more positions of each window instead of
    being refused; the caller records the number taken. Positions are nested
    (`sample_positions` keeps the first keys of one stream), so the points at `per_doc` are
    among those taken."""

    def at(p: int) -> Sample:
        return sample_protocol(
            docs, context_len=context_len, per_doc=p, seed=seed, special_ids=special_ids,
            groups=groups,
        )  # fmt: skip

    sample = at(per_doc)
    have = distinct_points(sample)
    if have >= 2 * batch_size or per_doc >= context_len:
        return sample, per_doc
    most = at(context_len)
    most_have = distinct_points(most)
    target = 2 * batch_size if most_have >= 2 * batch_size else batch_size
    if have >= target:
        return sample, per_doc
    if most_have < target:  # fewer than one batch however many: the caller refuses
        return most, context_len
    lo, hi = per_doc, context_len  # at(lo) < target <= at(hi): the smallest such hi
    best = most
    while hi - lo > 1:
        mid = (lo + hi) // 2
        candidate = at(mid)
        if distinct_points(candidate) >= target:
            hi, best = mid, candidate
        else:
            lo = mid
    return best, hi


def distinct_points(sample: Sample) -> int:
    """Points whose window prefix no earlier point shares (`same_prefix_points`): those whose
    hidden states the MLE keeps, the others being exact copies."""
    return sample.n_points - len(same_prefix_points(sample)[0])


@torch.no_grad()
def extract(
    states_fn: StatesFn,
    sample: Sample,
    layers: Sequence[int],
    *,
    batch_tokens: int = BATCH_TOKENS,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    quiet: bool = True,
) -> np.ndarray:
    """Hidden states at the sampled positions, in the order of `sample.positions`: float32
    `[len(layers), n_points, width]`.

    Only windows holding a sampled position run, each cut after its last sampled position
    (exact: attention is causal, so later tokens never change earlier states). Windows run
    longest first in batches of about `batch_tokens` tokens, right-padded, so a batch's rows
    differ little in length and padding costs little; padded positions are never sampled.
    `dtype` bfloat16 runs the model under autocast (matmuls in bf16, norms and softmax in
    float32): about 2× faster on CPUs with native bf16, d within 1% (bench/estimate.py)."""
    pos = sample.positions
    if len(pos.window) == 0:
        raise InputError("no positions were sampled: the corpus has no usable tokens")
    run_len = np.zeros(len(sample.windows.length), dtype=np.int64)
    np.maximum.at(run_len, pos.window, pos.offset + 1)
    active = np.flatnonzero(run_len)
    order = active[np.argsort(-run_len[active], kind="stable")]  # longest first
    rank = np.full(len(run_len), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    point_order = np.argsort(rank[pos.window], kind="stable")
    point_window_rank = rank[pos.window][point_order]
    out: np.ndarray | None = None
    autocast = torch.autocast(torch.device(device).type, dtype, enabled=dtype != torch.float32)
    with progress("embedding windows", len(order), quiet=quiet) as advance, autocast:
        i, done, t0 = 0, 0, time.perf_counter()
        while i < len(order):
            t = int(run_len[order[i]])
            rows = order[i : i + max(1, batch_tokens // t)]
            idx, mask = pad_batch(sample, rows, run_len[rows], t)
            states = states_fn(idx.to(device), mask.to(device))
            lo, hi = np.searchsorted(point_window_rank, [i, i + len(rows)])
            sel = point_order[lo:hi]
            r = torch.as_tensor(point_window_rank[lo:hi] - i, device=device)
            c = torch.as_tensor(pos.offset[sel], device=device)
            for j, layer in enumerate(layers):
                h = states[layer][r, c].float().cpu().numpy()
                if out is None:
                    out = np.empty((len(layers), len(pos.window), h.shape[1]), np.float32)
                out[j, sel] = h
            done += int(run_len[rows].sum())
            advance(len(rows), info=f"{done / (time.perf_counter() - t0):,.0f} tokens/s")
            i += len(rows)
    assert out is not None
    dup, rep = same_prefix_points(sample)
    out[:, dup] = out[:, rep]
    return out


_HASH_BASES = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)  # odd 64-bit constants


def same_prefix_points(sample: Sample) -> tuple[np.ndarray, np.ndarray]:
    """(points, representatives): every point whose window prefix (its window's tokens up to
    and including its own) equals that of an earlier point, and that earlier point.

    Such points have the same hidden state in exact arithmetic, and the MLE drops exact
    duplicates. But a GPU picks kernels by batch shape, so the same prefix run in batches of
    other lengths comes out a few ulps apart; those near-duplicates then survive and move d
    (by 1% on a test model on an H200). `extract` copies each representative's state to its
    copies, so duplicates are exact on every device; on the CPU they already are.

    Prefixes are matched by two polynomial hashes mod 2^64 and then compared token by token."""
    pos = sample.positions
    none = np.zeros(0, dtype=np.int64)
    if len(pos.window) < 2:
        return none, none
    length = sample.windows.length
    within = ragged_arange(np.zeros(len(length), dtype=np.int64), length)
    tokens = sample.window_tokens.astype(np.uint64) + np.uint64(1)
    first_token = sample.window_offsets[pos.window]
    end = first_token + pos.offset + 1  # one past the point's own token, in the flat array
    keys = [pos.offset.astype(np.uint64)]
    for base in _HASH_BASES:
        powers = np.ones(max(int(length.max()), 1), dtype=np.uint64)
        powers[1:] = np.cumprod(np.full(len(powers) - 1, base, dtype=np.uint64))
        sums = np.concatenate([[np.uint64(0)], np.cumsum(tokens * powers[within])])
        keys.append(sums[end] - sums[first_token])  # wraps mod 2^64, as the hash needs
    order = np.lexsort(keys[::-1])  # stable: within equal keys, earlier points first
    ordered = [key[order] for key in keys]
    starts = np.r_[True, np.any([k[1:] != k[:-1] for k in ordered], axis=0)]
    head = order[np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))]
    copies = ~starts
    if not copies.any():
        return none, none
    dup, rep = order[copies], head[copies]
    by_point = np.argsort(dup)
    dup, rep = dup[by_point], rep[by_point]
    n = pos.offset[dup] + 1
    same = (
        sample.window_tokens[ragged_arange(first_token[dup], n)]
        == (sample.window_tokens[ragged_arange(first_token[rep], n)])
    )
    verified = np.logical_and.reduceat(same, np.cumsum(n) - n)
    return dup[verified], rep[verified]


def tokens_to_run(sample: Sample) -> int:
    """Tokens `extract` feeds the model: each window with a sampled position, up to its last."""
    run_len = np.zeros(len(sample.windows.length), dtype=np.int64)
    np.maximum.at(run_len, sample.positions.window, sample.positions.offset + 1)
    return int(run_len.sum())


def pad_batch(
    sample: Sample, rows: np.ndarray, lengths: np.ndarray, t: int
) -> tuple[Tensor, Tensor]:
    """Right-padded token ids `[len(rows), t]` (the first `lengths` tokens of each window)
    and the mask of real tokens."""
    mask = np.arange(t)[None, :] < lengths[:, None]
    idx = np.zeros((len(rows), t), dtype=np.int64)
    idx[mask] = sample.window_tokens[ragged_arange(sample.window_offsets[rows], lengths)]
    return torch.from_numpy(idx), torch.from_numpy(mask)
