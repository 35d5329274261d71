"""`scalelab corpus list|prepare|info|synth`: built-in corpora, token stores, synthetic corpora."""

from __future__ import annotations

from pathlib import Path

import typer

from scalelab.cli.common import JSON, QUIET, print_json, print_table
from scalelab.cli.options import From, derive
from scalelab.text.corpora import list_corpora, load_corpus
from scalelab.text.split import SPLITS
from scalelab.text.store import PrepareConfig, TokenStore, prepare_corpus
from scalelab.text.synth import SynthConfig, make_config, write_corpus

corpus_app = typer.Typer(
    help="Corpora: list the built-ins, tokenise one into a token store, generate a synthetic one.",
    no_args_is_help=True,
)


def _summary(data_dir: Path) -> dict:
    meta = TokenStore(data_dir, "train").meta
    return {
        "data_dir": str(data_dir.resolve()),
        "corpus": meta["corpus"]["name"],
        "license": meta["corpus"]["license"],
        "vocab_size": meta["vocab_size"],
        "dtype": meta["dtype"],
        "splits": {
            s: {k: meta["splits"][s][k] for k in ("n_documents", "n_tokens", "n_chars")}
            for s in SPLITS
        },
    }


def _print_summary(summary: dict) -> None:
    rows = [{"split": s, **v} for s, v in summary["splits"].items()]
    print_table(f"{summary['corpus']} → {summary['data_dir']}", rows)
    typer.echo(f"license: {summary['license']}; vocab {summary['vocab_size']} ({summary['dtype']})")


@corpus_app.command("list")
def list_command(json_out: bool = JSON) -> None:
    """List the built-in corpora, their licenses, what a document is, and if installed."""
    rows = list_corpora()
    if json_out:
        print_json(rows)
        return
    short = [{k: r[k] for k in ("name", "license", "available")} for r in rows]
    print_table("built-in corpora", short)
    for r in rows:
        typer.echo(f"{r['name']}: {r['documents']}\n  source: {r['source']}")


def prepare_command(
    corpus: str = typer.Argument(
        ...,
        help="A built-in name (see `corpus list`), or a path: a text file, a directory, "
        "a .jsonl or a .parquet file.",
    ),
    out: Path = typer.Option(..., "--out", help="Folder to create for the token store."),
    cfg: PrepareConfig = From(PrepareConfig),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Split a corpus by document, train a byte-level BPE on the train split (or load one),
    and write memory-mapped token files + meta.json to --out."""
    loaded = load_corpus(corpus, split_on=cfg.split_on, glob=cfg.glob, text_field=cfg.text_field)
    data_dir = prepare_corpus(
        loaded,
        out,
        vocab_size=cfg.vocab_size,
        tokenizer=cfg.tokenizer,
        seed=cfg.seed,
        val_fraction=cfg.val_fraction,
        test_fraction=cfg.test_fraction,
        quiet=quiet,
    )
    summary = _summary(data_dir)
    if json_out:
        print_json(summary)
    else:
        _print_summary(summary)


@corpus_app.command("info")
def info_command(
    data_dir: Path = typer.Argument(..., help="A token store folder."), json_out: bool = JSON
) -> None:
    """Show what a token store holds: corpus, license, vocabulary and split sizes."""
    summary = _summary(data_dir)
    if json_out:
        print_json(summary)
    else:
        _print_summary(summary)


def synth_command(
    family: str = typer.Argument(..., help="Generator: facts (Zipf facts) or markov (bigram)."),
    param: list[str] = typer.Option(
        [], "--param", help="NAME=VALUE, repeatable, e.g. --param a=0.5 (see docs/corpora.md)."
    ),
    out: Path = typer.Option(
        ..., "--out", help="A .jsonl or .txt file, or a folder (one .txt per document)."
    ),
    size: SynthConfig = From(SynthConfig, file=False),
    json_out: bool = JSON,
) -> None:
    """Generate a synthetic corpus whose scaling exponent a knob sets, with its prediction."""
    cfg = make_config(family, [*param, f"tokens={size.tokens}", f"seed={size.seed}"])
    summary = write_corpus(cfg, out)
    if json_out:
        print_json(summary)
        return
    pred = summary["prediction"]
    typer.echo(
        f"wrote {summary['out']}: {summary['n_documents']} documents, "
        f"{summary['n_tokens_one_per_symbol']} tokens (one per symbol)"
    )
    typer.echo(f"spec: {summary['spec']}")
    typer.echo(f"predicted exponent {pred['exponent']:.4f}: {pred['exponent_form']}")
    if "effective_exponent" in pred:
        lo, hi = pred["effective_range_tokens"]
        typer.echo(f"finite-key exponent over {lo}-{hi} tokens: {pred['effective_exponent']:.4f}")
    typer.echo(f"irreducible loss {pred['irreducible_nats_per_token']:.4f} nats/token")
    typer.echo(
        f"next: scalelab corpus prepare {out} --out STORE --vocab-size {summary['vocab_size']}"
    )


def register(app: typer.Typer) -> None:
    """Add the `corpus` command group to the top-level app."""
    corpus_app.command("prepare")(derive(prepare_command))
    corpus_app.command("synth")(derive(synth_command))
    app.add_typer(corpus_app, name="corpus")
