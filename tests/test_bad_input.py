"""Bad input to every command and subcommand: exactly one line on stderr that names the
problem and the fix, exit code 2, no traceback, and the output location left as it was.

Table-driven: each case is (command line, words the message must contain). `{name}` in a
command line is a prepared input (see `inputs`): good and damaged token stores, run folders,
tables and point files, built once per module. Every case runs the real `main()` in this
process (`run_cli`), with the whole tree (inputs and output location) snapshotted before and
after. The list of commands is checked against `scalelab --help`, so a new command without
cases fails here.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file
from test_sweeps_data import make_store

from scalelab.cli import make_app

FIX_WORDS = re.compile(
    r"\b(use|give|run|choose|set|delete|restore|check|see|pick|make|lower|raise|repeat|wait|"
    r"add|drop|remove|prepare|train|rerun|change|leave|pass|start|keep|fix|need|needs|must|"
    r"sort|name|one of|at least|at most|between|range)\b|>=|<=|[<>]",
    re.IGNORECASE,
)

TINY_TRAIN = [
    "--preset",
    "tiny",
    "--context-len",
    "16",
    "--batch-size",
    "2",
    "--eval-batches",
    "1",
    "--test-tokens",
    "64",
    "--max-steps",
    "2",
    "--eval-interval",
    "2",
    "--quiet",
]
IND_SWEEP = [
    "--ns",
    "8",
    "--alphabets",
    "4",
    "--layers",
    "1",
    "--steps",
    "2",
    "--steps-one-layer",
    "2",
    "--no-construction",
    "--quiet",
]

CASES: dict[str, tuple[list[str], str]] = {
    # --- usage errors (click): missing option, wrong type, unknown option/command
    "usage-missing-out": (["induction", "sweep"], "Missing option '--out'"),
    "usage-bad-int": (["induction", "generate", "--n", "ten"], "Invalid value for '--n'"),
    "usage-bad-float": (["exponents", "--d", "two"], "Invalid value for '--d'"),
    "usage-unknown-option": (["corpus", "list", "--colour"], "No such option"),
    "usage-unknown-command": (["estimat"], "No such command"),
    "usage-extra-argument": (["corpus", "info", "{store}", "extra"], "unexpected extra"),
    # --- id
    "id-missing-file": (["id", "{tmp}/nope.npy"], "nope.npy"),
    "id-empty-file": (["id", "{empty_npy}"], "empty.npy"),
    "id-truncated-npy": (["id", "{truncated_npy}"], "truncated.npy"),
    "id-non-utf8-csv": (["id", "{latin1_csv}"], "latin1.csv"),
    "id-nan-rows": (["id", "{nan_npy}"], "NaN"),
    "id-k-zero": (["id", "{points}", "--k", "0"], "k"),
    "id-estimator": (["id", "{points}", "--estimator", "pca"], "pca"),
    "id-metric": (["id", "{points}", "--metric", "manhattan"], "manhattan"),
    "id-precision": (["id", "{points}", "--precision", "fp16"], "fp16"),
    "id-aggregate": (["id", "{points}", "--aggregate", "median"], "median"),
    "id-batch-size": (["id", "{points}", "--batch-size", "1"], "batch"),
    "id-too-few-points": (["id", "{few_points}", "--k", "20"], "points"),
    "id-out-is-folder": (["id", "{points}", "--out", "{store}"], "folder"),
    # --- exponents
    "exponents-nothing": (["exponents"], "--d"),
    "exponents-negative-d": (["exponents", "--d", "-1"], "d"),
    "exponents-nan-d": (["exponents", "--d", "nan"], "d"),
    "exponents-beta": (["exponents", "--d", "8", "--beta", "0"], "beta"),
    "exponents-d-se": (["exponents", "--d", "8", "--d-se", "-1"], "se"),
    # --- fit
    "fit-missing-table": (["fit", "{tmp}/none.csv", "--x", "n", "--y", "loss"], "none.csv"),
    "fit-missing-column": (["fit", "{table_no_loss}", "--x", "n", "--y", "loss"], "loss"),
    "fit-empty-csv": (["fit", "{empty_csv}", "--x", "n", "--y", "loss"], "empty.csv"),
    "fit-non-utf8": (["fit", "{latin1_csv}", "--x", "n", "--y", "loss"], "latin1.csv"),
    "fit-form": (["fit", "{table}", "--x", "n", "--y", "loss", "--form", "cubic"], "cubic"),
    "fit-negative-loss": (["fit", "{table_negative}", "--x", "n", "--y", "loss"], "positive"),
    "fit-n-boot": (["fit", "{table}", "--x", "n", "--y", "loss", "--n-boot", "-5"], "boot"),
    "fit-holdout": (["fit", "{table}", "--x", "n", "--y", "loss", "--holdout", "9"], "holdout"),
    "fit-chinchilla-no-cols": (["fit", "{table}", "--y", "loss", "--form", "chinchilla"], "col"),
    # --- report
    "report-missing": (["report", "{tmp}/nowhere"], "nowhere"),
    "report-not-a-sweep": (["report", "{store}"], "sweep.json"),
    "report-corrupt-sweep-json": (["report", "{corrupt_sweep}"], "sweep.json"),
    "report-unknown-kind": (["report", "{odd_kind_sweep}"], "kind"),
    # --- corpus
    "corpus-prepare-non-utf8": (["corpus", "prepare", "{latin1_txt}", "--out", "{out}"], "UTF-8"),
    "corpus-prepare-empty": (["corpus", "prepare", "{empty_txt}", "--out", "{out}"], "empty"),
    "corpus-prepare-vocab": (
        ["corpus", "prepare", "{text}", "--out", "{out}", "--vocab-size", "0"],
        "vocab",
    ),
    "corpus-prepare-fractions": (
        [
            "corpus",
            "prepare",
            "{text}",
            "--out",
            "{out}",
            "--val-fraction",
            "0.6",
            "--test-fraction",
            "0.6",
        ],
        "fraction",
    ),
    "corpus-prepare-split-on": (
        ["corpus", "prepare", "{text}", "--out", "{out}", "--split-on", "page"],
        "page",
    ),
    "corpus-prepare-out-is-run": (["corpus", "prepare", "{text}", "--out", "{run}"], "run"),
    "corpus-synth-family": (["corpus", "synth", "fact", "--out", "{out}"], "'fact'"),
    "corpus-synth-param": (["corpus", "synth", "facts", "--param", "a=-1", "--out", "{out}"], "a"),
    "corpus-synth-name": (["corpus", "synth", "markov", "--param", "b=1", "--out", "{out}"], "b"),
    "corpus-synth-suffix": (["corpus", "synth", "facts", "--out", "{tmp}/c.csv"], ".csv"),
    "corpus-info-missing": (["corpus", "info", "{tmp}/nostore"], "nostore"),
    "corpus-info-edited-meta": (["corpus", "info", "{store_bad_meta}"], "meta.json"),
    "corpus-info-missing-bin": (["corpus", "info", "{store_no_bin}"], ".bin"),
    "corpus-info-a-run": (["corpus", "info", "{run}"], "token store"),
    # --- train
    "train-missing-store": (
        ["train", "--data", "{tmp}/nostore", "--out", "{out}", *TINY_TRAIN],
        "token store",
    ),
    "train-store-missing-bin": (
        ["train", "--data", "{store_no_bin}", "--out", "{out}", *TINY_TRAIN],
        ".bin",
    ),
    "train-store-edited-meta": (
        ["train", "--data", "{store_bad_meta}", "--out", "{out}", *TINY_TRAIN],
        "meta.json",
    ),
    "train-preset": (
        ["train", "--data", "{store}", "--out", "{out}", "--preset", "huge"],
        "preset",
    ),
    "train-lr": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--lr", "5"],
        "learning rate",
    ),
    "train-batch-zero": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--batch-size", "0"],
        "batch_size",
    ),
    "train-grad-accum": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--grad-accum", "0"],
        "grad_accum",
    ),
    "train-dropout": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--dropout", "1.5"],
        "dropout",
    ),
    "train-dtype": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--dtype", "fp8"],
        "fp8",
    ),
    "train-device": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--device", "tpu7"],
        "device",
    ),
    "train-threads": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--threads", "0"],
        "threads",
    ),
    "train-context": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--context-len", "100000"],
        "context",
    ),
    "train-min-lr": (
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--min-lr", "1"],
        "min_lr",
    ),
    "train-out-is-sweep": (
        ["train", "--data", "{store}", "--out", "{data_sweep}", *TINY_TRAIN],
        "sweep",
    ),
    "train-out-is-file": (
        ["train", "--data", "{store}", "--out", "{table}", *TINY_TRAIN],
        "file",
    ),
    "train-other-config": (
        ["train", "--data", "{store}", "--out", "{run}", *TINY_TRAIN, "--lr", "3e-3"],
        "different config",
    ),
    # --- estimate
    "estimate-missing-model": (
        ["estimate", "--model", "{tmp}/nomodel", "--out", "{out}"],
        "nomodel",
    ),
    "estimate-truncated-checkpoint": (
        ["estimate", "--model", "{run_truncated}", "--out", "{out}"],
        "checkpoint.safetensors",
    ),
    "estimate-no-config": (
        ["estimate", "--model", "{run_no_config}", "--out", "{out}"],
        "config.json",
    ),
    "estimate-k": (["estimate", "--model", "{run}", "--out", "{out}", "--k", "0"], "k"),
    "estimate-layer": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--layer", "top"],
        "top",
    ),
    "estimate-split": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--split", "dev"],
        "dev",
    ),
    "estimate-aggregate": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--aggregate", "mode"],
        "mode",
    ),
    "estimate-metric": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--metric", "l1"],
        "l1",
    ),
    "estimate-corpus": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--corpus", "{tmp}/nocorpus"],
        "nocorpus",
    ),
    "estimate-per-doc": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--per-doc", "0"],
        "per_doc",
    ),
    "estimate-device": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--device", "gpu"],
        "device",
    ),
    "estimate-weights": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--weights", "worst"],
        "worst",
    ),
    # --- ablate
    "ablate-layers-bad": (
        ["ablate", "layers", "--model", "{run}", "--out", "{out}", "--layers", "1,top"],
        "top",
    ),
    "ablate-layers-range": (
        ["ablate", "layers", "--model", "{run}", "--out", "{out}", "--layers", "0,40"],
        "40",
    ),
    "ablate-layers-truncated": (
        ["ablate", "layers", "--model", "{run_truncated}", "--out", "{out}"],
        "checkpoint.safetensors",
    ),
    "ablate-positions-groups": (
        ["ablate", "positions", "--model", "{run}", "--out", "{out}", "--groups", "0"],
        "groups",
    ),
    "ablate-positions-missing": (
        ["ablate", "positions", "--model", "{tmp}/m", "--out", "{out}"],
        "m",
    ),
    "ablate-models-none": (["ablate", "models", "--out", "{out}"], "--model"),
    "ablate-models-missing": (
        ["ablate", "models", "--model", "{run}", "--model", "{tmp}/gone", "--out", "{out}"],
        "gone",
    ),
    "ablate-models-out-is-run": (
        ["ablate", "models", "--model", "{run}", "--out", "{run_copy}"],
        "run",
    ),
    "ablate-batch-nothing": (["ablate", "batch-size", "--out", "{out}"], "--embeddings"),
    "ablate-batch-truncated": (
        ["ablate", "batch-size", "--embeddings", "{emb_truncated}", "--out", "{out}"],
        "emb_truncated",
    ),
    "ablate-batch-sizes-text": (
        [
            "ablate",
            "batch-size",
            "--embeddings",
            "{emb}",
            "--out",
            "{out}",
            "--batch-sizes",
            "64,big",
        ],
        "batch",
    ),
    "ablate-batch-sizes-too-big": (
        [
            "ablate",
            "batch-size",
            "--embeddings",
            "{emb}",
            "--out",
            "{out}",
            "--batch-sizes",
            "100000",
        ],
        "batch size",
    ),
    # --- sweep data / model
    "sweep-data-sizes-order": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--sizes", "2000,1000"],
        "increasing",
    ),
    "sweep-data-sizes-text": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--sizes", "1k,2k"],
        "sizes",
    ),
    "sweep-data-policy": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--policy", "forever"],
        "forever",
    ),
    "sweep-data-workers": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--workers", "0"],
        "workers",
    ),
    "sweep-data-model": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--model", "0x0"],
        "0x0",
    ),
    "sweep-data-points": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--points", "0"],
        "points",
    ),
    "sweep-data-too-many-tokens": (
        ["sweep", "data", "--data", "{store}", "--out", "{out}", "--sizes", "1000,999999999"],
        "999999999",
    ),
    "sweep-data-no-bin": (
        ["sweep", "data", "--data", "{store_no_bin}", "--out", "{out}"],
        ".bin",
    ),
    "sweep-data-out-other-kind": (
        [
            "sweep",
            "data",
            "--data",
            "{store}",
            "--out",
            "{induction_sweep}",
            "--sizes",
            "1000,2000",
        ],
        "induction",
    ),
    "sweep-data-out-is-run": (
        ["sweep", "data", "--data", "{store}", "--out", "{run_copy}", "--sizes", "1000,2000"],
        "training run",
    ),
    "sweep-model-empty": (
        ["sweep", "model", "--data", "{store}", "--out", "{out}", "--models", ","],
        "models",
    ),
    "sweep-model-shape": (
        ["sweep", "model", "--data", "{store}", "--out", "{out}", "--models", "2xabc"],
        "2xabc",
    ),
    "sweep-model-token-budget": (
        [
            "sweep",
            "model",
            "--data",
            "{store}",
            "--out",
            "{out}",
            "--models",
            "1x32",
            "--policy",
            "tokens",
        ],
        "token",
    ),
    "sweep-model-epochs": (
        [
            "sweep",
            "model",
            "--data",
            "{store}",
            "--out",
            "{out}",
            "--models",
            "1x32",
            "--policy",
            "epochs",
            "--epochs",
            "0",
        ],
        "epochs",
    ),
    "sweep-model-out-other-kind": (
        ["sweep", "model", "--data", "{store}", "--out", "{data_sweep}", "--models", "1x32,1x48"],
        "data",
    ),
    # --- manifold
    "manifold-sweep-preset": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "huge"],
        "huge",
    ),
    "manifold-sweep-dims": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--dims", "0"],
        "dim",
    ),
    "manifold-sweep-betas": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--betas", "2"],
        "beta",
    ),
    "manifold-sweep-manifold": (
        ["manifold", "sweep", "--out", "{out}", "--manifold", "cube"],
        "cube",
    ),
    "manifold-sweep-n-values": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--n-values", "10,x"],
        "n",
    ),
    "manifold-sweep-attention": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--attention", "linear"],
        "linear",
    ),
    "manifold-sweep-out-other-kind": (
        ["manifold", "sweep", "--out", "{data_sweep}", "--preset", "smoke"],
        "data",
    ),
    "manifold-sample-d": (["manifold", "sample", "--out", "{out}/x.npz", "--d", "0"], "d"),
    "manifold-sample-ambient": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--d", "4", "--D", "2"],
        "D",
    ),
    "manifold-sample-beta": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--beta", "0"],
        "beta",
    ),
    "manifold-sample-warp": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--warp", "1"],
        "warp",
    ),
    "manifold-sample-n": (["manifold", "sample", "--out", "{out}/x.npz", "--n", "0"], "n"),
    "manifold-sample-kind": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--manifold", "cube"],
        "cube",
    ),
    # --- induction
    "induction-solve-negative": (["induction", "solve", "0", "-1", "2"], "-1"),
    "induction-solve-text": (["induction", "solve", "0", "a"], "tokens"),
    "induction-generate-kind": (["induction", "generate", "--kind", "easy"], "easy"),
    "induction-generate-n": (["induction", "generate", "--n", "0"], "n"),
    "induction-generate-hard-fraction": (
        ["induction", "generate", "--kind", "mixture", "--hard-fraction", "2"],
        "fraction",
    ),
    "induction-generate-count": (["induction", "generate", "--count", "-1"], "count"),
    "induction-train-layers": (
        ["induction", "train", "--out", "{out}", "--layers", "0"],
        "n_layer",
    ),
    "induction-train-heads": (["induction", "train", "--out", "{out}", "--heads", "3"], "3"),
    "induction-train-positions": (
        ["induction", "train", "--out", "{out}", "--positions", "rope"],
        "rope",
    ),
    "induction-train-out-is-sweep": (
        ["induction", "train", "--out", "{data_sweep}", "--steps", "2"],
        "sweep",
    ),
    "induction-evaluate-missing": (["induction", "evaluate", "{tmp}/norun"], "norun"),
    "induction-evaluate-truncated": (
        ["induction", "evaluate", "{ind_run_truncated}"],
        "model.safetensors",
    ),
    "induction-evaluate-mode": (
        ["induction", "evaluate", "{ind_run}", "--mode", "round", "--bits", "8"],
        "round",
    ),
    "induction-evaluate-bits": (["induction", "evaluate", "{ind_run}", "--bits", "8,x"], "bits"),
    "induction-construct-n": (["induction", "construct", "--n", "2"], "n"),
    "induction-construct-alphabet": (["induction", "construct", "--alphabet", "1"], "alphabet"),
    "induction-construct-mode": (
        ["induction", "construct", "--n", "8", "--mode", "round"],
        "round",
    ),
    "induction-protocol-k": (["induction", "protocol", "--k", "4,x"], "--k"),
    "induction-protocol-bits": (["induction", "protocol", "--k", "4", "--bits", "0"], "bits"),
    "induction-protocol-run": (["induction", "protocol", "--run", "{tmp}/none"], "none"),
    "induction-sweep-layers": (
        ["induction", "sweep", "--out", "{out}", *IND_SWEEP[:4], "--layers", "0", *IND_SWEEP[6:]],
        "n_layer",
    ),
    "induction-sweep-heads": (
        ["induction", "sweep", "--out", "{out}", *IND_SWEEP, "--heads", "3"],
        "n_head",
    ),
    "induction-sweep-ns": (["induction", "sweep", "--out", "{out}", "--ns", "2"], "n"),
    "induction-sweep-out-other-kind": (
        ["induction", "sweep", "--out", "{data_sweep}", *IND_SWEEP],
        "data",
    ),
    "induction-sweep-other-config": (
        ["induction", "sweep", "--out", "{induction_sweep}", *IND_SWEEP, "--seeds", "5"],
        "different config",
    ),
    "induction-gather-n": (["induction", "gather", "--n", "0"], "n"),
    "induction-gather-mode": (["induction", "gather", "--n", "8", "--mode", "round"], "round"),
    "induction-gather-bits": (["induction", "gather", "--n", "8", "--bits", "0"], "bits"),
    "induction-heads-missing": (
        ["induction", "heads", "--model", "{tmp}/nomodel", "--out", "{out}"],
        "nomodel",
    ),
    "induction-heads-truncated": (
        ["induction", "heads", "--model", "{run_truncated}", "--out", "{out}"],
        "checkpoint.safetensors",
    ),
    "induction-heads-sequences": (
        ["induction", "heads", "--model", "{run}", "--out", "{out}", "--sequences", "0"],
        "sequences",
    ),
    "induction-compare-depth-store": (
        ["induction", "compare-depth", "--data", "{store_no_bin}", "--out", "{out}"],
        ".bin",
    ),
    "induction-compare-depth-steps": (
        ["induction", "compare-depth", "--data", "{store}", "--out", "{out}", "--steps", "0"],
        "steps",
    ),
    "induction-compare-depth-heads": (
        ["induction", "compare-depth", "--data", "{store}", "--out", "{out}", "--n-head", "0"],
        "head",
    ),
    "induction-separation-mode": (
        ["induction", "separation", "--out", "{out}", "--mode", "round"],
        "round",
    ),
    "induction-separation-steps": (
        ["induction", "separation", "--out", "{out}", "--steps", "-1"],
        "steps",
    ),
    "induction-separation-out-is-sweep": (
        ["induction", "separation", "--out", "{data_sweep}", "--quick"],
        "sweep",
    ),
    # --- validate
    "validate-corpus-path": (
        ["validate", "--corpus", "{tmp}/nocorpus", "--out", "{out}"],
        "nocorpus",
    ),
    "validate-points": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--points", "0"],
        "points",
    ),
    "validate-model-sweep": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--model-sweep", "1x16,1x32"],
        "at least 3 models",
    ),
    "validate-backend": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--backend", "slurm"],
        "slurm",
    ),
    "validate-reference-path": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--reference-model", "{tmp}/noref"],
        "noref",
    ),
    "validate-out-is-sweep": (["validate", "--corpus", "{text}", "--out", "{data_sweep}"], "sweep"),
    # --- demo
    "demo-corpus": (["demo", "--out", "{out}", "--corpus", "klingon"], "klingon"),
    "demo-points": (["demo", "--out", "{out}", "--points", "0"], "points"),
    "demo-token-order": (
        ["demo", "--out", "{out}", "--min-tokens", "90000", "--max-tokens", "1000"],
        "tokens",
    ),
    "demo-workers": (["demo", "--out", "{out}", "--workers", "0"], "workers"),
    "demo-out-is-sweep": (["demo", "--out", "{data_sweep}"], "sweep"),
    "demo-id-batch": (["demo", "--out", "{out}", "--id-batch-size", "5"], "batch"),
    # --- validate (any corpus; the demo's pipeline)
    "validate-corpus": (["validate", "--corpus", "klingon", "--out", "{out}"], "klingon"),
    "validate-too-few-points": (
        [
            "validate",
            "--corpus",
            "{store}",
            "--out",
            "{out}",
            "--min-tokens",
            "500",
            "--max-tokens",
            "5000",
        ],
        "--id-batch-size",
    ),
    "validate-max-tokens": (["validate", "--corpus", "{store}", "--out", "{out}"], "--max-tokens"),
    "validate-reference": (
        ["validate", "--corpus", "{store}", "--out", "{out}", "--reference-model", "{tmp}/nope"],
        "--reference-model",
    ),
}


def _commands(cmd: object, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every leaf command of the CLI, as a tuple of names (walked through click's API)."""
    if not hasattr(cmd, "list_commands"):
        return {prefix}
    out: set[tuple[str, ...]] = set()
    for name in cmd.list_commands(None):
        out |= _commands(cmd.get_command(None, name), (*prefix, name))
    return out


def test_every_command_has_cases() -> None:
    commands = _commands(make_app())
    assert len(commands) >= 20
    covered = {c for c in commands if any(tuple(a[: len(c)]) == c for a, _ in CASES.values())}
    assert covered | {("corpus", "list")} == commands, sorted(commands - covered)
    assert len(CASES) >= 80


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Good and damaged inputs, made once: read-only for the cases."""
    from scalelab.induction.model import InductionConfig
    from scalelab.induction.train import InductionTrainConfig, train_induction
    from scalelab.lm.config import configs_for_preset
    from scalelab.lm.train import train
    from scalelab.runs import outdir

    root = tmp_path_factory.mktemp("bad-input")
    p: dict[str, Path] = {"root": root}
    p["store"] = make_store(root / "store")
    for name, damage in (("store_no_bin", "bin"), ("store_bad_meta", "meta")):
        shutil.copytree(p["store"], root / name)
        p[name] = root / name
        if damage == "bin":
            (root / name / "train.bin").unlink()
        else:
            meta = json.loads((root / name / "meta.json").read_text())
            meta["splits"] = "edited by hand"
            (root / name / "meta.json").write_text(json.dumps(meta))
    model_cfg, train_cfg = configs_for_preset(
        "tiny",
        p["store"],
        block_size=16,
        batch_size=2,
        eval_batches=1,
        test_tokens=64,
        max_steps=2,
        eval_interval=2,
        n_layer=1,
        n_embd=32,
        n_head=1,
    )
    p["run"] = root / "run"
    train(model_cfg, train_cfg, p["store"], p["run"], quiet=True)
    for name in ("run_truncated", "run_no_config", "run_copy"):
        shutil.copytree(p["run"], root / name, ignore=shutil.ignore_patterns(outdir.LOCK))
        p[name] = root / name
    weights = p["run_truncated"] / "checkpoint.safetensors"
    weights.write_bytes(weights.read_bytes()[:300])
    (p["run_no_config"] / "config.json").unlink()
    p["ind_run"] = root / "ind_run"
    train_induction(
        InductionConfig(alphabet_size=4, max_len=8, n_layer=1, n_head=1, d_model=8),
        InductionTrainConfig(n=8, max_steps=2, eval_interval=2, eval_samples=8),
        p["ind_run"],
    )
    shutil.copytree(p["ind_run"], root / "ind_run_truncated")
    p["ind_run_truncated"] = root / "ind_run_truncated"
    model = p["ind_run_truncated"] / "model.safetensors"
    model.write_bytes(model.read_bytes()[:100])
    _files(root, p)
    outdir.release_all()
    for lock in root.rglob(outdir.LOCK):
        lock.unlink()
    return p


def _files(root: Path, p: dict[str, Path]) -> None:
    rng = np.random.default_rng(0)
    points = rng.normal(size=(300, 5))
    p["points"] = root / "points.npy"
    np.save(p["points"], points)
    p["few_points"] = root / "few.npy"
    np.save(p["few_points"], points[:10])
    nan = points.copy()
    nan[3, 2] = np.nan
    p["nan_npy"] = root / "nan.npy"
    np.save(p["nan_npy"], nan)
    p["empty_npy"] = root / "empty.npy"
    p["empty_npy"].write_bytes(b"")
    p["truncated_npy"] = root / "truncated.npy"
    p["truncated_npy"].write_bytes(p["points"].read_bytes()[:200])
    p["latin1_csv"] = root / "latin1.csv"
    p["latin1_csv"].write_bytes("n,loss\n1,caf\xe9\n".encode("latin-1"))
    p["latin1_txt"] = root / "latin1.txt"
    p["latin1_txt"].write_bytes("na\xefve text\n\nmore caf\xe9 text\n".encode("latin-1"))
    p["empty_txt"] = root / "empty.txt"
    p["empty_txt"].write_text("\n \n")
    p["empty_csv"] = root / "empty.csv"
    p["empty_csv"].write_text("")
    p["text"] = root / "text.txt"
    p["text"].write_text("\n\n".join(f"doc {i} says {i * 7 % 13}" for i in range(40)))
    p["table"] = root / "table.csv"
    n = np.array([1e3, 2e3, 4e3, 8e3, 16e3])
    p["table"].write_text("n,loss\n" + "".join(f"{a},{3 * a**-0.3}\n" for a in n))
    p["table_no_loss"] = root / "table_no_loss.csv"
    p["table_no_loss"].write_text("n,val\n" + "".join(f"{a},{a}\n" for a in n))
    p["table_negative"] = root / "table_negative.csv"
    p["table_negative"].write_text("n,loss\n" + "".join(f"{a},{-a}\n" for a in n))
    p["emb"] = root / "emb.safetensors"
    save_file({"embeddings": points.astype(np.float32)}, str(p["emb"]))
    p["emb_truncated"] = root / "emb_truncated.safetensors"
    p["emb_truncated"].write_bytes(p["emb"].read_bytes()[:120])
    for name, kind in (("data_sweep", "data"), ("induction_sweep", "induction")):
        p[name] = root / name
        p[name].mkdir()
        (p[name] / "sweep.json").write_text(json.dumps({"kind": kind, "config": {"x": 1}}))
    p["corrupt_sweep"] = root / "corrupt_sweep"
    p["corrupt_sweep"].mkdir()
    (p["corrupt_sweep"] / "sweep.json").write_text('{"kind": "data", "conf')
    p["odd_kind_sweep"] = root / "odd_kind_sweep"
    p["odd_kind_sweep"].mkdir()
    (p["odd_kind_sweep"] / "sweep.json").write_text('{"kind": "weather", "config": {}}')


def _too_slow(*_: object) -> None:
    raise TimeoutError("the command ran instead of refusing its input")


def _snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    return {
        str(f): (f.stat().st_size, f.stat().st_mtime_ns)
        for root in roots
        for f in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str, inputs: dict[str, Path], tmp_path: Path, run_cli: Callable) -> None:
    args, words = CASES[case]
    names = {**inputs, "tmp": tmp_path, "out": tmp_path / "out"}
    argv = [a.format(**names) if "{" in a else a for a in args]
    before = _snapshot(inputs["root"], tmp_path)
    torch.manual_seed(0)
    signal.signal(signal.SIGALRM, _too_slow)
    signal.alarm(60)  # bad input is refused within seconds; a case that runs is a failure
    try:
        result = run_cli(*argv)
    finally:
        signal.alarm(0)
    assert result.returncode == 2, (result.stdout[-500:], result.stderr[-2000:])
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert words.format(**names) in result.stderr, result.stderr
    assert FIX_WORDS.search(result.stderr.removeprefix("error: ")), result.stderr
    assert _snapshot(inputs["root"], tmp_path) == before, result.stderr
