"""The one-layer lower bound, run: the INDEX communication protocol of the proof.

On a hard instance σ = (e_1, f_1, …, e_k, f_k, ?) the last-position output of each head is
(A + B)/(Z_A + Z_B): A, Z_A sum exp(score)·value and exp(score) over Alice's positions (the
f's), B, Z_B over Bob's (the e's, the final ?, and constants such as BOS). Alice sends, per
head, r = A/Z_A (a d_head vector) and s = log Z_A, each rounded to 3p fractional bits; Bob
computes (r̂·e^ŝ + B)/(e^ŝ + Z_B), which is within (1.5·2^p + 1)·2^−3p ≤ 2^−p of the true
head output when |V| ≤ 2^p, and finishes the forward pass. The message has
h·(d_head + 1) numbers of O(p) bits whatever k is, while INDEX needs k bits: a one-layer
model can only answer every hard instance when h·m·p = Ω(k).

Everything is computed in float64 on a float64 copy of the model; the model's own pieces
(embedding, LayerNorm, projections, MLP, read-out) are reused, so it works on any one-layer
`InductionTransformer`, trained or constructed.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from scalelab.errors import ConfigError
from scalelab.induction.model import InductionTransformer
from scalelab.induction.precision import Precision
from scalelab.induction.task import HardInstances, hard_instances_k

# The one count of Alice's message used everywhere (separation figure, sweep marker, docs):
# per head d_head + 1 numbers, each sent with 3p fractional and ≈ p integer/sign bits, so
# at leading order MESSAGE_BITS_PER_HMP · h · d_head · p bits (the +1 number is dropped).
MESSAGE_BITS_PER_HMP = 4.0


def message_bits(n_head: int, head_dim: int, bits: int) -> float:
    """Alice's message for a one-layer model with `n_head` heads of width `head_dim` at p
    bits: C·h·d_head·p with C = MESSAGE_BITS_PER_HMP (for h = 1, d_head is the width m)."""
    return MESSAGE_BITS_PER_HMP * n_head * head_dim * bits


def index_bits(n: int, alphabet_size: int = 3) -> float:
    """Bits INDEX needs on hard instances of length n: k·log2(|Σ| − 1), k = (n − 1) // 2
    (k bits for the paper's |Σ| = 3; the larger-alphabet count is scalelab's extension)."""
    return ((n - 1) // 2) * math.log2(alphabet_size - 1)


def least_one_layer_hmp(n: int, alphabet_size: int = 3) -> float:
    """The h·m·p below which no one-layer model is exact on every hard instance of length
    n: the message C·h·m·p must carry the `index_bits`."""
    return index_bits(n, alphabet_size) / MESSAGE_BITS_PER_HMP


def errors_forced_from(n_head: int, head_dim: int, bits: int, alphabet_size: int = 3) -> int:
    """The smallest (odd) n = 2k + 1 at which the message is shorter than INDEX's
    k·log2(|Σ| − 1) bits, so the bound forces errors on some hard instance."""
    k = math.floor(message_bits(n_head, head_dim, bits) / math.log2(alphabet_size - 1)) + 1
    return 2 * k + 1


@dataclass(frozen=True)
class ProtocolResult:
    """Outcome of the protocol on a batch of hard instances of one k."""

    k: int
    n: int
    bits: int
    mode: str
    n_instances: int
    max_abs_error: float  # max |Bob's head output − the model's|, over heads, coords, batch
    error_bound: float  # 2^−p
    paper_bound: float  # (1.5·2^p + 1)·2^−3p, valid when max |V| ≤ 2^p
    max_abs_value: float
    within_bound: bool
    answers_identical: bool
    n_answer_mismatches: int
    message_bits: int  # the longest message in the batch
    message_numbers: int  # h·(d_head + 1)
    model_acc_hard: float
    bob_acc_hard: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def round_fixed(x: torch.Tensor, frac_bits: int) -> torch.Tensor:
    """Round to `frac_bits` fractional bits (absolute error ≤ 2^−frac_bits−1), no clamp."""
    scale = float(2**frac_bits)
    return torch.round(x * scale) / scale


def fixed_point_bits(x: torch.Tensor, frac_bits: int) -> torch.Tensor:
    """Bits to send each entry of x: a sign, its integer part, and `frac_bits` fraction bits."""
    int_bits = torch.ceil(torch.log2(torch.floor(x.abs()) + 1.0))
    return 1 + int_bits + frac_bits


def _alice_positions(n: int, k: int, bos: bool) -> np.ndarray:
    """Where the f's sit in the model's input (after BOS and the pad of an even n)."""
    offset = int(bos) + (n - (2 * k + 1))
    return offset + 1 + 2 * np.arange(k)


@torch.no_grad()
def run_protocol(
    model: InductionTransformer, inst: HardInstances, bits: int, mode: str = "float"
) -> ProtocolResult:
    """Run Alice and Bob on every instance of `inst` against the one-layer `model`
    evaluated at `bits` bits of precision (`mode` as in `Precision`)."""
    if model.cfg.n_layer != 1:
        raise ConfigError(
            f"the protocol simulates one-layer models; this one has {model.cfg.n_layer} layers"
        )
    if bits < 1:
        raise ConfigError(f"bits must be >= 1, got {bits}")
    model = copy.deepcopy(model).double().eval()
    precision = Precision(bits, mode)
    seqs = torch.from_numpy(inst.seqs)
    n, k = seqs.shape[1], inst.k
    alice_pos = _alice_positions(n, k, model.cfg.bos)
    block, attn = model.blocks[0], model.blocks[0].attn

    x = model.embed(model.with_bos(seqs), precision)
    q, key, v = attn.project(block.ln1(x), precision)  # [B, H, T, dh]
    scores = attn.scores(q[:, :, -1:], key)[:, :, 0]  # last position's scores [B, H, T]
    alice = torch.zeros(scores.shape[-1], dtype=torch.bool)
    alice[torch.from_numpy(alice_pos)] = True

    # Alice: r = A / Z_A and s = log Z_A per head, rounded to 3p fractional bits
    sa, va = scores[..., alice], v[:, :, alice]
    s = torch.logsumexp(sa, dim=-1)  # [B, H]
    r = (torch.softmax(sa, dim=-1)[..., None, :] @ va)[..., 0, :]  # [B, H, dh]
    r_hat, s_hat = round_fixed(r, 3 * bits), round_fixed(s, 3 * bits)
    msg_bits = fixed_point_bits(r_hat, 3 * bits).sum((-1, -2)) + fixed_point_bits(
        s_hat, 3 * bits
    ).sum(-1)

    # Bob: (r̂ e^ŝ + B) / (e^ŝ + Z_B), stabilised by a common shift
    sb, vb = scores[..., ~alice], v[:, :, ~alice]
    shift = torch.maximum(s_hat, sb.max(-1).values)
    wa = torch.exp(s_hat - shift)  # [B, H]
    wb = torch.exp(sb - shift[..., None])  # [B, H, Tb]
    num = r_hat * wa[..., None] + (wb[..., None, :] @ vb)[..., 0, :]
    y_bob = num / (wa + wb.sum(-1))[..., None]

    y_model = (torch.softmax(scores, dim=-1)[..., None, :] @ v)[..., 0, :]
    err = float((y_bob - y_model).abs().max())
    resid = x[:, -1:]
    out_bob = block.after_attention(resid + attn.output(y_bob[:, :, None, :], precision))
    ans_bob = _decode(model, out_bob[:, 0])
    ans_model = model.predict(seqs, precision)[:, -1].numpy()
    answers = inst.answers
    v_max = float(v.abs().max())
    return ProtocolResult(
        k=k,
        n=n,
        bits=bits,
        mode=mode,
        n_instances=len(answers),
        max_abs_error=err,
        error_bound=2.0**-bits,
        paper_bound=(1.5 * 2.0**bits + 1) * 2.0 ** (-3 * bits),
        max_abs_value=v_max,
        within_bound=err <= 2.0**-bits,
        answers_identical=bool((ans_bob == ans_model).all()),
        n_answer_mismatches=int((ans_bob != ans_model).sum()),
        message_bits=int(msg_bits.max()),
        message_numbers=model.cfg.n_head * (model.cfg.head_dim + 1),
        model_acc_hard=float((ans_model == answers).mean()),
        bob_acc_hard=float((ans_bob == answers).mean()),
    )


def _decode(model: InductionTransformer, out: torch.Tensor) -> np.ndarray:
    pred = model.readout(out).argmax(-1)
    return torch.where(pred == model.cfg.alphabet_size, -1, pred).numpy()


def message_bits_vs_k(
    model: InductionTransformer,
    ks: list[int],
    bits: int,
    rng: np.random.Generator,
    batch: int = 64,
    mode: str = "float",
) -> list[dict[str, Any]]:
    """The protocol at each k (n = 2k + 1 ≤ max_len): message length against the k bits
    INDEX needs. Where message_bits < k, no model of this size answers all instances."""
    rows = []
    for k in ks:
        if 2 * k + 1 > model.cfg.max_len:
            raise ConfigError(
                f"k={k} needs n={2 * k + 1} > the model's max_len {model.cfg.max_len}"
            )
        res = run_protocol(model, hard_instances_k(batch, k, rng), bits, mode)
        rows.append({**res.to_dict(), "index_lower_bound_bits": k, "log2_k": math.log2(k)})
    return rows
