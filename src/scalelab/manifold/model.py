"""The transformer regressor of Havrilla & Liao's Definition 1 (and Definitions 3-5).

T(x) = D ∘ B_L ∘ ... ∘ B_1 ∘ (PE + E(x)): each coordinate x^i of x ∈ R^D becomes one token
h_i = E' x^i + PE_i with a fixed E' = sqrt(D) e_1 (so the data sits in the first row, as in
the paper's structured tokens) and a fixed sinusoidal positional encoding in the other rows.
Each block is B(H) = FFN(MHA(H) + H) + MHA(H) + H (Definition 3, no normalisation), the FFN
is a ReLU MLP applied token-wise (Definition 5), and the decoder D reads the first element
of the last token. Attention is either softmax or the paper's ReLU attention
A(h_i) = Σ_j σ(<Q h_i, K h_j>) V h_j (Definition 4); we compute it with a 1/(l sqrt(d_head))
factor, which is absorbed in V (σ(c t) = c σ(t) for c > 0), so the function class is the same.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from scalelab.manifold.config import RegressorConfig


def positional_encoding(length: int, dim: int) -> torch.Tensor:
    """Sinusoidal encoding [length, dim] (Vaswani et al.), fixed."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    pe = torch.zeros(length, dim, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return pe.float()


class MultiHeadAttention(nn.Module):
    """Multi-head attention with softmax or ReLU weights, then an output projection W_O."""

    def __init__(self, n_embd: int, n_head: int, attention: str) -> None:
        super().__init__()
        self.n_head, self.d_head, self.attention = n_head, n_embd // n_head, attention
        self.q = nn.Linear(n_embd, n_embd, bias=False)
        self.k = nn.Linear(n_embd, n_embd, bias=False)
        self.v = nn.Linear(n_embd, n_embd, bias=False)
        self.out = nn.Linear(n_embd, n_embd, bias=False)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, length, _ = x.shape
        return x.view(b, length, self.n_head, self.d_head).transpose(1, 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h [batch, l, n_embd] -> [batch, l, n_embd]."""
        q, k, v = self._heads(self.q(h)), self._heads(self.k(h)), self._heads(self.v(h))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
        if self.attention == "softmax":
            weights = scores.softmax(dim=-1)
        else:
            weights = torch.relu(scores) / h.shape[1]
        mixed = (weights @ v).transpose(1, 2).reshape(h.shape)
        return self.out(mixed)


class FeedForward(nn.Sequential):
    """Token-wise ReLU MLP of depth `depth` and hidden width `width` (Definition 5)."""

    def __init__(self, n_embd: int, width: int, depth: int) -> None:
        dims = [n_embd] + [width] * (depth - 1) + [n_embd]
        layers: list[nn.Module] = []
        for i in range(depth):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i < depth - 1:
                layers.append(nn.ReLU())
        super().__init__(*layers)


class Block(nn.Module):
    """B(H) = FFN(MHA(H) + H) + MHA(H) + H (Definition 3)."""

    def __init__(self, cfg: RegressorConfig) -> None:
        super().__init__()
        self.mha = MultiHeadAttention(cfg.n_embd, cfg.n_head, cfg.attention)
        self.ffn = FeedForward(cfg.n_embd, cfg.ffn_width, cfg.ffn_depth)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self.mha(h) + h
        return self.ffn(h) + h


class TransformerRegressor(nn.Module):
    """x [batch, D] -> T(x) [batch]: Definition 1 with fixed token embedding and decoder."""

    def __init__(self, cfg: RegressorConfig) -> None:
        super().__init__()
        self.cfg = cfg
        e_prime = torch.zeros(cfg.n_embd)
        e_prime[0] = math.sqrt(cfg.D)
        pe = torch.zeros(cfg.D, cfg.n_embd)
        pe[:, 1:] = positional_encoding(cfg.D, cfg.n_embd - 1)
        self.register_buffer("e_prime", e_prime)
        self.register_buffer("pe", pe)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens [batch, D, n_embd]: column i is E' x^i + PE_i."""
        return x[:, :, None] * self.e_prime + self.pe

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return h[:, -1, 0]

    def num_params(self) -> int:
        """Trainable parameters (E' and PE are fixed buffers, not counted)."""
        return sum(p.numel() for p in self.parameters())

    @torch.no_grad()
    def hidden_states(self, x: torch.Tensor, batch: int = 4096) -> torch.Tensor:
        """The last token's final-layer state [n, n_embd] (what the decoder reads): the
        regressor's analogue of an LM's final-layer token embedding."""
        out = []
        for i in range(0, len(x), batch):
            h = self.embed(x[i : i + batch])
            for block in self.blocks:
                h = block(h)
            out.append(h[:, -1, :])
        return torch.cat(out)
