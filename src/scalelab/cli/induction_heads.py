"""`scalelab induction gather | heads | compare-depth | separation | size | formation |
bound | trained-separation`: the one-layer construction, induction heads in language
models, the depth separation in training, the sizes of the solutions against n, induction
heads forming in training, trained one-layer models where the lower bound applies, and
both depths trained at one size where the bound forbids every one-layer model."""

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
from scalelab.cli.options import From, derive
from scalelab.errors import ConfigError
from scalelab.induction.bound_trained import BoundTrainedConfig
from scalelab.induction.formation import FormationConfig
from scalelab.induction.separation import SeparationConfig
from scalelab.induction.size import SizeConfig
from scalelab.induction.trained_separation import TrainedSeparationConfig
from scalelab.probe.depth import DepthConfig
from scalelab.probe.heads import HeadScoreConfig

_SMALL_GRID = "a small grid of the same kinds of rows (seconds; for trying it out)"
_SMALL = "a small version (seconds; for trying it out)"


def quick_preset(cls: type, what: str) -> dict:
    """`--preset quick` (the config's `quick()`), the one way an experiment's small version
    is chosen; `--quick`, the switch that chose it before, still works with a note."""
    return {
        "presets": {"quick": lambda: cls().quick()},
        "preset_help": f"quick: {what}; options given here override it.",
        "retired_presets": {"--quick": "quick"},
    }


def _check_out(out: Path | None) -> None:
    """Refuse an output path that is an existing file, before any work is done."""
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder path")


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

    _check_out(out)
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

    _check_out(out)
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


def separation_command(
    out: Path = typer.Option(..., help="Folder for separation.csv/.png and trained runs."),
    cfg: SeparationConfig = From(SeparationConfig, **quick_preset(SeparationConfig, _SMALL_GRID)),
    json_out: bool = JSON,
) -> None:
    """Accuracy on hard instances vs h·m·p/n: 1 vs 2 layers, constructed and trained."""
    from scalelab.induction.separation import run_separation
    from scalelab.report.separation import write_separation_figure

    torch.set_num_threads(1)
    rows = run_separation(cfg, out)
    write_separation_figure(rows, out)
    if json_out:
        print_json(rows)
    else:
        keys = ("kind", "n_layer", "n", "h", "m", "p", "hmp_over_n", "acc_hard")
        print_table(f"separation ({cfg.mode} point)", [{k: r[k] for k in keys} for r in rows])


def size_command(
    out: Path = typer.Option(..., help="Folder for size.csv/.json and size.png."),
    cfg: SizeConfig = From(SizeConfig),
    json_out: bool = JSON,
) -> None:
    """h·m·p against n: the constant-width two-layer construction (least exact p), the
    one-layer gather construction and the one-layer lower bound."""
    from scalelab.induction.size import run_size
    from scalelab.report.separation import write_size_figure

    _check_out(out)
    torch.set_num_threads(1)
    rows = run_size(cfg, out)
    write_size_figure(rows, out)
    if json_out:
        print_json(rows)
    else:
        keys = ("kind", "n", "alphabet_size", "m", "p", "hmp")
        print_table("h·m·p against n", [{k: r.get(k) for k in keys} for r in rows])


def formation_command(
    out: Path = typer.Option(..., help="Folder for formation.json/.png and the runs."),
    cfg: FormationConfig = From(FormationConfig, **quick_preset(FormationConfig, _SMALL)),
    json_out: bool = JSON,
) -> None:
    """Attention-only 1- vs 2-layer models: head scores, hard accuracy and loss by step."""
    from scalelab.induction.formation import run_formation
    from scalelab.report.induction import write_formation_figure

    _check_out(out)
    torch.set_num_threads(1)
    doc = run_formation(cfg, out)
    write_formation_figure(doc, out)
    keys = ("n_layer", "seed", "width", "params", "formed_at", "final_induction_max")
    rows = [{k: r[k] for k in (*keys, "final_acc_hard", "cpu_time_s")} for r in doc["runs"]]
    if json_out:
        print_json(rows)
    else:
        print_table(f"induction heads forming ({out}/formation.png)", rows)


def bound_command(
    out: Path = typer.Option(..., help="Folder for bound.csv/.json/.png and trained runs."),
    cfg: BoundTrainedConfig = From(BoundTrainedConfig),
    json_out: bool = JSON,
) -> None:
    """Trained 1-layer models below the bound (p-bit training) vs 2 layers: hard accuracy."""
    from scalelab.induction.bound_trained import run_bound_trained
    from scalelab.report.separation import write_bound_figure

    _check_out(out)
    torch.set_num_threads(1)
    rows = run_bound_trained(cfg, out)
    write_bound_figure(rows, out)
    if json_out:
        print_json(rows)
    else:
        keys = ("n_layer", "n", "m", "p", "message_bits", "k", "acc_hard", "steps")
        print_table("trained models against the bound", [{k: r[k] for k in keys} for r in rows])


def trained_separation_command(
    out: Path = typer.Option(..., help="Folder for trained-separation.csv/.json/.png and runs."),
    cfg: TrainedSeparationConfig = From(
        TrainedSeparationConfig, **quick_preset(TrainedSeparationConfig, _SMALL)
    ),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """2 vs 1 layers trained at one (h, m, p) where the bound forbids every 1-layer model."""
    from scalelab.induction.trained_separation import plan, run_trained_separation
    from scalelab.report.separation import write_trained_separation_figure

    _check_out(out)
    if not json_out:
        print_record("size and bound (before training)", plan(cfg))
    torch.set_num_threads(1)
    start = time.perf_counter()
    doc = run_trained_separation(cfg, out, quiet=quiet)
    write_trained_separation_figure(doc, out)
    if json_out:
        print_json(doc)
        return
    keys = ("n_layer", "seed", "n", "m", "p", "acc_hard", "protocol_message_bits", "steps")
    trained = [r for r in doc["rows"] if r["kind"] == "trained-relative"]
    print_table("trained at one size", [{k: r.get(k) for k in keys} for r in trained])
    print_table("paired margin (2 layers − 1 layer, 95%)", doc["margins"])
    print(f"{time.perf_counter() - start:.0f} s wall; figure {out}/trained_separation.png")


def register(group: typer.Typer) -> None:
    """Add these commands to the `induction` group."""
    group.command("gather")(gather_command)
    group.command("heads")(derive(heads_command))
    group.command("compare-depth")(derive(compare_depth_command))
    group.command("separation")(derive(separation_command))
    group.command("size")(derive(size_command))
    group.command("formation")(derive(formation_command))
    group.command("bound")(derive(bound_command))
    group.command("trained-separation")(derive(trained_separation_command))
