"""A small, readable GPT (nanoGPT's shape): pre-LayerNorm blocks, learned positions, GELU MLP,
tied input/output embeddings and PyTorch's fused `scaled_dot_product_attention`.

The same class runs from the 0.5M-parameter `tiny` preset on a laptop CPU to the seed paper's
125M model (`paper-125m`) on GPUs; only the config changes.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scalelab.errors import ConfigError
from scalelab.lm.config import GPTConfig


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.dropout = cfg.dropout
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        # [b, t, c] -> [b, heads, t, head_dim]
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))

    def probs(self, x: Tensor) -> Tensor:
        """Attention probabilities `[b, heads, t, t]`, softmax(QKᵀ/√d + causal mask) written
        out: the fused kernel in `forward` never materialises them. For analysis only."""
        b, t, c = x.shape
        q, k, _ = self.c_attn(x).split(c, dim=2)
        q, k = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(c // self.n_head)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        return scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-LN residual block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Decoder-only transformer. Weights are initialised from `seed` (GPT-2's scheme: N(0, 0.02),
    residual projections scaled by 1/sqrt(2 * n_layer)) without touching global RNG state."""

    def __init__(self, config: GPTConfig, *, seed: int = 0) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied embeddings
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int = 0) -> None:
        """Deterministic GPT-2 initialisation from an explicit generator."""
        gen = torch.Generator().manual_seed(seed)
        proj_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for name, p in self.named_parameters():
            if p.ndim >= 2:
                std = proj_std if name.endswith("c_proj.weight") else 0.02
                # Draw on the CPU generator, then copy: identical weights on every device.
                p.copy_(torch.randn(p.shape, generator=gen) * std)
            elif name.endswith("bias"):
                p.zero_()
            else:  # LayerNorm weights
                p.fill_(1.0)

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameters; `non_embedding` leaves out token and position embeddings (Kaplan et
        al.'s N, the count scaling laws use). The tied output head is counted once."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.wte.weight.numel() + self.wpe.weight.numel()
        return n

    def _embed(self, idx: Tensor) -> Tensor:
        t = idx.shape[1]
        if t > self.config.block_size:
            raise ConfigError(
                f"sequence of {t} tokens is longer than the model's context "
                f"{self.config.block_size}; cut the input to at most block_size tokens"
            )
        pos = torch.arange(t, device=idx.device)
        return self.drop(self.wte(idx) + self.wpe(pos))

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Logits `[b, t, vocab]` for every position; mean cross-entropy (nats/token) when
        `targets` is given (positions with target -1 are ignored)."""
        x = self._embed(idx)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(
                logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=-1
            )
        return logits, loss

    def attention_probs(self, idx: Tensor) -> list[Tensor]:
        """One tensor `[b, heads, t, t]` per layer: where each head attends (rows sum to 1).
        A separate pass, so training and `forward` keep the fused kernel."""
        x = self._embed(idx)
        probs = []
        for block in self.blocks:
            probs.append(block.attn.probs(block.ln_1(x)))
            x = block(x)
        return probs

    def hidden_states(self, idx: Tensor) -> list[Tensor]:
        """n_layer + 2 tensors `[b, t, n_embd]`: the embeddings (token + position), the residual
        stream after each block (before the final LayerNorm), and the output of the final
        LayerNorm (what the language-model head reads)."""
        x = self._embed(idx)
        states = [x]
        for block in self.blocks:
            x = block(x)
            states.append(x)
        states.append(self.ln_f(x))
        return states
