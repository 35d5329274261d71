"""`scalelab corpus list|prepare|info|synth`: built-in corpora, token stores, synthetic corpora."""

from __future__ import annotations

import functools
from pathlib import Path

import typer

from scalelab.cli.common import JSON, QUIET, SEED, configured, print_json, print_table
from scalelab.text.corpora import list_corpora, load_corpus
from scalelab.text.split import SPLITS, split_documents
from scalelab.text.store import TokenStore, prepare_corpus
from scalelab.text.synth import SynthConfig, make_config, write_corpus
from scalelab.text.tokenizer import MIN_VOCAB_SIZE

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


@corpus_app.command("prepare")
def prepare_command(
    corpus: str = typer.Argument(
        ...,
        help="A built-in name (see `corpus list`), or a path: a text file, a directory, "
        "a .jsonl or a .parquet file.",
    ),
    out: Path = typer.Option(..., "--out", help="Folder to create for the token store."),
    vocab_size: int = typer.Option(
        4096,
        "--vocab-size",
        min=MIN_VOCAB_SIZE,
        help="BPE vocabulary size, including <|endoftext|> (256 bytes + 1 at least).",
    ),
    seed: int = SEED,
    split_on: str = typer.Option(
        "blank", "--split-on", help="Text files: documents end at 'blank' lines, or one per 'line'."
    ),
    glob: str = typer.Option("**/*.txt", "--glob", help="Directories: files to read."),
    text_field: str = typer.Option(
        "text", "--text-field", help="JSONL field / Parquet column holding the text."
    ),
    tokenizer: Path | None = typer.Option(
        None,
        "--tokenizer",
        help="Use this tokenizer.json, HF tokenizer folder or vocab.json+merges.txt folder "
        "instead of training a BPE (--vocab-size is then ignored).",
    ),
    val_fraction: float = typer.Option(
        0.05, "--val-fraction", help="Share of documents for validation."
    ),
    test_fraction: float = typer.Option(
        0.1, "--test-fraction", help="Share of documents for test (fixed as train grows)."
    ),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Split a corpus by document, train a byte-level BPE on the train split (or load one),
    and write memory-mapped token files + meta.json to --out."""
    fractions = {"val_fraction": "--val-fraction", "test_fraction": "--test-fraction"}
    configured(  # refuse the fractions by their options, before the corpus is read
        functools.partial(split_documents, ()), fractions, val_fraction=val_fraction,
        test_fraction=test_fraction,
    )  # fmt: skip
    loaded = load_corpus(corpus, split_on=split_on, glob=glob, text_field=text_field)
    data_dir = prepare_corpus(
        loaded,
        out,
        vocab_size=vocab_size,
        tokenizer=tokenizer,
        seed=seed,
        val_fraction=val_fraction,
        test_fraction=test_fraction,
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


@corpus_app.command("synth")
def synth_command(
    family: str = typer.Argument(..., help="Generator: facts (Zipf facts) or markov (bigram)."),
    param: list[str] = typer.Option(
        [], "--param", help="NAME=VALUE, repeatable, e.g. --param a=0.5 (see docs/corpora.md)."
    ),
    out: Path = typer.Option(
        ..., "--out", help="A .jsonl or .txt file, or a folder (one .txt per document)."
    ),
    tokens: int = typer.Option(
        SynthConfig.tokens, "--tokens", help="Corpus size (one token per symbol, EOT per doc)."
    ),
    seed: int = SEED,
    json_out: bool = JSON,
) -> None:
    """Generate a synthetic corpus whose scaling exponent a knob sets, with its prediction."""
    cfg = make_config(family, [*param, f"tokens={tokens}", f"seed={seed}"])
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
    app.add_typer(corpus_app, name="corpus")
