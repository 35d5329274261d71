"""Small softmax-attention transformers for the induction-heads task.

L layers of causal multi-head softmax attention (h heads, width m), learned, sinusoidal or
relative positions, optional MLP and LayerNorm (attention-only when both are off), and a linear
read-out over S + 1 classes (the S symbols and ⊥, class index S).

A BOS token (id S, position 0) is prepended by default and its output discarded: it gives
attention a place to rest when σ_i has no previous occurrence (the ⊥ case). It is a
constant input, so it is "known to both" parties in the communication argument and does
not weaken the one-layer lower bound.

Relative positions (``"relative"``) add no position vector to the residual stream: each head
adds a learned bias b_h(min(i − j, R)) to its score of key j from query i (distances 0 … R − 1
each their own bias, every distance ≥ R one shared bias; R = `rel_distances`). The scores
then depend on i − j only, so a model trained at a short n runs unchanged at any n ≤ max_len,
and its size does not depend on max_len. For a one-layer model the bias of the last query is
a fixed function of the key position, known to Alice and Bob, so the lower bound still holds.

Rounding (see `precision`) is applied where the paper counts bits: the embedding output,
every query/key/value, and every head's attention output.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from scalelab.errors import InputError
from scalelab.induction.config import InductionConfig
from scalelab.induction.precision import FULL, Precision


def sinusoidal_table(n_positions: int, width: int) -> torch.Tensor:
    """The fixed sin/cos position code of Vaswani et al. (2017)."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, width, 2, dtype=torch.float64) / width)
    table = torch.zeros(n_positions, width, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : width // 2]
    return table.float()


class Attention(nn.Module):
    """Causal multi-head softmax attention, split into projection, mixing and output so the
    communication protocol can reuse exactly the model's own pieces."""

    def __init__(self, cfg: InductionConfig) -> None:
        super().__init__()
        self.n_head, self.d_head = cfg.n_head, cfg.head_dim
        inner = cfg.n_head * cfg.head_dim
        self.q = nn.Linear(cfg.n_embd, inner, bias=cfg.bias)
        self.k = nn.Linear(cfg.n_embd, inner, bias=cfg.bias)
        self.v = nn.Linear(cfg.n_embd, inner, bias=cfg.bias)
        self.o = nn.Linear(inner, cfg.n_embd, bias=cfg.bias)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)
        self.max_distance, self.rel_scale = cfg.rel_distances, cfg.rel_scale
        self.rel = (
            nn.Parameter(torch.zeros(cfg.n_head, cfg.rel_distances + 1))
            if cfg.positions == "relative"
            else None
        )

    def project(
        self, h: torch.Tensor, precision: Precision = FULL
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rounded queries, keys and values, each [B, heads, T, d_head]."""
        b, t, _ = h.shape

        def split(x: torch.Tensor) -> torch.Tensor:
            return precision(x.view(b, t, self.n_head, self.d_head).transpose(1, 2))

        return split(self.q(h)), split(self.k(h)), split(self.v(h))

    def position_bias(self, tq: int, tk: int) -> torch.Tensor | None:
        """The relative-position bias [heads, tq, tk] for the last `tq` queries of `tk`
        positions (None without relative positions); distances < 0 are masked anyway.

        Built as a strided (Toeplitz) view of one row of 2·tk − 1 distances, so a long
        sequence costs one tq × tk copy, not a tq × tk index table."""
        if self.rel is None:
            return None
        dist = tk - 1 - torch.arange(2 * tk - 1, device=self.rel.device)
        dist = dist.clamp(0, self.max_distance)
        row = self.rel_scale * self.rel[:, dist]  # row[h, c] = bias at distance tk − 1 − c
        h = row.shape[0]
        full = row.as_strided((h, tk, tk), (2 * tk - 1, 1, 1))  # [h, r, j] = row[h, r + j]
        return full.flip(-2)[:, tk - tq :]  # query i = tk − 1 − r: distance i − j

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Scores of the queries `q` (the last q.shape[-2] positions) against every key."""
        s = (q @ k.transpose(-1, -2)) * self.scale
        bias = self.position_bias(q.shape[-2], k.shape[-2])
        return s if bias is None else s + bias.to(s.dtype)

    def output(self, y: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        """Round each head's output [B, heads, T, d_head], concatenate and project."""
        b, _, t, _ = y.shape
        return self.o(precision(y).transpose(1, 2).reshape(b, t, -1))

    def probs(self, h: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        """The attention probabilities [B, heads, T (queries), T (keys)], written out
        (the forward pass never forms them); rows sum to 1 over keys j ≤ i."""
        q, k, _ = self.project(h, precision)
        t = h.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=h.device).tril()
        return torch.softmax(self.scores(q, k).masked_fill(~causal, -math.inf), dim=-1)

    def relative_mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """softmax(scores + position bias + causal mask) @ v, for relative positions.

        With autograd on: the T × T bias as an SDPA mask. Without (evaluation), the same sum
        split in two, so a long sequence never forms a T × T matrix: the keys at distance
        ≥ R share one bias, so their part is a causal flash attention of the queries i ≥ R
        over the keys j ≤ i − R (which also returns its log-normaliser); the R nearer keys
        are scored one distance at a time; one softmax over the R + 1 parts combines them.
        The kernel that returns the log-normaliser is torch's CPU flash attention (a private
        op), so on other devices the mask path runs."""
        t, r = q.shape[-2], self.max_distance
        if torch.is_grad_enabled() or t <= r or q.device.type != "cpu":
            causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
            mask = self.position_bias(t, t).to(q.dtype).masked_fill(~causal, -math.inf)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        bias = self.rel_scale * self.rel.to(q.dtype)
        far_y, far_lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q[..., r:, :], k[..., : t - r, :], v[..., : t - r, :], 0.0, True, scale=self.scale
        )[:2]
        scores, values = [], []
        for d in range(r):  # key i − d for query i (none for i < d)
            s = (q[..., d:, :] * k[..., : t - d, :]).sum(-1) * self.scale + bias[:, d, None]
            scores.append(F.pad(s, (d, 0), value=-math.inf))
            values.append(F.pad(v[..., : t - d, :], (0, 0, d, 0)))
        scores.append(F.pad(far_lse.to(q.dtype) + bias[:, r, None], (r, 0), value=-math.inf))
        values.append(F.pad(far_y.to(q.dtype), (0, 0, r, 0)))
        w = torch.softmax(torch.stack(scores, -1), dim=-1)  # [B, H, T, R + 1]
        return (w[..., None] * torch.stack(values, -2)).sum(-2)

    def forward(self, h: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        q, k, v = self.project(h, precision)
        if self.rel is not None:
            return self.output(self.relative_mix(q, k, v), precision)
        # the fused kernel computes softmax(scores(q, k) + causal mask) @ v without
        # materialising the T x T matrix (several times faster on CPU at T = 1024)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return self.output(y, precision)


class Block(nn.Module):
    """Pre-LN block: x + attn(ln(x)), then x + mlp(ln(x)) if the MLP is on."""

    def __init__(self, cfg: InductionConfig) -> None:
        super().__init__()
        norm = (lambda: nn.LayerNorm(cfg.n_embd)) if cfg.layer_norm else nn.Identity
        self.ln1 = norm()
        self.attn = Attention(cfg)
        self.mlp = (
            nn.Sequential(
                norm(),
                nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias),
                nn.GELU(),
                nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias),
            )
            if cfg.mlp
            else None
        )

    def after_attention(self, x: torch.Tensor) -> torch.Tensor:
        """The part of the block after the residual add of attention (the MLP, if any)."""
        return x if self.mlp is None else x + self.mlp(x)

    def forward(self, x: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        return self.after_attention(x + self.attn(self.ln1(x), precision))


def _init_weights(module: nn.Module) -> None:
    """GPT-2 style N(0, 0.02) weights and zero biases: token and position codes start at
    the same scale, so the previous-token head's positional signal is not drowned out."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class InductionTransformer(nn.Module):
    """`forward(seqs [B, n]) -> logits [B, n, S + 1]`; class S is ⊥."""

    def __init__(self, cfg: InductionConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.alphabet_size + int(cfg.bos), cfg.n_embd)
        if cfg.positions == "learned":
            self.pos = nn.Parameter(0.02 * torch.randn(cfg.n_positions, cfg.n_embd))
        elif cfg.positions == "sinusoidal":
            self.register_buffer("pos", sinusoidal_table(cfg.n_positions, cfg.n_embd))
        else:
            self.pos = None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd) if cfg.layer_norm else nn.Identity()
        self.head = nn.Linear(cfg.n_embd, cfg.n_classes, bias=cfg.bias)
        self.apply(_init_weights)

    def with_bos(self, seqs: torch.Tensor) -> torch.Tensor:
        """Validate token ids and prepend the BOS token if the model uses one."""
        if seqs.ndim != 2:
            raise InputError(f"expected token ids [batch, n], got shape {tuple(seqs.shape)}")
        if seqs.shape[1] > self.cfg.max_len:
            raise InputError(
                f"sequence length {seqs.shape[1]} exceeds the model's max_len "
                f"{self.cfg.max_len}; build a model with a larger --max-len"
            )
        if seqs.numel() and (seqs.min() < 0 or seqs.max() >= self.cfg.alphabet_size):
            raise InputError(
                f"token ids must lie in [0, {self.cfg.alphabet_size}); got "
                f"[{int(seqs.min())}, {int(seqs.max())}]"
            )
        if not self.cfg.bos:
            return seqs
        bos = torch.full_like(seqs[:, :1], self.cfg.alphabet_size)
        return torch.cat([bos, seqs], dim=1)

    def embed(self, idx: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        """ψ_in: token + position embedding of already BOS-prefixed ids, rounded."""
        if self.pos is None:
            return precision(self.tok(idx))
        return precision(self.tok(idx) + self.pos[: idx.shape[1]].to(self.tok.weight.dtype))

    def readout(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln_f(x))

    def forward(self, seqs: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        x = self.embed(self.with_bos(seqs), precision)
        for block in self.blocks:
            x = block(x, precision)
        logits = self.readout(x)
        return logits[:, 1:] if self.cfg.bos else logits

    @torch.no_grad()
    def attention_probs(
        self, seqs: torch.Tensor, precision: Precision = FULL
    ) -> list[torch.Tensor]:
        """Per layer, the attention probabilities [B, heads, T, T] over the BOS-prefixed
        input (index 0 is BOS when the model has one)."""
        x = self.embed(self.with_bos(seqs), precision)
        probs = []
        for block in self.blocks:
            probs.append(block.attn.probs(block.ln1(x), precision))
            x = block(x, precision)
        return probs

    @torch.no_grad()
    def predict(self, seqs: torch.Tensor, precision: Precision = FULL) -> torch.Tensor:
        """Decoded answers [B, n] with ⊥ as −1 (the solver's convention)."""
        pred = self.forward(seqs, precision).argmax(-1)
        return torch.where(pred == self.cfg.alphabet_size, -1, pred)


def loss_fn(logits: torch.Tensor, targets: torch.Tensor, n_symbols: int) -> torch.Tensor:
    """Cross-entropy over all positions, with ⊥ (−1 in targets) as class `n_symbols`."""
    cls = torch.where(targets < 0, n_symbols, targets)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), cls.reshape(-1))
