"""Do two checkouts' commands build the same configs from the same options? (a CLI
refactor's proof of no change, beside same_outputs.py, which compares what a run computed)

    python bench/same_cli_configs.py OLD/src NEW/src

Runs each command line of `CASES` under each `src` (a fresh process per tree) with the
library call the command makes stubbed out (`STUBS`): the stub records the configs it is
handed, as the JSON a run saves (`to_dict()`), and stops. Prints `identical` and exits 0
when every command built the same configs in both trees; else the cases that differ, and
exits 1. Both trees' stderr (notes, refusals) is printed where it differs. No model, corpus
or token store is read (a token store is stubbed: 300 tokens of vocabulary).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

STUBS = [
    ("scalelab.pipeline.run", "run_pipeline"),
    ("scalelab.probe.estimate", "estimate"),
    ("scalelab.probe.ablations", "ablate_along"),
    ("scalelab.probe.ablations", "ablate_models"),
    ("scalelab.probe.ablations", "ablate_batch_size"),
    ("scalelab.lm.train", "train"),
    ("scalelab.sweeps.data", "make_config"),
    ("scalelab.sweeps.model", "make_config"),
    ("scalelab.induction.sweep", "run_induction_sweep"),
    ("scalelab.induction.train", "train_induction"),
    ("scalelab.induction.separation", "run_separation"),
    ("scalelab.induction.trained_separation", "run_trained_separation"),
    ("scalelab.induction.formation", "run_formation"),
    ("scalelab.induction.size", "run_size"),
    ("scalelab.induction.bound_trained", "run_bound_trained"),
    ("scalelab.probe.heads", "run_heads"),
    ("scalelab.induction.compare_depth", "compare_depth"),
    ("scalelab.probe.depth", "compare_depth"),  # where an older tree holds it
]

CASES = [
    ["validate", "--corpus", "x", "--out", "o"],
    ["validate", "--corpus", "x", "--out", "o", "--preset", "quick"],
    [
        "validate",
        "--corpus",
        "x",
        "--out",
        "o",
        "--preset",
        "gpu",
        "--points",
        "7",
        "--model-sweep",
        "",
    ],
    [
        "validate",
        "--corpus",
        "x",
        "--out",
        "o",
        "--id-batch-size",
        "512",
        "--id-precision",
        "float32",
        "--check-smallest",
        "0",
        "--model-sweep",
        "1x16,1x32,2x48",
    ],
    ["demo", "--out", "o"],
    ["demo", "--out", "o", "--points", "5", "--check-largest", "2"],
    ["estimate", "--model", "m"],
    [
        "estimate",
        "--model",
        "m",
        "--k",
        "5",
        "--max-docs",
        "3",
        "--precision",
        "float32",
        "--layer",
        "3",
        "--context-len",
        "64",
    ],
    ["ablate", "layers", "--model", "m", "--per-doc", "4"],
    ["ablate", "positions", "--model", "m", "--per-doc", "4"],
    ["ablate", "models", "--model", "m", "--model", "n", "--k", "7"],
    [
        "ablate",
        "batch-size",
        "--embeddings",
        "e.safetensors",
        "--k",
        "7",
        "--batch-sizes",
        "64,128",
    ],
    ["train", "--data", "d", "--preset", "tiny", "--out", "o"],
    [
        "train",
        "--data",
        "d",
        "--preset",
        "small",
        "--out",
        "o",
        "--lr",
        "0.01",
        "--patience",
        "3",
        "--context-len",
        "64",
        "--max-steps",
        "50",
    ],
    ["sweep", "data", "--data", "d", "--out", "o", "--sizes", "1000,2000"],
    [
        "sweep",
        "data",
        "--data",
        "d",
        "--out",
        "o",
        "--sizes",
        "1000,2000",
        "--preset",
        "small",
        "--patience",
        "6",
        "--lr",
        "0.003",
        "--policy",
        "epochs",
        "--block-size",
        "32",
    ],
    [
        "sweep",
        "model",
        "--data",
        "d",
        "--out",
        "o",
        "--models",
        "1x16,2x32",
        "--eval-interval",
        "10",
        "--seed",
        "3",
    ],
    ["induction", "sweep", "--out", "o"],
    [
        "induction",
        "sweep",
        "--out",
        "o",
        "--ns",
        "8,16",
        "--target",
        "0",
        "--train-bits",
        "4,8",
        "--alphabets",
        "3",
    ],
    ["induction", "train", "--out", "o"],
    [
        "induction",
        "train",
        "--out",
        "o",
        "--n",
        "16",
        "--layers",
        "1",
        "--target",
        "0",
        "--train-bits",
        "0",
        "--width",
        "32",
    ],
    ["induction", "separation", "--out", "o"],
    ["induction", "separation", "--out", "o", "--quick", "--mode", "float"],
    ["induction", "trained-separation", "--out", "o", "--quick"],
    ["induction", "trained-separation", "--out", "o", "--n", "65", "--seeds", "0,1"],
    ["induction", "formation", "--out", "o", "--seeds", "4"],
    ["induction", "size", "--out", "o", "--ns", "16,32", "--alphabets", "3,sqrt"],
    ["induction", "bound", "--out", "o", "--widths", "2"],
    ["induction", "heads", "--model", "m", "--sequences", "4", "--icl-from", "stream"],
    [
        "induction",
        "compare-depth",
        "--data",
        "d",
        "--out",
        "o",
        "--steps",
        "10",
        "--sequences",
        "3",
    ],
]


class Stop(Exception):
    pass


def collect() -> dict[str, list[Any]]:
    """Every case's configs under the `scalelab` this process imports."""
    captured: list[Any] = []

    def grab(*args: Any, **kw: Any) -> None:
        captured.append([a.to_dict() for a in [*args, *kw.values()] if hasattr(a, "to_dict")])
        raise Stop

    class FakeStore:
        def __init__(self, *a: Any, **k: Any) -> None:
            self.vocab_size, self.n_tokens = 300, 10**6

    importlib.import_module("scalelab.text.store").TokenStore = FakeStore
    importlib.import_module("scalelab.induction.trained_separation").plan = lambda cfg: {}
    for module, name in STUBS:
        try:
            setattr(importlib.import_module(module), name, grab)
        except ModuleNotFoundError:  # a module the other tree has (moved between them)
            continue
    from scalelab.cli import main

    out = {}
    for case in CASES:
        captured.clear()
        try:
            main(case)
        except Stop:
            pass
        except SystemExit as e:
            captured.append(f"exit {e.code}")
        out[" ".join(case)] = captured[:]
    return out


def run(src: str) -> tuple[dict[str, Any], str]:
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
    cmd = [sys.executable, __file__, "--collect"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env.get("TMPDIR"))
    if done.returncode:
        raise SystemExit(f"{src}: {done.stderr}")
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def main() -> None:
    if sys.argv[1:] == ["--collect"]:
        print(json.dumps(collect(), sort_keys=True, default=str))
        return
    (old, old_err), (new, new_err) = run(sys.argv[1]), run(sys.argv[2])
    differ = [case for case in old if old[case] != new.get(case)]
    for case in differ:
        print(f"differs: scalelab {case}\n  old: {old[case]}\n  new: {new.get(case)}")
    if old_err != new_err:
        print(f"stderr (notes, refusals):\n--- old\n{old_err}--- new\n{new_err}")
    print(f"{len(old) - len(differ)} of {len(old)} commands built the same configs")
    print("identical" if not differ else "different")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
