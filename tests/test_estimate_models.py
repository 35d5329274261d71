"""`estimate` on real model folders: a scalelab run, the same weights exported to a Hugging
Face GPT-2 folder, a GPT-2 built by transformers; the files it writes; the CLI and its
one-line errors."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from scalelab.cli import main
from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json
from scalelab.lm.checkpoint import save_weights
from scalelab.lm.config import GPTConfig
from scalelab.lm.hf import export_gpt_to_hf
from scalelab.lm.load import load_model_for_embedding
from scalelab.lm.model import GPT
from scalelab.probe.estimate import (
    EstimateConfig,
    estimate,
    estimate_dimension,
    load_embeddings,
)
from scalelab.text.corpora import load_corpus
from scalelab.text.store import TokenStore, prepare_corpus

CFG = EstimateConfig(batch_size=256, dtype="float32")  # paths compared exactly


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A synthetic text corpus, its token store, a (random) scalelab run on it and the same
    weights exported as a Hugging Face GPT-2 folder."""
    root = tmp_path_factory.mktemp("estimate")
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lexicon = ["".join(rng.choice(letters, rng.integers(2, 8))) for _ in range(300)]
    docs = [" ".join(rng.choice(lexicon, rng.integers(30, 120))) for _ in range(600)]
    text = root / "corpus.txt"
    text.write_text("\n\n".join(docs), encoding="utf-8")
    store = prepare_corpus(load_corpus(text), root / "store", vocab_size=400, quiet=True)
    tok = TokenStore(store, "test").tokenizer()
    run = root / "run"
    run.mkdir()
    gpt = GPT(GPTConfig(vocab_size=400, block_size=64, n_layer=2, n_head=2, n_embd=32), seed=0)
    save_weights(gpt, run / "checkpoint.safetensors")
    config = {"model": gpt.config.to_dict(), "train": {}, "data_dir": str(store)}
    atomic_write_json(run / "config.json", config)
    hf = export_gpt_to_hf(gpt, root / "hf", tokenizer=tok)
    return {"root": root, "text": text, "store": store, "run": run, "hf": hf}


def _saved(folder: Path) -> dict[str, np.ndarray]:
    """The embeddings and where they came from, as written by `estimate`."""
    return {
        **load_file(folder / "embeddings.safetensors"),
        **load_file(folder / "positions.safetensors"),
    }


def test_hf_path_and_own_path_give_the_same_embeddings(world):
    own = estimate(world["run"], world["text"], CFG, world["root"] / "own", quiet=True)
    hf = estimate(world["hf"], world["text"], CFG, world["root"] / "hf-est", quiet=True)
    a, b = (_saved(world["root"] / name) for name in ("own", "hf-est"))
    assert a["embeddings"].shape == (own.counts["points_kept"], 32)
    for key in ("document", "position", "window_position"):
        np.testing.assert_array_equal(a[key], b[key])
    np.testing.assert_allclose(a["embeddings"], b["embeddings"], atol=1e-5)
    assert hf.dimension == pytest.approx(own.dimension, rel=1e-4)
    assert (hf.model["kind"], own.model["kind"]) == ("hf", "scalelab")
    assert hf.model["params_non_embedding"] == own.model["params_non_embedding"]
    # the run's own token store (default corpus) holds the same test documents as the text
    store = estimate(world["run"], None, CFG, world["root"] / "store-est", quiet=True)
    c = _saved(world["root"] / "store-est")
    np.testing.assert_array_equal(a["embeddings"], c["embeddings"])
    assert store.corpus["kind"] == "token-store" and not store.corpus["retokenized"]


def test_gpt2_built_by_transformers_exposes_every_hidden_state(world, tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=400,
            n_positions=48,
            n_embd=24,
            n_layer=3,
            n_head=2,
            bos_token_id=0,
            eos_token_id=0,
        )
    ).eval()
    model.save_pretrained(tmp_path / "gpt2")
    tok = TokenStore(world["store"], "test").tokenizer()
    PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(tmp_path / "gpt2")
    loaded = load_model_for_embedding(tmp_path / "gpt2")
    assert (loaded.n_states, loaded.max_context, loaded.width) == (5, 48, 24)
    idx = torch.randint(0, 400, (2, 20), generator=torch.Generator().manual_seed(1))
    states = loaded.states(idx, torch.ones_like(idx, dtype=torch.bool))
    with torch.no_grad():
        ref = model(idx, output_hidden_states=True).hidden_states
        normed = model.transformer.ln_f(states[3])
    assert len(ref) == 4  # HF gives embeddings, blocks 1..2 and the normed output only
    for i in range(3):
        torch.testing.assert_close(states[i], ref[i])
    torch.testing.assert_close(states[4], ref[3])  # HF's last entry is after ln_f ...
    torch.testing.assert_close(normed, ref[3])  # ... of the residual we expose as state 3
    assert not torch.allclose(states[3], ref[3])


def test_estimate_json_records_the_protocol_and_fingerprints(world):
    out = world["root"] / "own-json"
    doc = estimate(world["run"], world["text"], CFG, out, quiet=True)
    saved = json.loads((out / "estimate.json").read_text())
    assert saved["dimension"] == pytest.approx(doc.dimension)
    assert saved == doc.to_dict()  # the record is the file, key for key
    d, se = saved["dimension"], saved["dimension_se"]
    assert saved["alpha_D"] == pytest.approx(2 / (2 + d))
    assert saved["alpha_N"] == pytest.approx(2 / d)
    lo, hi = saved["alpha_D_ci95"]
    assert lo < saved["alpha_D"] < hi and hi - lo == pytest.approx(
        2 * 1.96 * 2 * se / (2 + d) ** 2, rel=1e-3
    )
    batches = saved["estimate"]["batch_dimensions"]
    assert d == pytest.approx(np.mean(batches))
    assert se == pytest.approx(np.std(batches, ddof=1) / np.sqrt(len(batches)))
    settings = saved["settings"]
    for key, value in [
        ("per_doc", 32),
        ("batch_size", 256),
        ("k", 20),
        ("aggregate", "mean"),
        ("metric", "euclidean"),
        ("max_points", 1_000_000),
        ("context_len", 64),
        ("layer", "final"),
        ("split", "test"),
        ("beta", 1.0),
    ]:
        assert settings[key] == value
    assert saved["layer"] == 3 and "after final LN" in saved["layer_name"]
    weights = (world["run"] / "checkpoint.safetensors").read_bytes()
    sha = saved["model"]["weights_sha256"]["checkpoint.safetensors"]
    assert sha == hashlib.sha256(weights).hexdigest()
    tok_json = TokenStore(world["store"], "test").tokenizer().to_str()
    assert saved["model"]["tokenizer_sha256"] == hashlib.sha256(tok_json.encode()).hexdigest()
    assert saved["corpus"]["kind"] == "text" and len(saved["corpus"]["text_sha256"]) == 64
    assert "git_revision" in saved["provenance"]
    # the saved embeddings re-estimate to the same number without the model
    x, meta = load_embeddings(out / "embeddings.safetensors")
    assert meta["layer"] == "3"
    assert estimate_dimension(x, CFG).d == pytest.approx(d, rel=1e-9)
    # a finished folder is returned as is; another request there is refused
    stamp = (out / "estimate.json").stat().st_mtime_ns
    assert estimate(world["run"], world["text"], CFG, out, quiet=True).dimension == d
    assert (out / "estimate.json").stat().st_mtime_ns == stamp
    with pytest.raises(ConfigError, match="different config"):
        estimate(world["run"], world["text"], CFG.replace(per_doc=8), out, quiet=True)


@pytest.fixture
def run_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """`scalelab ARGS` through the real `main()`, in this process: (exit code, out, err)."""

    def call(*args: str | Path) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["scalelab", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as exit_info:
            code = exit_info.code if isinstance(exit_info.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return call


def _bad_runs(world: dict[str, Path], root: Path) -> dict[str, Path]:
    no_weights = root / "no-weights"
    no_weights.mkdir()
    shutil.copy(world["run"] / "config.json", no_weights / "config.json")
    hf_no_weights = root / "hf-no-weights"
    hf_no_weights.mkdir()
    shutil.copy(world["hf"] / "config.json", hf_no_weights / "config.json")
    small_vocab = root / "small-vocab"
    small_vocab.mkdir()
    gpt = GPT(GPTConfig(vocab_size=300, block_size=64, n_layer=1, n_head=2, n_embd=16))
    save_weights(gpt, small_vocab / "checkpoint.safetensors")
    cfg = {"model": gpt.config.to_dict(), "train": {}, "data_dir": str(world["store"])}
    atomic_write_json(small_vocab / "config.json", cfg)
    return {"no_weights": no_weights, "hf_no_weights": hf_no_weights, "small": small_vocab}


def test_cli_bad_inputs_are_one_line_exit_2_and_write_nothing(world, tmp_path, run_main):
    bad = _bad_runs(world, tmp_path)
    run, text = world["run"], world["text"]
    cases = [
        (["--model", bad["no_weights"]], "no weights"),
        (["--model", bad["hf_no_weights"], "--corpus", text], "has no weights"),
        (["--model", tmp_path / "absent"], "does not exist"),
        (["--model", bad["small"], "--corpus", text], "does not belong|do not belong"),
        (["--model", run, "--layer", "4"], "out of range"),
        (["--model", run, "--layer", "top"], "neither an index"),
        (["--model", run, "--corpus", text], "one batch needs"),  # 4096 > ~1500 points
        (["--model", run, "--batch-size", "256", "--context-len", "65"], "maximum context 64"),
        (["--model", run, "--corpus", tmp_path / "nope.txt"], "neither a built-in"),
        (["--model", world["hf"], "--batch-size", "256"], "--corpus is required"),
        (["--model", run, "--weights", "latest"], "no state.pt"),
        (["--model", run, "--weights", "other.bin"], "use best, latest or a .safetensors"),
        (["--model", world["hf"], "--corpus", text, "--weights", "best"], "takes a .gguf"),
    ]
    for i, (args, message) in enumerate(cases):
        out = tmp_path / f"out{i}"
        code, stdout, err = run_main("estimate", *args, "--out", out, "--quiet")
        assert code == 2, (args, stdout, err)
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert __import__("re").search(message, err), (message, err)
        assert not out.exists()


def test_cli_estimate_and_ablations_write_their_files(world, tmp_path, run_main):
    out = tmp_path / "est"
    code, stdout, _ = run_main(
        "estimate",
        "--model",
        world["run"],
        "--batch-size",
        "256",
        "--out",
        out,
        "--json",
        "--quiet",
    )
    assert code == 0
    doc = json.loads(stdout)
    assert doc["dimension"] > 0 and (out / "embeddings.safetensors").is_file()
    code, stdout, _ = run_main(
        "estimate", "--model", world["run"], "--batch-size", "256", "--out", out, "--quiet"
    )
    assert code == 0 and "alpha_D" in stdout and "alpha_N" in stdout
    runs = [("layers", []), ("positions", ["--groups", "2", "--per-doc", "16"])]
    for kind, extra in runs:
        folder = tmp_path / kind
        code, _, err = run_main(
            "ablate",
            kind,
            "--model",
            world["run"],
            "--batch-size",
            "256",
            *extra,
            "--out",
            folder,
            "--quiet",
        )
        assert code == 0, err
        rows = json.loads((folder / f"{kind}.json").read_text())["rows"]
        assert (folder / f"{kind}.csv").is_file() and (folder / f"{kind}.png").is_file()
        assert len(rows) == (4 if kind == "layers" else 2)
    layers = json.loads((tmp_path / "layers" / "layers.json").read_text())["rows"]
    assert layers[-1]["dimension"] == pytest.approx(doc["dimension"], rel=0.1)
    folder = tmp_path / "bs"
    code, _, err = run_main(
        "ablate",
        "batch-size",
        "--embeddings",
        out / "embeddings.safetensors",
        "--batch-sizes",
        "256,512,100000",
        "--out",
        folder,
    )
    assert code == 0, err
    code, stdout, err = run_main(
        "id", out / "embeddings.safetensors", "--batch-size", "256", "--json", "--quiet"
    )
    assert code == 0, err
    assert json.loads(stdout)["dimension"] == pytest.approx(doc["dimension"], rel=1e-9)
    saved = json.loads((folder / "batch_size.json").read_text())
    assert [r["batch_size"] for r in saved["rows"]] == [256, 512]
    assert saved["skipped_batch_sizes"] == [100000]
    assert saved["rows"][0]["dimension"] == pytest.approx(doc["dimension"], rel=1e-9)
    folder = tmp_path / "models"
    code, _, err = run_main(
        "ablate",
        "models",
        "--model",
        world["run"],
        "--model",
        world["hf"],
        "--corpus",
        world["text"],
        "--batch-size",
        "256",
        "--dtype",
        "float32",  # the two paths are compared exactly
        "--out",
        folder,
        "--quiet",
    )
    assert code == 0, err
    rows = json.loads((folder / "models.json").read_text())["rows"]
    assert [r["kind"] for r in rows] == ["scalelab", "hf"]
    assert rows[0]["dimension"] == pytest.approx(rows[1]["dimension"], rel=1e-4)
    assert (folder / "models.png").is_file() and (folder / "runs.csv").is_file()


def test_cli_error_in_a_real_subprocess(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "scalelab",
            "estimate",
            "--model",
            str(tmp_path / "absent"),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and not (tmp_path / "o").exists()


def test_token_store_with_another_tokenizer_is_re_encoded_from_its_text(world):
    """A store made with tokenizer A, read for a model with tokenizer B, gives exactly B's
    encoding of the same test documents' text."""
    from scalelab.probe.corpus import encode_texts, load_corpus_tokens
    from scalelab.text.split import split_documents
    from scalelab.text.tokenizer import train_bpe

    texts = [d.text for d in split_documents(load_corpus(world["text"]).documents)["test"]]
    other = train_bpe(texts, 300)
    got = load_corpus_tokens(world["store"], other)
    want = encode_texts(other, texts)
    assert got.info["retokenized"] and got.info["n_documents"] == len(texts)
    np.testing.assert_array_equal(got.docs.offsets, want.offsets)
    np.testing.assert_array_equal(got.docs.tokens, want.tokens)
    same = load_corpus_tokens(world["store"], TokenStore(world["store"], "test").tokenizer())
    assert not same.info["retokenized"]
    assert same.docs.n_documents == len(texts)


def test_weights_latest_and_named_files_of_a_run(world, tmp_path):
    """`--weights latest` reads state.pt and a named .safetensors file is read as is: both
    give exactly the embeddings of a run whose best checkpoint holds those weights."""
    from scalelab.lm.checkpoint import save_state

    other = GPT(GPTConfig(vocab_size=400, block_size=64, n_layer=2, n_head=2, n_embd=32), seed=5)
    run = tmp_path / "run"
    shutil.copytree(world["run"], run)
    save_state(run / "state.pt", {"model": other.state_dict(), "loop": {"step": 7}})
    save_weights(other, run / "step7.safetensors")
    ref = tmp_path / "ref"
    shutil.copytree(world["run"], ref)
    save_weights(other, ref / "checkpoint.safetensors")
    want = estimate(ref, world["text"], CFG, tmp_path / "e-ref", quiet=True)
    for weights in ("latest", "step7.safetensors"):
        out = tmp_path / f"e-{weights}"
        got = estimate(run, world["text"], CFG, out, weights=weights, quiet=True)
        assert got.model["checkpoint"] == weights
        np.testing.assert_array_equal(
            _saved(out)["embeddings"], _saved(tmp_path / "e-ref")["embeddings"]
        )
        assert got.dimension == want.dimension
    best = estimate(run, world["text"], CFG, tmp_path / "e-best", quiet=True)
    assert best.dimension != want.dimension  # the default is still the best checkpoint
