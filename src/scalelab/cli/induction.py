"""`scalelab induction ...`: the induction-heads task, models, construction and protocol."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from scalelab.cli import lazy_group
from scalelab.cli.common import (
    BACKEND,
    JSON,
    QUIET,
    RAY_ADDRESS,
    RUN_CPUS,
    RUN_GPUS,
    SEED,
    backend_from,
    configured,
    parse_list,
    print_json,
    print_record,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.cli.options import From, derive
from scalelab.errors import ConfigError, InputError
from scalelab.induction.config import InductionConfig, InductionSweepConfig, InductionTrainConfig
from scalelab.induction.experiments import EXPERIMENTS

# The CLI's defaults are the configs'.
_M, _T = InductionConfig(), InductionTrainConfig()

# EXPERIMENTS (command -> (module, help's first line)), imported above: the one registry of
# experiments, in a torch-free module that the report's analysis may import too
# (`induction.experiments`); each line gives its experiment a command here (`cli.experiment`)
# and a section in `scalelab report`.

# The commands of `cli.induction_heads` (other inputs than a config; their modules import
# torch) and the experiments (`cli.experiment`), with their helps' first lines, listed from
# here and imported when one runs (`tests/test_cli_lazy.py` checks the lines against the
# commands).
HEADS = {
    **{
        name: ("induction_heads", text)
        for name, text in (
            ("gather", "Check the one-layer gather construction at p bits on every position."),
            (
                "heads",
                "Induction and previous-token score of every head; in-context-learning score.",
            ),
        )
    },
    **{name: ("experiment", text) for name, (_, text) in EXPERIMENTS.items()},
}

sub = typer.Typer(
    cls=lazy_group(HEADS),
    help="Induction heads: one layer fails, two layers succeed (solver, training, "
    "construction, communication protocol, sweeps).",
    no_args_is_help=True,
)


def _csv(values: tuple) -> str:
    """A config's tuple as the comma-separated text the CLI parses."""
    return ",".join(map(str, values))


def _ints(text: str, name: str) -> list[int]:
    return parse_list(text, int, name)


def _fmt_tokens(values: np.ndarray) -> str:
    return " ".join("⊥" if v < 0 else str(int(v)) for v in values)


@sub.command("solve", context_settings={"ignore_unknown_options": True})
def solve_command(
    tokens: list[int] = typer.Argument(..., help="The input sequence as token ids (>= 0)."),
    json_out: bool = JSON,
) -> None:
    """Print τ for one sequence: the token after the previous occurrence of σ_i, or ⊥."""
    from scalelab.induction.task import solve

    negative = [t for t in tokens if t < 0]
    if negative:  # read as numbers (not options), then refused: ⊥ is an output only
        raise InputError(f"token ids must be >= 0, got {negative[0]}; give ids 0, 1, 2, ...")

    out = solve(np.asarray(tokens, dtype=np.int64)[None])[0]
    if json_out:
        print_json({"input": tokens, "output": [None if v < 0 else int(v) for v in out]})
    else:
        typer.echo(f"input : {' '.join(map(str, tokens))}")
        typer.echo(f"output: {_fmt_tokens(out)}")


@sub.command("generate")
def generate_command(
    kind: str = typer.Option("uniform", help="uniform | hard | mixture."),
    n: int = typer.Option(16, help="Sequence length."),
    alphabet: int = typer.Option(4, help="Alphabet size (hard instances use 0, 1, 2 = '?')."),
    count: int = typer.Option(3, help="How many sequences."),
    hard_fraction: float = typer.Option(0.5, help="Share of hard rows in a mixture."),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Print generated sequences with their exact answers."""
    from scalelab.induction.task import (
        hard_instances,
        mixture_instances,
        solve,
        uniform_instances,
    )

    rng = np.random.default_rng(seed)
    if kind == "uniform":
        seqs = uniform_instances(count, n, alphabet, rng)
    elif kind == "hard":
        seqs = hard_instances(count, n, rng).seqs
    elif kind == "mixture":
        seqs = mixture_instances(count, n, alphabet, rng, hard_fraction)
    else:
        raise ConfigError(f"--kind must be uniform, hard or mixture, got {kind!r}")
    targets = solve(seqs)
    if json_out:
        print_json({"inputs": seqs, "outputs": targets})
        return
    for s, t in zip(seqs, targets, strict=True):
        typer.echo(f"σ: {_fmt_tokens(s)}\nτ: {_fmt_tokens(t)}\n")


# `--n` is the training length (InductionTrainConfig.n), and the model is built for it.
MODEL = From(
    InductionConfig,
    only=("alphabet_size", "n_layer", "n_head", "n_embd", "positions", "mlp"),
    section="model",
)
TRAINING = From(
    InductionTrainConfig,
    only=("n", "max_steps", "target_acc", "train_bits", "hard_fraction", "lr", "seed"),
    section="train",
)


def train_command(
    out: Path = typer.Option(..., help="Run folder (config.json, metrics.jsonl, model)."),
    model: InductionConfig = MODEL,
    training: InductionTrainConfig = TRAINING,
    threads: int = threads_option(1, help="torch threads (the machine is shared)."),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Train a model on fresh random sequences; print the four accuracy metrics."""
    from scalelab.induction.train import train_induction

    set_threads(threads)
    model = configured(model.replace, {"max_len": "--n"}, max_len=training.n)
    _, result = train_induction(model, training, out, quiet=quiet)
    if json_out:
        print_json(result)
    else:
        n, size = training.n, model.alphabet_size
        print_record(f"trained {model.n_layer}-layer model, n={n}, |Σ|={size}", result)


sub.command("train")(derive(train_command))


@sub.command("evaluate")
def evaluate_command(
    run: Path = typer.Argument(..., help="A folder written by `scalelab induction train`."),
    n: int = typer.Option(0, help="Sequence length (0: the training length)."),
    bits: str = typer.Option("", help="Comma-separated precisions p to evaluate at."),
    mode: str = typer.Option("float", help="Rounding: float (p significant bits) | fixed."),
    samples: int = typer.Option(1024, help="Sequences per metric."),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Accuracy of a trained model (all, non-⊥, last position, hard) at full and p bits."""
    from scalelab.induction.precision import FULL, Precision
    from scalelab.induction.train import evaluate, load_induction_model
    from scalelab.runs.outdir import read_meta

    model = load_induction_model(run).double()
    length = n or read_meta(run / "config.json")["train"]["n"]
    precisions = [FULL] + [Precision(b, mode) for b in (_ints(bits, "--bits") if bits else [])]
    rows = []
    for prec in precisions:
        m = evaluate(model, length, np.random.default_rng(seed), samples, prec)
        rows.append({"bits": prec.bits or "full", "n": length, **m})
    if json_out:
        print_json(rows)
    else:
        print_table(f"{run}", rows)


@sub.command("construct")
def construct_command(
    n: int = typer.Option(1024, help="Sequence length the construction is built for."),
    alphabet: int = typer.Option(4, help="Alphabet size."),
    kind: str = typer.Option(
        "constant-width", help="constant-width (width 12, the paper's) | one-hot (3|Σ| + 5)."
    ),
    random: int = typer.Option(1000, help="Uniform random instances to check."),
    hard: int = typer.Option(1000, help="INDEX hard instances (f over Σ ∖ {?}) to check."),
    scan_bits: bool = typer.Option(
        True, "--scan-bits/--no-scan-bits", help="Measure the smallest exact precision."
    ),
    mode: str = typer.Option("float", help="Rounding for the scan: float | fixed."),
    threads: int = threads_option(1, help="torch threads."),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Check a hand-set two-layer construction on every position; measure its precision."""
    import dataclasses
    import time

    from scalelab.induction.construction import (
        CircleConstants,
        build_construction,
        count_errors,
        evaluation_instances,
        smallest_exact_bits,
    )
    from scalelab.induction.one_hot import OneHotConstants

    set_threads(threads)
    t0 = time.perf_counter()
    model = build_construction(kind, alphabet, n)
    seqs = evaluation_instances(n, alphabet, random, hard, seed)
    wrong_pos, wrong_seq = count_errors(model, seqs)
    consts = (
        CircleConstants.for_task(n, alphabet)
        if kind == "constant-width"
        else OneHotConstants.for_length(n)
    )
    result = {
        "kind": kind,
        "n": n,
        "alphabet_size": alphabet,
        "width": model.cfg.n_embd,
        "heads_per_layer": 1,
        "instances": len(seqs),
        "positions_checked": int(seqs.size),
        "wrong_positions": wrong_pos,
        "wrong_sequences": wrong_seq,
        **{k: v for k, v in dataclasses.asdict(consts).items() if k not in ("n", "alphabet_size")},
    }
    if scan_bits:
        scan = smallest_exact_bits(n, alphabet, mode, seed=seed, kind=kind)
        result.update({k: v for k, v in scan.items() if k not in result})
    result["wall_s"] = round(time.perf_counter() - t0, 2)
    if json_out:
        print_json(result)
    else:
        print_record(f"two-layer construction ({kind})", result)


@sub.command("protocol")
def protocol_command(
    run: Path | None = typer.Option(None, help="A one-layer run folder (default: random)."),
    ks: str = typer.Option("4,16,64", "--k", help="Comma-separated INDEX sizes k (n = 2k+1)."),
    bits: int = typer.Option(8, help="Precision p of the model (Alice rounds to 3p bits)."),
    mode: str = typer.Option("float", help="Model rounding: float | fixed."),
    heads: int = typer.Option(2, help="Heads of the random model."),
    width: int = typer.Option(16, help="Width of the random model."),
    batch: int = typer.Option(256, help="Hard instances per k."),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Run Alice and Bob on a one-layer model: Bob's error vs 2^-p, message bits vs k."""
    import torch

    from scalelab.induction.model import InductionTransformer
    from scalelab.induction.protocol import message_bits_vs_k
    from scalelab.induction.train import load_induction_model

    k_list = _ints(ks, "--k")
    if run is not None:
        model = load_induction_model(run)
    else:
        cfg = InductionConfig(
            alphabet_size=3, max_len=2 * max(k_list) + 1, n_layer=1, n_head=heads, n_embd=width
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = InductionTransformer(cfg)
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(0.0, 1.0 / width**0.5)
    if model.cfg.alphabet_size < 3:
        raise InputError("the protocol's hard instances need a model with alphabet_size >= 3")
    rows = message_bits_vs_k(model, k_list, bits, np.random.default_rng(seed), batch, mode)
    short = {
        "k": "k",
        "bits": "p",
        "max_abs_error": "bob_err",
        "error_bound": "2^-p",
        "within_bound": "ok",
        "n_answer_mismatches": "diff",
        "message_bits": "msg_bits",
        "model_acc_hard": "acc_hard",
    }
    if json_out:
        print_json(rows)
    else:
        table = [{v: r[k] for k, v in short.items()} for r in rows]
        print_table("INDEX protocol on a one-layer model (INDEX needs k bits)", table)


def sweep_command(
    out: Path = typer.Option(..., help="Sweep folder (resumable; rerun to continue)."),
    cfg: InductionSweepConfig = From(InductionSweepConfig),
    workers: int = typer.Option(1, help="Parallel worker processes."),
    backend: str = BACKEND,
    ray_address: str | None = RAY_ADDRESS,
    run_cpus: int = RUN_CPUS,
    run_gpus: float = RUN_GPUS,
    quiet: bool = QUIET,
) -> None:
    """Train 1- vs 2-layer models over a grid; then `scalelab report OUT`."""
    import torch

    from scalelab.induction.sweep import run_induction_sweep

    where = backend_from(backend, ray_address, run_cpus, run_gpus)
    if workers <= 1:
        torch.set_num_threads(1)
    table = run_induction_sweep(out, cfg, workers=workers, backend=where, quiet=quiet)
    cols = [c for c in ("run", "acc_all", "acc_last", "acc_hard", "steps") if c in table]
    print_table(f"induction sweep {out}", table[cols].to_dict("records"))


sub.command("sweep")(derive(sweep_command))


def register(app: typer.Typer) -> None:
    """Add the `induction` command group to the top-level app."""
    app.add_typer(sub, name="induction")
