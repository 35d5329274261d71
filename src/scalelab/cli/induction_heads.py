"""`scalelab induction gather | heads | compare-depth`: the one-layer construction,
induction heads in language models, and the depth separation in training a language model.
They take other inputs than one config (a model, a corpus, a token store); the experiments
that take one config and write a folder (`separation`, `size`, ...) are each in their own
module, made commands by `cli.experiment`."""

from __future__ import annotations

import time
from pathlib import Path

import torch
import typer

from scalelab.cli.common import (
    JSON,
    QUIET,
    SEED,
    print_json,
    print_record,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.cli.experiment import check_out
from scalelab.cli.options import From, derive
from scalelab.errors import ConfigError
from scalelab.probe.depth import DepthConfig
from scalelab.probe.heads import HeadScoreConfig


def gather_command(
    n: int = typer.Option(65, help="Sequence length the construction is built for."),
    alphabet: int = typer.Option(3, help="Alphabet size."),
    bits: int | None = typer.Option(None, help="Precision p (default: the least it allows)."),
    mode: str = typer.Option("float", help="Rounding: float (p significant bits) | fixed."),
    random: int = typer.Option(500, help="Uniform random instances to check."),
    hard: int = typer.Option(500, help="INDEX hard instances to check (needs alphabet >= 3)."),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Check the one-layer gather construction at p bits on every position."""
    from scalelab.induction.construction import count_errors, evaluation_instances
    from scalelab.induction.one_layer import GatherLayout, one_layer_construction
    from scalelab.induction.precision import Precision

    if n < 1 or random < 0 or hard < 0:
        raise ConfigError("--n must be >= 1 and --random/--hard >= 0")
    if hard and alphabet < 3:
        raise ConfigError("hard instances use three symbols; give --alphabet >= 3 or --hard 0")
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    p = bits if bits is not None else GatherLayout.least_bits(n, alphabet, mode)
    model = one_layer_construction(alphabet, n, p, mode)
    seqs = evaluation_instances(n, alphabet, random, hard, seed)
    wrong_pos, wrong_seq = count_errors(model, seqs, Precision(p, mode))
    lay = model.layout
    result = {
        "n": n,
        "alphabet_size": alphabet,
        "mode": mode,
        "heads_h": 1,
        "width_m": lay.width,
        "bits_p": p,
        "digits_per_coordinate": lay.per_coordinate,
        "hmp": lay.hmp,
        "hmp_over_n": round(lay.hmp / n, 4),
        "instances": len(seqs),
        "positions_checked": int(seqs.size),
        "wrong_positions": wrong_pos,
        "wrong_sequences": wrong_seq,
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    if json_out:
        print_json(result)
    else:
        print_record("one-layer gather construction", result)


def heads_command(
    model: Path = typer.Option(..., help="A scalelab run folder, an HF folder or a .gguf file."),
    corpus: str | None = typer.Option(
        None, help="Corpus for the ICL score: built-in name, text path or token store."
    ),
    out: Path | None = typer.Option(None, help="Folder for heads.json and the report."),
    cfg: HeadScoreConfig = From(HeadScoreConfig),
    bos: bool | None = typer.Option(
        None, "--bos/--no-bos", help="Prepend BOS (default: HF models yes, scalelab runs no)."
    ),
    threads: int = threads_option(1, help="torch threads."),
    json_out: bool = JSON,
) -> None:
    """Induction and previous-token score of every head; in-context-learning score."""
    from scalelab.probe.heads import run_heads
    from scalelab.report.heads import write_heads_report

    check_out(out)
    set_threads(threads)
    result = run_heads(model, cfg, corpus, out, bos=bos)
    if out is not None:
        write_heads_report(result, out)
    if json_out:
        print_json(result)
        return
    rows = [
        {
            "rank": i + 1,
            **{f"induction {k}": v for k, v in a.items()},
            **{f"prev-token {k}": v for k, v in b.items()},
        }
        for i, (a, b) in enumerate(
            zip(result["top_induction"], result["top_previous_token"], strict=True)
        )
    ]
    print_table(f"top heads of {model} (layer, head from 0)", rows)
    if "icl_score" in result:
        typer.echo(
            f"ICL score {result['icl_score']:+.4f} ± {result['icl_score_se']:.4f} (SE) nats = "
            f"loss at token {result['icl_late']} "
            f"({result['loss_late_nats']:.4f}) - loss at token {result['icl_early']} "
            f"({result['loss_early_nats']:.4f}), {result['icl_windows']} windows"
        )
    if out is not None:
        typer.echo(f"wrote {out}/heads.json and {out}/report.html, {out}/report.md")


def compare_depth_command(
    data: Path = typer.Option(..., help="Token store (scalelab corpus prepare)."),
    out: Path = typer.Option(..., help="Output folder (resumable: rerun to continue)."),
    cfg: DepthConfig = From(DepthConfig),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Train a 1-layer and a 2-layer GPT (equal non-embedding parameters); track head scores."""
    from scalelab.probe.depth import compare_depth
    from scalelab.report.heads import write_depth_figure

    check_out(out)
    torch.set_num_threads(1)
    summary = compare_depth(data, out, cfg, quiet=quiet)
    write_depth_figure(summary, out)
    if json_out:
        print_json(summary["models"])
        return
    short = {
        "model": "model",
        "params_non_embedding": "N (non-emb.)",
        "test_loss_nats": "test loss",
        "final_induction_max": "induction",
        "final_previous_token_max": "prev-token",
        "final_icl_score": "ICL",
        "head_formed_at_step": "head formed at",
    }
    rows = [{v: m[k] for k, v in short.items()} for m in summary["models"]]
    print_table(f"depth comparison in {out} (final scores: max over heads)", rows)


def register(group: typer.Typer) -> None:
    """Add these commands to the `induction` group."""
    group.command("gather")(gather_command)
    group.command("heads")(derive(heads_command))
    group.command("compare-depth")(derive(compare_depth_command))
