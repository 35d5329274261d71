"""Models ready for hidden-state extraction: a scalelab run folder (its own tokenizer from the
run's token store), a local Hugging Face folder or a GGUF file in one (their own tokenizer),
with the fingerprints (weights, tokenizer) that results record."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tokenizers
import torch
from torch import Tensor

from scalelab.errors import CheckpointError
from scalelab.io import read_json

# hidden_states(idx [b, t] int64, attention_mask [b, t] bool) -> n_layer + 2 tensors [b, t, c]
StatesFn = Callable[[Tensor, Tensor], Sequence[Tensor]]


@dataclass
class LoadedModel:
    """A model ready for hidden-state extraction, with what the results must record."""

    kind: str  # "scalelab" or "hf"
    path: Path
    states: StatesFn
    n_states: int
    max_context: int
    vocab_size: int
    width: int
    n_params: int
    n_params_non_embedding: int
    tokenizer: tokenizers.Tokenizer
    weight_files: list[Path]
    data_dir: Path | None = None
    gguf_file: str | None = None
    checkpoint: str | None = None
    module: torch.nn.Module | None = None  # the model itself (GPT or HF), for other analyses

    @property
    def n_layer(self) -> int:
        return self.n_states - 2

    @property
    def special_ids(self) -> list[int]:
        return sorted(i for i, t in self.tokenizer.get_added_tokens_decoder().items() if t.special)

    def describe(self) -> dict[str, Any]:
        """What estimate.json records about the model (fingerprints included)."""
        return {
            "kind": self.kind,
            "path": str(self.path.resolve()),
            "gguf_file": self.gguf_file,
            "checkpoint": self.checkpoint,
            "n_layer": self.n_layer,
            "width": self.width,
            "max_context": self.max_context,
            "vocab_size": self.vocab_size,
            "params": self.n_params,
            "params_non_embedding": self.n_params_non_embedding,
            "weights_sha256": {f.name: sha256_file(f) for f in self.weight_files},
            "tokenizer_sha256": tokenizer_sha256(self.tokenizer),
            **self._training(),
        }

    def _training(self) -> dict[str, Any]:
        """For a scalelab run: whether it finished, why it stopped and its test loss (an
        unfinished run's checkpoint is its best weights so far)."""
        if self.kind != "scalelab":
            return {}
        result = self.path / "result.json"
        if not result.is_file():
            return {"run_finished": False}
        saved = read_json(result)
        keys = ("stop_reason", "steps", "tokens_seen", "test_loss_nats")
        return {"run_finished": True, **{f"run_{k}": saved.get(k) for k in keys}}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def tokenizer_sha256(tok: tokenizers.Tokenizer) -> str:
    return hashlib.sha256(tok.to_str().encode("utf-8")).hexdigest()


def load_model_for_embedding(
    path: str | Path,
    *,
    device: torch.device | str = "cpu",
    weights: str | None = None,
    dtype: torch.dtype = torch.float32,
) -> LoadedModel:
    """A scalelab run folder or a local HF folder, with its own tokenizer. `weights` picks the
    checkpoint: for a run `best` (default: the weights its test loss was measured on),
    `latest` (the last saved step, from state.pt) or a .safetensors file in the folder; for an
    HF folder the .gguf file to read (default: the folder's weights, or its only GGUF).
    `dtype` is the HF model's weight dtype (bfloat16 halves the memory traffic of a 135M
    model; a scalelab run keeps float32 weights and relies on autocast)."""
    from scalelab.lm.hf import is_hf_folder

    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model folder {path} does not exist; pass a run or HF folder")
    config = path / "config.json"
    if config.is_file() and not is_hf_folder(path):
        return _load_scalelab(path, device, weights or "best")
    if is_hf_folder(path):
        return _load_hf(path, device, weights, dtype)
    raise CheckpointError(
        f"{path} is neither a scalelab run folder (config.json with a 'model' section) nor a "
        "Hugging Face model folder (config.json + weights, or a .gguf file); check --model"
    )


def _load_scalelab(path: Path, device: torch.device | str, weights: str) -> LoadedModel:
    from scalelab.lm.checkpoint import WEIGHTS, load_model
    from scalelab.text.tokenizer import load_tokenizer

    gpt, cfg = load_model(path, device=device)  # the best weights; checks the folder
    file = path / WEIGHTS
    if weights != "best":
        file = _load_other_weights(gpt, path, weights)
    data_dir = Path(cfg.get("data_dir", ""))
    if not (data_dir / "tokenizer.json").is_file():
        raise CheckpointError(
            f"the run's token store {data_dir} has no tokenizer.json; restore that folder "
            "(the run's config.json names it) to embed text with the run's own tokenizer"
        )
    tok = load_tokenizer(data_dir / "tokenizer.json")
    c = gpt.config

    def states(idx: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        return gpt.hidden_states(idx)

    return LoadedModel(
        kind="scalelab",
        path=path,
        checkpoint=weights,
        states=states,
        n_states=c.n_layer + 2,
        max_context=c.block_size,
        vocab_size=c.vocab_size,
        width=c.n_embd,
        n_params=gpt.num_params(non_embedding=False),
        n_params_non_embedding=gpt.num_params(non_embedding=True),
        tokenizer=tok,
        weight_files=[file],
        data_dir=data_dir,
        module=gpt,
    )


def _load_other_weights(gpt: torch.nn.Module, path: Path, weights: str) -> Path:
    """Replace the best weights with the latest ones (state.pt) or another safetensors file
    of the run folder; return the file read."""
    from scalelab.lm.checkpoint import STATE, load_state, load_weights

    if weights == "latest":
        file = path / STATE
        if not file.is_file():
            raise CheckpointError(f"{path} has no {STATE} (latest weights); use --weights best")
        state = load_state(file)
        try:
            gpt.load_state_dict(state["model"])
        except (KeyError, RuntimeError) as err:
            raise CheckpointError(f"{file} holds no weights for this model ({err})") from None
        return file
    file = path / weights
    if not weights.endswith(".safetensors") or not file.is_file():
        raise CheckpointError(
            f"--weights {weights!r}: use best, latest or a .safetensors file in {path}"
        )
    load_weights(gpt, file)
    return file


def _load_hf(
    path: Path, device: torch.device | str, gguf_file: str | None, dtype: torch.dtype
) -> LoadedModel:
    from scalelab.lm.hf import HFStates, load_hf, max_context, weight_files

    if gguf_file is not None and not gguf_file.endswith(".gguf"):
        raise CheckpointError(f"--weights {gguf_file!r}: an HF folder takes a .gguf file name")
    model, tok, gguf = load_hf(path, gguf_file=gguf_file, device=device, dtype=dtype)
    states = HFStates(model)
    emb = model.get_input_embeddings().weight
    n_params = sum(p.numel() for p in model.parameters())
    embedding = emb.numel()
    wpe = getattr(model.base_model, "wpe", None)
    if isinstance(wpe, torch.nn.Embedding):
        embedding += wpe.weight.numel()
    out = model.get_output_embeddings()
    if out is not None and out.weight.data_ptr() != emb.data_ptr():
        embedding += out.weight.numel()
    return LoadedModel(
        kind="hf",
        path=path,
        states=states,
        n_states=states.n_layer + 2,
        max_context=max_context(model),
        vocab_size=int(emb.shape[0]),
        width=int(emb.shape[1]),
        n_params=n_params,
        n_params_non_embedding=n_params - embedding,
        tokenizer=tok,
        weight_files=weight_files(path, gguf),
        gguf_file=gguf,
        module=model,
    )
