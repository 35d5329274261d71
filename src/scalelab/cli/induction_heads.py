"""`scalelab induction gather | heads`: the one-layer construction, and induction heads in a
language model. They are tools that print (and `heads` optionally writes a page), not
experiments that write a folder: those (`separation`, `compare-depth`, ...) are each in their
own module, made commands by `cli.experiment`."""

from __future__ import annotations

from pathlib import Path

import torch
import typer

from scalelab.cli.common import (
    JSON,
    print_json,
    print_record,
    print_table,
    set_threads,
    threads_option,
)
from scalelab.cli.experiment import check_out
from scalelab.cli.options import From, derive
from scalelab.induction.one_layer import GatherCheckConfig
from scalelab.probe.heads import HeadScoreConfig


def gather_command(cfg: GatherCheckConfig = From(GatherCheckConfig), json_out: bool = JSON) -> None:
    """Check the one-layer gather construction at p bits on every position."""
    from scalelab.induction.one_layer import check_gather

    torch.set_num_threads(1)
    result = check_gather(cfg)
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


def register(group: typer.Typer) -> None:
    """Add these commands to the `induction` group."""
    group.command("gather")(derive(gather_command))
    group.command("heads")(derive(heads_command))
