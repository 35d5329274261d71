"""Bad input to every command and subcommand: exactly one line on stderr that names the
problem and the fix, exit code 2, no traceback, and the output location left as it was.

Table-driven: each case is (command line, the phrase of the message that names what is
wrong), and FIXES holds the phrase that is its fix (an instruction, or the rule a valid value
obeys: see FIX). `{name}` in a command line is a prepared input (see `inputs`): good and
damaged token stores, run folders, tables and point files, built once per module. Every case
runs the real `main()` in this process (`run_cli`), with the inputs and the output location
snapshotted before and after, their parent folder's entries included (see `_snapshot`).
The list of commands is checked against `scalelab --help`, so a new command without cases
fails here.
"""

from __future__ import annotations

import json
import os
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
from scalelab.cli.induction import EXPERIMENTS

# A fix is an instruction (an imperative verb first) or the rule a valid value obeys (a bound,
# a range or the allowed choices). Each case names the phrase of its line that is the fix.
FIX = re.compile(
    r"^(use|give|choose|pick|check|delete|restore|make|prepare|raise|lower|sort|set|change|"
    r"convert|pass|keep|list|point at|see|name|drop|hold out)\b"
    r"|\b(must|needs?)\b.*(>=|<=|>|<|\bin [\[(]|one of|positive|finite|comma-separated|"
    r"at least|exceed| or )"
    r"|\bshould be (greater|less) than\b"  # click's refusal of a value outside an option's range
)

TINY_TRAIN = [
    "--preset",
    "tiny",
    "--block-size",
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

REQUIRED = {"compare-depth": ("--data", "{store}")}  # an experiment's required options

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
    "id-k-zero": (["id", "{points}", "--k", "0"], "k = 0"),
    "id-estimator": (["id", "{points}", "--estimator", "pca"], "pca"),
    "id-metric": (["id", "{points}", "--metric", "manhattan"], "manhattan"),
    "id-precision": (["id", "{points}", "--precision", "fp16"], "fp16"),
    "id-aggregate": (["id", "{points}", "--aggregate", "median"], "median"),
    "id-batch-size": (["id", "{points}", "--batch-size", "1"], "batch size 1 <= k = 20"),
    "id-too-few-points": (["id", "{few_points}", "--k", "20"], "points"),
    "id-out-is-folder": (["id", "{points}", "--out", "{store}"], "folder"),
    # --- exponents
    "exponents-nothing": (["exponents"], "--d"),
    "exponents-negative-d": (
        ["exponents", "--d", "-1"],
        "d (intrinsic dimension) must be > 0, got -1.0",
    ),
    "exponents-nan-d": (
        ["exponents", "--d", "nan"],
        "d (intrinsic dimension) must be finite, got nan",
    ),
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
    "fit-npy": (["fit", "{points}", "--x", "n", "--y", "loss"], "TABLE {points}"),
    "fit-no-x": (["fit", "{table}", "--y", "loss"], "--form power needs --x"),
    "fit-chinchilla-no-cols": (
        ["fit", "{table}", "--y", "loss", "--form", "chinchilla"],
        "--form chinchilla needs --n-col",
    ),
    # --- report
    "report-missing": (["report", "{tmp}/nowhere"], "nowhere"),
    "report-not-a-sweep": (["report", "{store}"], "sweep.json"),
    "report-corrupt-sweep-json": (["report", "{corrupt_sweep}"], "sweep.json"),
    "report-unknown-kind": (["report", "{odd_kind_sweep}"], "kind"),
    "report-old-depth": (["report", "{old_depth}"], "experiment.json"),
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
    "corpus-prepare-out-is-run": (
        ["corpus", "prepare", "{text}", "--out", "{run}"],
        "{run} already exists",
    ),
    "corpus-synth-family": (["corpus", "synth", "fact", "--out", "{out}"], "'fact'"),
    "corpus-synth-param": (["corpus", "synth", "facts", "--param", "a=-1", "--out", "{out}"], "a"),
    "corpus-synth-name": (["corpus", "synth", "markov", "--param", "b=1", "--out", "{out}"], "b"),
    "corpus-synth-suffix": (["corpus", "synth", "facts", "--out", "{tmp}/c.csv"], ".csv"),
    "corpus-info-missing": (["corpus", "info", "{tmp}/nostore"], "nostore"),
    "forecast-missing": (["forecast", "{tmp}/none.csv", "--out", "{out}"], "none.csv"),
    "forecast-columns": (["forecast", "{table}", "--out", "{out}"], "'train_tokens'"),
    "forecast-alpha": (
        ["forecast", "{table}", "--x", "n", "--y", "loss", "--alpha", "-1", "--out", "{out}"],
        "--alpha",
    ),
    "forecast-k": (
        ["forecast", "{table}", "--x", "n", "--y", "loss", "--k", "9", "--out", "{out}"],
        "9 of 5 runs",
    ),
    "validate-many-nothing": (["validate-many", "--out", "{out}"], "declaration"),
    "validate-many-no-run": (
        ["validate-many", "{tmp}/nofolder", "--no-run", "--out", "{out}"],
        "--no-run",
    ),
    "validate-many-declaration": (
        ["validate-many", "--declaration", "{tmp}/nod.toml", "--out", "{out}"],
        "nod.toml",
    ),
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
        ["train", "--data", "{store}", "--out", "{out}", *TINY_TRAIN, "--block-size", "100000"],
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
    "estimate-k": (
        ["estimate", "--model", "{run}", "--out", "{out}", "--k", "0"],
        "k must be a positive integer, got 0",
    ),
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
        "{tmp}/m does not exist",
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
        "got '64,big'",
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
        "holds a 'induction' sweep, not 'data'",
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
        "holds a 'data' sweep, not 'model'",
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
    "manifold-sweep-online-steps": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "theorem", "--online-steps", "0"],
        "online_steps (--online-steps) must be >= 1",
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
        "got '10,x'",
    ),
    "manifold-sweep-attention": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--attention", "linear"],
        "linear",
    ),
    "manifold-sweep-out-other-kind": (
        ["manifold", "sweep", "--out", "{data_sweep}", "--preset", "smoke"],
        "holds a 'data' sweep, not 'manifold'",
    ),
    "manifold-sweep-ensemble": (
        ["manifold", "sweep", "--out", "{out}", "--preset", "smoke", "--ensemble", "0"],
        "--ensemble 0: ensemble must be >= 1",
    ),
    "manifold-levers-samples": (
        ["manifold", "levers", "--out", "{out}", "--samples", "1"],
        "--samples 1: samples and inits must be >= 2",
    ),
    "manifold-levers-lever": (
        ["manifold", "levers", "--out", "{out}", "--levers", "v1,adamw"],
        "levers must be among v1, patience, anneal, val-grows, val-anneal",
    ),
    "manifold-construct-grid": (
        ["manifold", "construct", "--out", "{out}", "--grid", "1,4"],
        "--grid 1,4: a grid needs G >= 2",
    ),
    "manifold-construct-d": (
        ["manifold", "construct", "--out", "{out}", "--d", "0"],
        "--d 0: every dimension d must be an integer >= 1",
    ),
    "manifold-construct-beta": (
        ["manifold", "construct", "--out", "{out}", "--beta", "1.5"],
        "--beta 1.5: the Hölder exponent β must be in (0, 1]",
    ),
    "manifold-combine-source": (
        ["manifold", "combine", "{data_sweep}", "--out", "{out}"],
        "not a manifold sweep folder with runs.csv",
    ),
    "manifold-combine-out": (
        ["manifold", "combine", "{data_sweep}", "--out", "{data_sweep}"],
        "exists and is not a combined table",
    ),
    "manifold-select-one": (
        ["manifold", "select", "{data_sweep}", "--out", "{out}"],
        "give at least two candidate sweep folders",
    ),
    "manifold-select-source": (
        ["manifold", "select", "{data_sweep}", "{data_sweep}", "--out", "{out}"],
        "not a manifold sweep folder with runs.csv",
    ),
    "manifold-sample-d": (["manifold", "sample", "--out", "{out}/x.npz", "--d", "0"], "got d=0"),
    "manifold-sample-ambient": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--d", "4", "--D", "2"],
        "ambient dimension D=2",
    ),
    "manifold-sample-beta": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--beta", "0"],
        "beta",
    ),
    "manifold-sample-warp": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--warp", "1"],
        "warp",
    ),
    "manifold-sample-n": (["manifold", "sample", "--out", "{out}/x.npz", "--n", "0"], "--n 0"),
    "manifold-sample-kind": (
        ["manifold", "sample", "--out", "{out}/x.npz", "--manifold", "cube"],
        "cube",
    ),
    # --- induction
    "induction-solve-negative": (["induction", "solve", "0", "-1", "2"], "-1"),
    "induction-solve-text": (["induction", "solve", "0", "a"], "tokens"),
    "induction-generate-kind": (["induction", "generate", "--kind", "easy"], "easy"),
    "induction-generate-n": (
        ["induction", "generate", "--n", "0"],
        "n >= 1 and count >= 1, got 4, 0, 3",
    ),
    "induction-generate-hard-fraction": (
        ["induction", "generate", "--kind", "mixture", "--hard-fraction", "2"],
        "fraction",
    ),
    "induction-generate-count": (["induction", "generate", "--count", "-1"], "count"),
    "induction-train-layers": (
        ["induction", "train", "--out", "{out}", "--layers", "0"],
        "n_layer",
    ),
    "induction-train-heads": (
        ["induction", "train", "--out", "{out}", "--heads", "3"],
        "not divisible by n_head 3",
    ),
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
    "induction-construct-n": (["induction", "construct", "--n", "2"], "need n >= 3, got 2"),
    "induction-construct-alphabet": (["induction", "construct", "--alphabet", "1"], "alphabet"),
    "induction-construct-negative-n": (
        ["induction", "construct", "--n", "-5"],
        "(the length, --n), got -5",
    ),
    "induction-construct-mode": (
        ["induction", "construct", "--n", "8", "--mode", "round"],
        "round",
    ),
    "induction-protocol-k": (["induction", "protocol", "--k", "4,x"], "--k"),
    "induction-protocol-bits": (["induction", "protocol", "--k", "4", "--bits", "0"], "bits"),
    "induction-protocol-run": (["induction", "protocol", "--run", "{tmp}/none"], "none"),
    "induction-size-ns": (["induction", "size", "--out", "{out}", "--ns", "2,x"], "2,x"),
    "induction-formation-n": (["induction", "formation", "--out", "{out}", "--n", "2"], "n >= 3"),
    "induction-bound-ns": (["induction", "bound", "--out", "{out}", "--ns", "1"], "every n >= 3"),
    "induction-trained-separation-lengths": (
        ["induction", "trained-separation", "--out", "{out}", "--min-train-n", "500"],
        "min_train_n",
    ),
    "induction-sweep-layers": (
        ["induction", "sweep", "--out", "{out}", *IND_SWEEP[:4], "--layers", "0", *IND_SWEEP[6:]],
        "n_layer must be >= 1, got 0",
    ),
    "induction-sweep-heads": (
        ["induction", "sweep", "--out", "{out}", *IND_SWEEP, "--heads", "3"],
        "n_head",
    ),
    "induction-sweep-ns": (["induction", "sweep", "--out", "{out}", "--ns", "2"], "need n >= 3"),
    "induction-sweep-out-other-kind": (
        ["induction", "sweep", "--out", "{data_sweep}", *IND_SWEEP],
        "holds a 'data' sweep, not 'induction'",
    ),
    "induction-sweep-other-config": (
        ["induction", "sweep", "--out", "{induction_sweep}", *IND_SWEEP, "--seeds", "5"],
        "different config",
    ),
    "induction-gather-n": (["induction", "gather", "--n", "0"], "--n 0: n must be >= 1"),
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
    "induction-compare-depth-no-data": (["induction", "compare-depth", "--out", "{out}"], "--data"),
    "fit-no-y": (["fit", "{table}", "--x", "n"], "--y"),
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
        ["induction", "separation", "--out", "{data_sweep}", "--preset", "quick"],
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
    "validate-check-largest": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--check-largest", "0"],
        "--check-largest 0",
    ),
    "validate-check-smallest": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--check-smallest", "10"],
        "--check-smallest must be in [0, --points 9]",
    ),
    "validate-model-shape": (  # refused before the tokenizer is trained
        ["validate", "--corpus", "{text}", "--out", "{out}", "--model", "2by48"],
        "--model 2by48",
    ),
    "validate-model-sweep-shape": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--model-sweep", "1x16,2by3,2x48"],
        "--model-sweep 2by3",
    ),
    "validate-id-per-doc": (
        ["validate", "--corpus", "{text}", "--out", "{out}", "--id-per-doc", "0"],
        "--id-per-doc 0",
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
    "demo-id-batch": (
        ["demo", "--out", "{out}", "--id-batch-size", "5"],
        "--id-batch-size 5: batch size 5 must exceed K = 20",
    ),
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
            "--id-batch-size",
            "16384",
        ],
        "one MLE batch needs 16,384",
    ),
    "validate-max-tokens": (
        ["validate", "--corpus", "{store}", "--max-tokens", "100000", "--out", "{out}"],
        "--max-tokens",
    ),
    "validate-text-too-small": (  # tokenized outside --out, refused: only the store is kept
        ["validate", "--corpus", "{text}", "--vocab-size", "260", "--quiet", "--out", "{out}"],
        "the val split has",
    ),
    "validate-reference": (
        ["validate", "--corpus", "{store}", "--out", "{out}", "--reference-model", "{tmp}/nope"],
        "--reference-model",
    ),
    # every experiment (cli.induction.EXPERIMENTS): --out an existing file, refused before work
    # (with the inputs an experiment requires)
    **{
        f"induction-{name}-out-is-file": (
            ["induction", name, *REQUIRED.get(name, ()), "--out", "{table}"],
            "is a file",
        )
        for name in EXPERIMENTS
    },
}


# case -> the phrase of its error line that tells the user what to do
FIXES = {
    "ablate-batch-nothing": "give --embeddings FILE, or --model (and --corpus) to embed first",
    "ablate-batch-sizes-text": "--batch-sizes must be comma-separated integers",
    "ablate-batch-sizes-too-big": "give batch sizes between 21 and 300",
    "ablate-batch-truncated": "check the path",
    "ablate-layers-bad": "give an index or one of those",
    "ablate-layers-range": "use an index in [-3, 2] or one of ['embeddings', 'final', ",
    "ablate-layers-truncated": "delete it and rerun the training command to rebuild it",
    "ablate-models-missing": "check the --model list",
    "ablate-models-none": "see `scalelab ablate models --help`",
    "ablate-models-out-is-run": "use a new --out",
    "ablate-positions-groups": "--groups must be a positive integer",
    "ablate-positions-missing": "pass a run or HF folder",
    "corpus-info-a-run": "make one with `scalelab corpus prepare NAME --out DIR`",
    "corpus-info-edited-meta": "prepare the store again with `scalelab corpus prepare`",
    "corpus-info-missing": "make one with `scalelab corpus prepare NAME --out DIR`",
    "corpus-info-missing-bin": "prepare it again",
    "corpus-prepare-empty": "give it some text",
    "corpus-synth-family": "choose one of facts, markov",
    "corpus-synth-param": "a must be a number in [0.05, 20]",
    "corpus-synth-name": "use one of tokens, seed, a, states, doc_len",
    "corpus-synth-suffix": "give a .jsonl or .txt file or a folder",
    "forecast-missing": "give the path of a .csv/.tsv/.parquet file",
    "forecast-columns": "name one of those (--x, --y, ...)",
    "forecast-alpha": "--alpha must be a positive number",
    "forecast-k": "choose --fit-upto or --k so that it uses 3 to 5 runs",
    "validate-many-nothing": "give a declaration file or at least one corpus or validate folder",
    "validate-many-no-run": "drop --no-run to validate it",
    "validate-many-declaration": "pass a .toml or .json file",
    "corpus-prepare-fractions": "keep their sum below 1 (e.g. 0.05 and 0.1)",
    "corpus-prepare-non-utf8": "convert it to UTF-8 or leave it out",
    "corpus-prepare-out-is-run": "choose a new --out folder or delete it",
    "corpus-prepare-split-on": "must be one of blank, line",
    "corpus-prepare-vocab": "give 257 or more",
    "demo-corpus": "check the name or path",
    "demo-id-batch": "raise it",
    "demo-out-is-sweep": "use a new --out",
    "demo-points": "points must be >= 3",
    "demo-token-order": "need 0 < min_tokens < max_tokens",
    "demo-workers": "--workers must be a positive integer",
    "estimate-aggregate": "aggregate must be one of mean, harmonic",
    "estimate-corpus": "check the name or path",
    "estimate-device": "use auto, cpu, cuda or cuda:N",
    "estimate-k": "k must be a positive integer",
    "estimate-layer": "give an index or one of those",
    "estimate-metric": "metric must be one of euclidean, cosine, angular",
    "estimate-missing-model": "pass a run or HF folder",
    "estimate-no-config": "check --model",
    "estimate-per-doc": "per_doc must be a positive integer",
    "estimate-split": "split must be one of train, val, test, all",
    "estimate-truncated-checkpoint": "delete it and rerun the training command to rebuild it",
    "estimate-weights": "use best, latest or a .safetensors file in {run}",
    "exponents-beta": "beta (Hölder smoothness) must be > 0",
    "exponents-d-se": "give 0 (none) or more",
    "exponents-nan-d": "d (intrinsic dimension) must be finite",
    "exponents-negative-d": "d (intrinsic dimension) must be > 0",
    "exponents-nothing": "give exactly one of --d, --alpha-n, --alpha-d",
    "fit-npy": "give a .csv/.tsv/.parquet/.jsonl/.ndjson file",
    "fit-no-x": "give the size column with --x COLUMN",
    "fit-chinchilla-no-cols": "needs --n-col and one of --d-col or --c-col",
    "fit-empty-csv": "give a UTF-8 csv file with a header row",
    "fit-form": "choose one of power, power+E, chinchilla",
    "fit-holdout": "hold out fewer or add runs",
    "fit-missing-column": "name one of those (--x, --y, ...)",
    "fit-missing-table": "give the path of a .csv/.tsv/.parquet file",
    "fit-n-boot": "give 0 (no intervals) or more",
    "fit-negative-loss": "drop or fix those rows",
    "fit-non-utf8": "give a UTF-8 csv file with a header row",
    "id-aggregate": "use 'mean' or 'harmonic'",
    "id-batch-size": "use a batch size above k",
    "id-empty-file": "give a valid .npy file of points (one row per point)",
    "id-estimator": "use one of mle, twonn, mle-calibrated",
    "id-k-zero": "estimators need k >= 2",
    "id-metric": "use one of euclidean, cosine, angular",
    "id-missing-file": "check the path",
    "id-nan-rows": "drop or repair those rows first",
    "id-non-utf8-csv": "give a valid .csv file of points (one row per point)",
    "id-out-is-folder": "give a file path for the output",
    "id-precision": "use auto, fp32, fp64, bf16",
    "id-too-few-points": "give at least k + 1 points",
    "id-truncated-npy": "give a valid .npy file of points (one row per point)",
    "induction-compare-depth-heads": "n_head must be a positive integer",
    "induction-compare-depth-no-data": "give --data STORE",
    "fit-no-y": "give the loss column with --y COLUMN",
    "induction-compare-depth-steps": "max_steps must be a positive integer",
    "induction-compare-depth-store": "prepare it again",
    "induction-construct-alphabet": "needs --alphabet >= 2",
    "induction-construct-negative-n": "needs max_len >= 1",
    "induction-construct-mode": "use one of ('float', 'fixed')",
    "induction-construct-n": "hard instances need n >= 3",
    "induction-evaluate-bits": "--bits must be comma-separated integers",
    "induction-evaluate-missing": "point at a folder written by `scalelab induction train`",
    "induction-evaluate-mode": "use one of ('float', 'fixed')",
    "induction-evaluate-truncated": "point at a folder written by `scalelab induction train`",
    "induction-gather-bits": "raise --bits",
    "induction-gather-mode": "use 'float' or 'fixed'",
    "induction-gather-n": "give a sequence length, e.g. 65",
    "induction-generate-count": "raise the one that is too small",
    "induction-generate-hard-fraction": "hard_fraction must lie in [0, 1]",
    "induction-generate-kind": "--kind must be uniform, hard or mixture",
    "induction-generate-n": "raise the one that is too small",
    "induction-heads-missing": "pass a run or HF folder",
    "induction-heads-sequences": "n_sequences must be a positive integer",
    "induction-heads-truncated": "delete it and rerun the training command to rebuild it",
    "induction-protocol-bits": "bits must be >= 1",
    "induction-protocol-k": "--k must be comma-separated integers",
    "induction-protocol-run": "point at a folder written by `scalelab induction train`",
    "induction-size-ns": "--ns must be comma-separated integers",
    "induction-formation-n": "need alphabet_size >= 3, n >= 3",
    "induction-bound-ns": "ns must be non-empty with every n >= 3",
    "induction-separation-mode": "mode must be one of ('float', 'fixed')",
    "induction-separation-out-is-sweep": "use a new --out",
    "induction-separation-steps": "steps must be >= 1",
    "induction-solve-negative": "give ids 0, 1, 2, ...",
    "induction-solve-text": "see `scalelab induction solve --help`",
    "induction-sweep-heads": "change one or set d_head",
    "induction-sweep-layers": "n_layer must be >= 1",
    "induction-sweep-ns": "induction sweeps need n >= 3 and alphabet sizes >= 3",
    "induction-sweep-other-config": "use a new --out folder (a saved config without these keys",
    "induction-sweep-out-other-kind": "use a new --out",
    "induction-train-heads": "change one or set d_head",
    "induction-train-layers": "n_layer must be >= 1",
    "induction-train-out-is-sweep": "use a new --out",
    "induction-train-positions": "positions must be one of ('learned', 'sinusoidal', 'relative')",
    "induction-trained-separation-lengths": "change the one out of order",
    "manifold-construct-beta": "use e.g. 0.5,1",
    "manifold-construct-d": "use e.g. 1,2,3",
    "manifold-construct-grid": "use e.g. 4,8,16,32",
    "manifold-levers-lever": "give one or more of those",
    "manifold-levers-samples": "use e.g. 4 and 4",
    "manifold-sweep-ensemble": "use 1 for one model",
    "manifold-sample-ambient": "use --D 5 or more",
    "manifold-sample-beta": "beta must be in (0, 1]",
    "manifold-combine-source": "give folders made by `scalelab manifold sweep`",
    "manifold-combine-out": "give a new folder",
    "manifold-select-one": "give at least two candidate sweep folders",
    "manifold-select-source": "give folders made by `scalelab manifold sweep`",
    "manifold-sample-d": "need d >= 1 and D >= 1",
    "manifold-sample-kind": "choose one of ['sphere', 'subspace', 'swissroll', 'torus']",
    "manifold-sample-n": "use 1 or more points",
    "manifold-sample-warp": "warp must be in [0, 1)",
    "manifold-sweep-attention": "attention must be one of softmax, relu",
    "manifold-sweep-betas": "beta must be in (0, 1]",
    "manifold-sweep-dims": "manifold dimension d must be a positive integer",
    "manifold-sweep-online-steps": "use 1 or more steps",
    "manifold-sweep-manifold": "choose one of ['sphere', 'subspace', 'swissroll', 'torus']",
    "manifold-sweep-n-values": "--n-values must be comma-separated integers",
    "manifold-sweep-out-other-kind": "use a new --out",
    "manifold-sweep-preset": "choose one of smoke, quick, full",
    "report-corrupt-sweep-json": "restore sweep.json or run the sweep again into a new folder",
    "report-missing": "give a folder made by `scalelab sweep`",
    "report-not-a-sweep": "give a folder made by `scalelab sweep`",
    "report-unknown-kind": "give a folder made by one of those sweeps",
    "report-old-depth": "make it by running `scalelab induction compare-depth --data STORE",
    "sweep-data-model": "GPTConfig.n_layer must be a positive integer",
    "sweep-data-no-bin": "prepare it again",
    "sweep-data-out-is-run": "use a new --out",
    "sweep-data-out-other-kind": "use a new --out",
    "sweep-data-points": "a grid needs at least 2 points",
    "sweep-data-policy": "policy must be one of converge, epochs, tokens",
    "sweep-data-sizes-order": "sort them, no repeats",
    "sweep-data-sizes-text": "--sizes must be comma-separated integers",
    "sweep-data-too-many-tokens": "use --max-tokens 60997 or less",
    "sweep-data-workers": "--workers must be a positive integer",
    "sweep-model-empty": "--models must be comma-separated values",
    "sweep-model-epochs": "epochs must be a positive number",
    "sweep-model-out-other-kind": "use a new --out",
    "sweep-model-shape": "give a preset name or a shape such as 4x128",
    "sweep-model-token-budget": "pass --token-budget N",
    "train-batch-zero": "batch_size must be a positive integer",
    "train-context": "use a smaller --block-size (at most 60996) or more data",
    "train-device": "use auto, cpu, cuda or cuda:N",
    "train-dropout": "dropout must be in [0, 1)",
    "train-dtype": "dtype must be one of auto, float32, bfloat16",
    "train-grad-accum": "grad_accum must be a positive integer",
    "train-lr": "use 0 < lr <= 1 (e.g. 1e-3)",
    "train-min-lr": "lower --min-lr",
    "train-missing-store": "make one with `scalelab corpus prepare NAME --out DIR`",
    "train-other-config": "use a new --out folder or repeat the original options",
    "train-out-is-file": "give a folder path to --out",
    "train-out-is-sweep": "use a new --out",
    "train-preset": "choose one of ['medium', 'paper-125m', 'small', 'tiny']",
    "train-store-edited-meta": "prepare the store again with `scalelab corpus prepare`",
    "train-store-missing-bin": "prepare it again",
    "train-threads": "--threads must be a positive integer",
    "usage-bad-float": "see `scalelab exponents --help`",
    "usage-bad-int": "see `scalelab induction generate --help`",
    "usage-extra-argument": "see `scalelab corpus info --help`",
    "usage-missing-out": "see `scalelab induction sweep --help`",
    "usage-unknown-command": "see `scalelab --help`",
    "usage-unknown-option": "see `scalelab corpus list --help`",
    "validate-backend": "pick one",
    "validate-corpus": "check the name or path",
    "validate-corpus-path": "check the name or path",
    "validate-max-tokens": "use --max-tokens 60997 or less",
    "validate-text-too-small": "give a larger corpus (or, from Python, a smaller train.block_size)",
    "validate-model-sweep": "list more or none",
    "validate-check-largest": "must be a positive integer",
    "validate-check-smallest": "must be in [0, --points 9]",
    "validate-model-shape": "give a preset name or a shape",
    "validate-model-sweep-shape": "give a preset name or a shape",
    "validate-id-per-doc": "must be a positive integer",
    "validate-out-is-sweep": "use a new --out",
    "validate-points": "points must be >= 3",
    "validate-reference": "check the path",
    "validate-reference-path": "check the path",
    "validate-too-few-points": "give a corpus whose test split (10% of the documents) holds 128 "
    "documents of 128+ tokens or --id-batch-size 4096 (a smaller scale)",
    **{f"induction-{name}-out-is-file": "give a folder path" for name in EXPERIMENTS},
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
    assert FIXES.keys() == CASES.keys()
    assert [c for c, fix in FIXES.items() if not FIX.search(fix)] == []


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Good and damaged inputs, made once: read-only for the cases."""
    from scalelab.induction.config import InductionConfig, InductionTrainConfig
    from scalelab.induction.train import train_induction
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
        InductionConfig(alphabet_size=4, max_len=8, n_layer=1, n_head=1, n_embd=8),
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
    p["old_depth"] = root / "old_depth"  # compare-depth before its experiment marker
    p["old_depth"].mkdir()
    (p["old_depth"] / "sweep.json").write_text('{"kind": "depth", "config": {}}')


def _too_slow(*_: object) -> None:
    raise TimeoutError("the command ran instead of refusing its input")


# refused after the corpus was tokenised: OUT/data (the token store) is kept, nothing else
KEEPS_STORE = {"validate-text-too-small"}
OLD = 1_000_000_000 * 10**9  # 2001-09-09, in ns: the directories' mtime planted before a case


def _entries(roots: tuple[Path, ...]) -> list[Path]:
    """Each root, everything below it, and its parent's entries (where a root itself would be
    made or removed)."""
    found = {p for root in roots for p in (root.parent, *root.parent.iterdir(), *root.rglob("*"))}
    return sorted(found)


def _snapshot(roots: tuple[Path, ...]) -> dict[str, tuple[int, int, int]]:
    """Size, mtime and link count of every entry. With every directory's mtime first set to OLD
    (`_plant_old_mtimes`), an entry created and removed again during the case (an output folder
    made, then deleted on error) leaves a new mtime on its parent, even within one clock tick."""
    return {
        str(p): (0 if p.is_dir() else st.st_size, st.st_mtime_ns, st.st_nlink)
        for p in _entries(roots)
        if (st := p.lstat())
    }


def _plant_old_mtimes(roots: tuple[Path, ...]) -> None:
    for p in _entries(roots):
        if p.is_dir() and not p.is_symlink():
            os.utime(p, ns=(OLD, OLD))


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(case: str, inputs: dict[str, Path], tmp_path: Path, run_cli: Callable) -> None:
    args, words = CASES[case]
    names = {**inputs, "tmp": tmp_path, "out": tmp_path / "out"}
    argv = [a.format(**names) if "{" in a else a for a in args]
    roots = (inputs["root"], tmp_path)
    _plant_old_mtimes(roots)
    before = _snapshot(roots)
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
    # in-process, click names the program after pytest's __main__ module
    result.stderr = result.stderr.replace("python -m pytest.scalelab", "scalelab")
    assert FIXES[case].format(**names) in result.stderr, result.stderr
    after = _snapshot(roots)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if case in KEEPS_STORE:  # refused after tokenising: the token store alone, for the rerun
        out = tmp_path / "out"
        assert [p.name for p in out.iterdir()] == ["data"] and (out / "data/meta.json").is_file()
        assert "the token store is kept" in result.stderr
        changed = [k for k in changed if k != str(tmp_path) and not k.startswith(str(out))]
    assert not changed, (changed, result.stderr)
