"""The training engine: AdamW with warm-up + cosine decay, gradient accumulation, clipping,
bf16 autocast, fixed-interval validation, early stopping, a final test evaluation, exact
resume after a kill at any moment, and data parallelism under torchrun. The validation and test
losses (`evaluate`, `evaluate_with_se`) are mean next-token cross-entropies over fixed windows,
split over the processes.

Batch semantics do not depend on the number of processes: every optimizer step draws the same
`batch_size * grad_accum` windows from one seeded stream, and each of the `world_size`
processes takes an equal 1/world_size share of them, in micro-batches of at most `batch_size`
windows. So one process and N processes with the same config see the same data and follow the
same loss curve (up to float rounding), and the defaults (grad_accum 1) work under torchrun:
with 2 processes each takes half of the one micro-batch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel

from scalelab.device import resolve_dtype
from scalelab.errors import CheckpointError, ConfigError, EstimationError, InputError
from scalelab.io import append_jsonl, atomic_write_json, atomic_write_text, provenance, read_json
from scalelab.lm import checkpoint as ckpt
from scalelab.lm.config import GPTConfig, TrainConfig, lr_at, planned_steps
from scalelab.lm.data import (
    WindowSampler,
    check_long_enough,
    spaced_starts,
    tiling_starts,
    unigram_loss,
    windows,
)
from scalelab.lm.distributed import DistContext, init_distributed
from scalelab.lm.model import GPT
from scalelab.lm.result import TrainResult
from scalelab.lm.stopping import StopState
from scalelab.malloc import keep_freed_memory
from scalelab.progress import progress
from scalelab.runs import outdir
from scalelab.scalars import Scalars

METRICS = "metrics.jsonl"
STOP_KEYS = tuple(f.name for f in dataclasses.fields(StopState))


@torch.no_grad()
def evaluate(
    model: GPT,
    tokens: np.ndarray,
    starts: np.ndarray,
    batch_size: int,
    ctx: DistContext,
    dtype: torch.dtype,
) -> float:
    """Mean next-token cross-entropy (nats/token) over the windows at `starts`, split over
    the processes and summed."""
    return evaluate_with_se(model, tokens, starts, batch_size, ctx, dtype)[0]


@torch.no_grad()
def evaluate_with_se(
    model: GPT,
    tokens: np.ndarray,
    starts: np.ndarray,
    batch_size: int,
    ctx: DistContext,
    dtype: torch.dtype,
) -> tuple[float, float]:
    """`evaluate`, and the standard error of that mean over the windows (the sampling noise
    of one validation, which the stopping rule measures improvements against)."""
    was_training = model.training
    model.eval()
    block = model.config.block_size
    mine = starts[ctx.rank :: ctx.world_size]
    # token-weighted loss sum, tokens, and per-window mean losses: sum, sum of squares, count
    total = torch.zeros(5, dtype=torch.float64, device=ctx.device)
    for i in range(0, len(mine), batch_size):
        x, y = windows(tokens, mine[i : i + batch_size], block)
        x, y = x.to(ctx.device), y.to(ctx.device)
        with _autocast(ctx.device, dtype):
            logits, loss = model(x, y)
        per_window = torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), y.flatten(), reduction="none"
        )
        per_window = per_window.view(len(x), -1).mean(1).double()
        total[0] += loss.double() * y.numel()
        total[1] += y.numel()
        total[2] += per_window.sum()
        total[3] += per_window.square().sum()
        total[4] += len(x)
    ctx.all_reduce_sum(total)
    model.train(was_training)
    n = total[4].item()
    var = max(total[3].item() / n - (total[2].item() / n) ** 2, 0.0) * n / max(n - 1, 1)
    return (total[0] / total[1]).item(), math.sqrt(var / n)


def _autocast(device: torch.device, dtype: torch.dtype) -> contextlib.AbstractContextManager:
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


@dataclasses.dataclass
class _Data:
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    vocab_size: int


def _open_data(data_dir: Path, model_cfg: GPTConfig, cfg: TrainConfig) -> _Data:
    """Open the token stores and check they fit the model, before anything is written."""
    from scalelab.text.store import TokenStore

    if not data_dir.is_dir():
        raise InputError(f"data folder {data_dir} does not exist; run `scalelab corpus prepare`")
    try:
        stores = {s: TokenStore(data_dir, s) for s in ("train", "val", "test")}
    except (OSError, ValueError, KeyError) as err:
        raise InputError(
            f"{data_dir} is not a prepared token store ({err}); run `scalelab corpus prepare`"
        ) from err
    vocab = stores["train"].vocab_size
    if model_cfg.vocab_size < vocab:
        raise ConfigError(
            f"model vocab_size {model_cfg.vocab_size} is smaller than the data's {vocab}; "
            "leave the vocabulary size to be read from the data"
        )
    block = model_cfg.block_size
    train = stores["train"]
    if cfg.train_tokens is not None and cfg.train_tokens > train.n_tokens:
        raise ConfigError(
            f"train_tokens={cfg.train_tokens} exceeds the {train.n_tokens} training tokens "
            f"in {data_dir}; use at most {train.n_tokens}"
        )
    train_tokens = train.tokens if cfg.train_tokens is None else train.prefix(cfg.train_tokens)
    check_long_enough(len(train_tokens), block, "training data")
    check_long_enough(stores["val"].n_tokens, block, "validation split")
    check_long_enough(stores["test"].n_tokens, block, "test split")
    return _Data(train_tokens, stores["val"].tokens, stores["test"].tokens, vocab)


def _make_optimizer(model: GPT, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not biases, LayerNorms)."""
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=True)


def _truncate_metrics(path: Path, last_step: int) -> None:
    """Keep only metric lines at or before the checkpointed step (and drop a torn last line)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("step", math.inf) <= last_step:
            kept.append(line)
    atomic_write_text(path, "".join(f"{line}\n" for line in kept))


def _log(ctx: DistContext, stream: TextIO | None, message: str) -> None:
    if ctx.is_main and stream is not None:
        print(message, file=stream, flush=True)


def train(
    model_cfg: GPTConfig,
    train_cfg: TrainConfig,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    quiet: bool = False,
    device: str | None = None,
    on_eval: Callable[[GPT], dict[str, Any]] | None = None,
    log: TextIO | None = None,
) -> TrainResult:
    """Train (or resume, or return the result of a finished run in `out_dir`) and return the
    `TrainResult` that is also written to `out_dir/result.json` (its to_dict). Log lines
    (steps, resume, the result) go to `log` when given, else to stderr unless `quiet`.
    `on_eval(model)` adds its fields to every metrics.jsonl row (e.g. head scores over
    training); it runs in eval mode under `torch.random.fork_rng`, so it cannot change
    training (resume stays bit-exact)."""
    keep_freed_memory()
    ctx = init_distributed(device)
    data_dir, out_dir = Path(data_dir).resolve(), Path(out_dir)
    run_cfg = {"model": model_cfg, "train": train_cfg, "data_dir": str(data_dir)}  # as saved
    if outdir.check(out_dir, ckpt.CONFIG, run_cfg) is not None:
        ckpt.read_run_config(out_dir)
        if (out_dir / "result.json").exists():  # saved from these configs (checked above)
            saved = read_json(out_dir / "result.json")
            return TrainResult.from_dict({**saved, "model": model_cfg, "train": train_cfg})
    check_world_size(train_cfg, ctx.world_size)
    data = _open_data(data_dir, model_cfg, train_cfg)
    # Everything is checked: only now is the folder created (by rank 0, which holds its lock).
    with outdir.claimed(out_dir, ckpt.CONFIG, run_cfg) if ctx.is_main else contextlib.nullcontext():
        if ctx.is_main and not (out_dir / "provenance.json").exists():
            atomic_write_json(out_dir / "provenance.json", provenance())
        ctx.barrier()
        cuda = [ctx.device.index or 0] if ctx.device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(train_cfg.seed + ctx.rank)  # dropout only; data has its own stream
            stream = log if log is not None else (None if quiet else sys.stderr)
            return _Trainer(model_cfg, train_cfg, data, out_dir, ctx, on_eval, stream).run(quiet)


def check_world_size(cfg: TrainConfig, world_size: int) -> None:
    """The global batch (`batch_size * grad_accum` windows) must split evenly over processes."""
    if cfg.windows_per_step % world_size:
        raise ConfigError(
            f"batch_size * grad_accum = {cfg.windows_per_step} windows per step cannot be "
            f"shared evenly by {world_size} processes; make --batch-size * --grad-accum a "
            "multiple of --nproc_per_node"
        )


class _Trainer:
    """One training session of a run folder: fresh, or continued from its `state.pt`."""

    def __init__(
        self,
        model_cfg: GPTConfig,
        cfg: TrainConfig,
        data: _Data,
        out_dir: Path,
        ctx: DistContext,
        on_eval: Callable[[GPT], dict[str, Any]] | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.cfg, self.data, self.out_dir, self.ctx = cfg, data, out_dir, ctx
        self.on_eval, self.stream = on_eval, stream
        self.session_start = time.perf_counter()
        self.session_train_time = 0.0
        self.session_train_cpu = 0.0
        self.block = model_cfg.block_size
        self.dtype = resolve_dtype(cfg.dtype, ctx.device)
        self.model = GPT(model_cfg, seed=cfg.seed).to(ctx.device)
        self.opt = _make_optimizer(self.model, cfg)
        self.sampler = WindowSampler(data.train, self.block, seed=cfg.seed)
        self.total_steps, self.planned_reason = planned_steps(cfg, self.block)
        self.val_starts = spaced_starts(
            len(data.val), self.block, cfg.eval_batches * cfg.batch_size
        )
        self.tokens_per_step = cfg.windows_per_step * self.block
        # The loop's scalar state and the stopping rule's: saved in state.pt with the tensors
        # (as one flat "loop" dict: `_state`).
        self.stop = StopState(best_step=-1)
        self.s: dict[str, Any] = {
            "step": 0,
            "stop_reason": None,
            "wall_time_s": 0.0,
            "train_time_s": 0.0,
            "train_cpu_s": 0.0,
            "loss_sum": 0.0,
            "loss_count": 0,
        }
        self.rule = cfg.stop
        if (out_dir / ckpt.STATE).exists():
            self._restore()
        elif cfg.init_from is not None:
            self._init_from(Path(cfg.init_from))
        if ctx.is_main:
            _truncate_metrics(out_dir / METRICS, self.s["step"])
        self.scalars = Scalars(out_dir if ctx.is_main else None, resume_step=self.s["step"])

    def _restore(self) -> None:
        path = self.out_dir / ckpt.STATE
        saved = ckpt.load_state(path)
        try:
            self.model.load_state_dict(saved["model"])
            self.opt.load_state_dict(saved["optimizer"])
            self.sampler.load_state(saved["sampler"])
            self._restore_rng(saved)
            loop = saved["loop"]
            self.s.update({k: v for k, v in loop.items() if k not in STOP_KEYS})
            self.stop = StopState(**{k: loop.get(k, getattr(self.stop, k)) for k in STOP_KEYS})
        except (KeyError, RuntimeError, ValueError, TypeError) as err:
            raise CheckpointError(
                f"{path} does not match this run ({err}); delete it to restart from step 0"
            ) from err
        if self.s["stop_reason"] == "patience" and not self.stop.stopped(self.rule):
            self.s["stop_reason"] = None  # a stricter rule than the one that stopped it: go on
        _log(self.ctx, self.stream, f"resuming {self.out_dir} at step {self.s['step']}")

    def _init_from(self, run: Path) -> None:
        """Start from another run's tested weights and its last optimizer state (a cooldown
        from the best checkpoint: sweeps/check.py)."""
        try:
            ckpt.load_weights(self.model, run / ckpt.WEIGHTS)
            self.opt.load_state_dict(ckpt.load_state(run / ckpt.STATE)["optimizer"])
        except (OSError, KeyError, RuntimeError, ValueError) as err:
            raise CheckpointError(
                f"cannot start from {run} ({err}); give a finished run folder as init_from"
            ) from err

    def _restore_rng(self, saved: dict[str, Any]) -> None:
        """Each rank gets back its own dropout RNG state (saved by rank 0 for all ranks)."""
        rank, cuda = self.ctx.rank, self.ctx.device.type == "cuda"
        cpu_states = saved.get("torch_rng_ranks") or [saved["torch_rng"]]
        cuda_states = saved.get("cuda_rng_ranks") or [saved.get("cuda_rng")]
        if len(cpu_states) != self.ctx.world_size:  # resumed on another number of processes
            _log(
                self.ctx,
                self.stream,
                "note: new process count; dropout masks differ from an unbroken run",
            )
            torch.manual_seed(self.cfg.seed + rank + 7919 * saved["loop"]["step"])
            return
        torch.set_rng_state(cpu_states[rank])
        if cuda and cuda_states[rank] is not None:
            torch.cuda.set_rng_state(cuda_states[rank], self.ctx.device)

    def _rng_states(self) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Every rank's CPU (and CUDA) RNG state, gathered to all ranks."""
        ctx = self.ctx
        cpu = torch.get_rng_state()
        cuda = torch.cuda.get_rng_state(ctx.device) if ctx.device.type == "cuda" else None
        if not ctx.active:
            return [cpu], None if cuda is None else [cuda]
        gathered: list[Any] = [None] * ctx.world_size
        torch.distributed.all_gather_object(gathered, (cpu, cuda))
        cuda_all = None if cuda is None else [g[1] for g in gathered]
        return [g[0] for g in gathered], cuda_all

    def run(self, quiet: bool) -> TrainResult:
        s, ctx = self.s, self.ctx
        net = self.model
        if ctx.active:
            ids = [ctx.device.index] if ctx.device.type == "cuda" else None
            net = DistributedDataParallel(self.model, device_ids=ids)
        with (
            self.scalars,
            progress("train", self.total_steps, quiet=quiet or not ctx.is_main) as advance,
        ):
            advance(s["step"])
            while s["stop_reason"] is None and s["step"] < self.total_steps:
                t0, c0 = time.perf_counter(), time.process_time()
                loss = self._step(net)
                dt = time.perf_counter() - t0
                self.session_train_time += dt
                self.session_train_cpu += time.process_time() - c0
                advance(1, info=f"loss {loss:.3f} {self.tokens_per_step / dt / 1e3:.1f}k tok/s")
                if s["step"] % self.cfg.eval_interval == 0 or s["step"] == self.total_steps:
                    self._eval_and_checkpoint()
        if s["stop_reason"] is None:
            s["stop_reason"] = self.planned_reason
        return self._finish()

    def _step(self, net: torch.nn.Module) -> float:
        """One optimizer step over this process's share of the global batch; returns the
        global mean training loss."""
        cfg, ctx, dev, s = self.cfg, self.ctx, self.ctx.device, self.s
        lr = lr_at(s["step"], cfg, self.total_steps)
        for group in self.opt.param_groups:
            group["lr"] = lr
        x_all, y_all = self.sampler.sample(cfg.windows_per_step)
        share = cfg.windows_per_step // ctx.world_size  # this rank's windows
        first = ctx.rank * share
        micro_starts = range(first, first + share, cfg.batch_size)
        step_loss = torch.zeros((), device=dev)
        for micro, lo in enumerate(micro_starts):
            hi = min(lo + cfg.batch_size, first + share)
            x = x_all[lo:hi].to(dev, non_blocking=True)
            y = y_all[lo:hi].to(dev, non_blocking=True)
            sync = micro == len(micro_starts) - 1 or not ctx.active
            with contextlib.nullcontext() if sync else net.no_sync(), _autocast(dev, self.dtype):
                _, loss = net(x, y)
            weight = (hi - lo) / share  # micro-batch means, weighted into the rank's mean
            (loss * weight).backward()
            step_loss += loss.detach() * weight
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        value = ctx.all_reduce_sum(step_loss).item() / ctx.world_size
        if not math.isfinite(value):
            raise EstimationError(
                f"training diverged at step {s['step']} (loss {value}); lower --lr"
            )
        s["step"] += 1
        s["loss_sum"] += value
        s["loss_count"] += 1
        s["lr"] = lr
        return value

    def _eval_and_checkpoint(self) -> None:
        """Validate, log, keep the best weights, decide on early stopping, save the state. The
        order makes a kill at any moment safe: metrics line, best weights, then state.pt (the
        commit point; a resume drops metric lines after it and replays the same steps)."""
        cfg, ctx, s = self.cfg, self.ctx, self.s
        val, val_se = evaluate_with_se(
            self.model, self.data.val, self.val_starts, cfg.batch_size, ctx, self.dtype
        )
        if not math.isfinite(val):
            raise EstimationError(f"validation loss is {val} at step {s['step']}; lower --lr")
        s["wall_time_s"] += time.perf_counter() - self.session_start
        s["train_time_s"] += self.session_train_time
        s["train_cpu_s"] += self.session_train_cpu
        self.session_start, self.session_train_time = time.perf_counter(), 0.0
        self.session_train_cpu = 0.0
        tokens = s["step"] * self.tokens_per_step
        row = {
            "step": s["step"],
            "tokens": tokens,
            "lr": s["lr"],
            "train_loss_nats": s["loss_sum"] / max(s["loss_count"], 1),
            "val_loss_nats": val,
            "val_se_nats": val_se,
            "wall_time_s": round(s["wall_time_s"], 3),
            "tokens_per_s": tokens / max(s["train_time_s"], 1e-9),
        }
        s["loss_sum"], s["loss_count"] = 0.0, 0
        if self.on_eval is not None and ctx.is_main:
            cuda = [ctx.device.index or 0] if ctx.device.type == "cuda" else []
            self.model.eval()
            with torch.no_grad(), torch.random.fork_rng(devices=cuda):
                row.update(self.on_eval(self.model))
            self.model.train()
        improved, stopped = self.stop.update(val, s["step"], val_se, self.rule)
        if stopped:
            s["stop_reason"] = "patience"
        _log(
            ctx,
            self.stream,
            f"step {s['step']}/{self.total_steps} train {row['train_loss_nats']:.4f} "
            f"val {val:.4f} lr {s['lr']:.2e} {row['tokens_per_s'] / 1e3:.2f}k tok/s"
            + (" *" if improved else ""),
        )
        cpu_rng, cuda_rng = self._rng_states()
        if ctx.is_main:
            append_jsonl(self.out_dir / METRICS, row)
            self.scalars.log(
                s["step"],
                {
                    "loss/train_nats": row["train_loss_nats"],
                    "loss/val_nats": val,
                    "lr": s["lr"],
                    "throughput/tokens_per_s": row["tokens_per_s"],
                },
            )
            if improved:
                ckpt.save_weights(
                    self.model, self.out_dir / ckpt.WEIGHTS, step=s["step"], val_loss_nats=val
                )
            state = {
                "model": self.model.state_dict(),
                "optimizer": self.opt.state_dict(),
                "sampler": self.sampler.state(),
                "torch_rng_ranks": cpu_rng,
                "cuda_rng_ranks": cuda_rng,
                "loop": {**s, **dataclasses.asdict(self.stop)},
            }
            ckpt.save_state(self.out_dir / ckpt.STATE, state)
        ctx.barrier()

    def _finish(self) -> TrainResult:
        """Load the best weights, score the test split, write result.json (last)."""
        cfg, ctx, s, data = self.cfg, self.ctx, self.s, self.data
        ckpt.load_weights(self.model, self.out_dir / ckpt.WEIGHTS)
        test_starts = tiling_starts(len(data.test), self.block, cfg.test_tokens)
        test, test_se = evaluate_with_se(
            self.model, data.test, test_starts, cfg.batch_size, ctx, self.dtype
        )
        wall = s["wall_time_s"] + time.perf_counter() - self.session_start
        tokens_seen = s["step"] * self.tokens_per_step
        result = TrainResult(
            test_loss_nats=test,
            test_loss_se_nats=test_se,
            best_val_loss_nats=self.stop.best_val,
            best_step=self.stop.best_step,
            unigram_val_loss_nats=unigram_loss(data.train, data.val, data.vocab_size),
            test_tokens_scored=len(test_starts) * self.block,
            tokens_seen=tokens_seen,
            train_tokens_available=len(data.train),
            steps=s["step"],
            params=self.model.num_params(non_embedding=False),
            params_non_embedding=self.model.num_params(non_embedding=True),
            wall_time_s=wall,
            train_time_s=s["train_time_s"],
            tokens_per_s=tokens_seen / max(s["train_time_s"], 1e-9),
            train_cpu_time_s=s["train_cpu_s"],
            tokens_per_cpu_s=tokens_seen / max(s["train_cpu_s"], 1e-9),
            stop_reason=s["stop_reason"],
            dtype=str(self.dtype).removeprefix("torch."),
            device=ctx.device.type,
            world_size=ctx.world_size,
            model=self.model.config,
            train=cfg,
            provenance=provenance(),
        )
        if ctx.is_main:
            atomic_write_json(self.out_dir / "result.json", result)
        ctx.barrier()
        _log(
            ctx,
            self.stream,
            f"done: test loss {test:.4f} nats/token ({s['stop_reason']}, step {s['step']})",
        )
        return result
