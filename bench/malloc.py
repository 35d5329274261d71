"""Page faults of training with and without `scalelab.malloc.keep_freed_memory`.

Trains the demo's data-sweep model (2 layers x 48, context 128, batch 16, BPE 2048 on
shakespeare) for the same steps in two fresh processes, one with glibc's default thresholds
and one as `scalelab.lm.train.train` runs now, and prints user/system CPU seconds, page
faults, the CPU-time ratio and the final losses (equal: the change is numerically a no-op).

    python bench/malloc.py               # 150 steps, one torch thread
    python bench/malloc.py --steps 300
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, resource, sys
from pathlib import Path
import torch
import scalelab.lm.train as lm_train
from scalelab.lm.stopping import StopRule
from scalelab.pipeline.config import PipelineConfig
from scalelab.pipeline.steps import base_configs
mode, data, out, steps = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
if mode == "plain":
    lm_train.keep_freed_memory = lambda: False
torch.set_num_threads(1)
model, train = base_configs(PipelineConfig(), data)
train = train.replace(max_steps=steps, stop=StopRule(), warmup_steps=10, train_tokens=250_000)
r0 = resource.getrusage(resource.RUSAGE_SELF)
result = lm_train.train(model, train, data, out, quiet=True)
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"user_s": r1.ru_utime - r0.ru_utime, "sys_s": r1.ru_stime - r0.ru_stime,
                  "faults": r1.ru_minflt - r0.ru_minflt, "test_loss": result["test_loss_nats"]}))
"""


def store(cache: Path) -> Path:
    """The demo's token store (shakespeare, BPE 2048), prepared once and cached."""
    from scalelab.text.corpora import load_corpus
    from scalelab.text.store import prepare_corpus

    out = cache / "shakespeare-2048"
    if not (out / "meta.json").exists():
        prepare_corpus(load_corpus("shakespeare"), out, vocab_size=2048, quiet=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--cache", type=Path, default=Path(".bench-out"))
    args = ap.parse_args()
    data = store(args.cache)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("plain", "keep"):
            cmd = [sys.executable, "-c", CHILD, mode, str(data), f"{tmp}/{mode}", str(args.steps)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rows[mode] = json.loads(out.splitlines()[-1])
            r = rows[mode]
            print(
                f"{mode:>5}: user {r['user_s']:.1f} s, sys {r['sys_s']:.1f} s, "
                f"{r['faults']:,} page faults, test loss {r['test_loss']!r}"
            )
    cpu = {m: r["user_s"] + r["sys_s"] for m, r in rows.items()}
    print(
        f"CPU time plain / keep: {cpu['plain'] / cpu['keep']:.2f}x; same test loss: "
        f"{rows['plain']['test_loss'] == rows['keep']['test_loss']}"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
