"""Run-folder checkpoints: weights in safetensors, trainer state in a file that loads with
`weights_only=True` (tensors and plain containers only), both written atomically.

A run folder holds `config.json` (`{"model", "train", "data_dir"}`), `metrics.jsonl`,
`checkpoint.safetensors` (the best weights by validation loss so far: the ones the final test
loss is measured on), `state.pt` (latest weights, optimizer, RNG and data position, step: what
resume needs) and, when finished, `result.json`.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from scalelab.errors import CheckpointError, ConfigError
from scalelab.io import atomic_write, atomic_write_bytes, read_json, to_json
from scalelab.lm.config import GPTConfig
from scalelab.lm.model import GPT

WEIGHTS = "checkpoint.safetensors"
STATE = "state.pt"
CONFIG = "config.json"
TIED = "lm_head.weight"  # same tensor as wte.weight: stored once


def save_weights(model: GPT, path: Path, **metadata: Any) -> None:
    """The model's weights (tied head stored once) with JSON-able metadata, atomically."""
    tensors = {
        k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items() if k != TIED
    }
    meta = {k: to_json(v, indent=None) for k, v in metadata.items()}
    meta["model_config"] = to_json(model.config, indent=None)
    atomic_write_bytes(path, save(tensors, metadata=meta))  # written by Python: errors are OSError


def load_weights(model: GPT, path: Path) -> dict[str, Any]:
    """Load weights saved by `save_weights` into `model`; return their metadata."""
    try:
        with safe_open(str(path), framework="pt") as f:
            metadata = {k: json.loads(v) for k, v in (f.metadata() or {}).items()}
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not a dict)
    except FileNotFoundError as err:
        raise CheckpointError(f"no weights at {path}; train the run first") from err
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(
            f"{path} is corrupted or truncated ({err}); delete it and rerun the training "
            "command to rebuild it"
        ) from err
    expected = {k: v.shape for k, v in model.state_dict().items() if k != TIED}
    got = {k: v.shape for k, v in tensors.items()}
    if expected != got:
        bad = sorted(set(expected) ^ set(got)) or [k for k in expected if expected[k] != got[k]]
        raise CheckpointError(
            f"{path} does not match the model config (differs at {bad[:3]}); "
            "load it with the config.json of the run that wrote it"
        )
    with torch.no_grad():
        for name, p in model.state_dict().items():
            if name != TIED:
                p.copy_(tensors[name])
    return metadata


def save_state(path: Path, state: dict[str, Any]) -> None:
    atomic_write(path, lambda p: _torch_save(state, p))


def _torch_save(state: dict[str, Any], path: Path) -> None:
    with open(path, "wb") as f:  # through a Python file: a full disk surfaces as OSError
        torch.save(state, f)


def load_state(path: Path) -> dict[str, Any]:
    """The trainer state, loaded with `weights_only=True` (no code execution)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError, ValueError) as err:
        raise CheckpointError(
            f"{path} is corrupted or truncated ({type(err).__name__}); delete it to restart "
            "the run from step 0, or delete the whole run folder"
        ) from err


def read_run_config(run_dir: str | Path) -> dict[str, Any]:
    """The `config.json` of a run folder (model, train, data_dir)."""
    path = Path(run_dir) / CONFIG
    try:
        cfg = read_json(path)
    except FileNotFoundError as err:
        raise CheckpointError(
            f"{run_dir} is not a run folder (no {CONFIG}); check the path"
        ) from err
    except (OSError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path} is unreadable ({err}); delete the run folder") from err
    if not isinstance(cfg, dict) or "model" not in cfg:
        raise CheckpointError(
            f"{path} has no 'model' section; it was not written by scalelab train"
        )
    return cfg


def load_model(run_dir: str | Path, device: str | torch.device = "cpu") -> tuple[GPT, dict]:
    """The trained model of a run folder (the weights its test loss was measured on), in eval
    mode on `device`, and the run's config dict."""
    cfg = read_run_config(run_dir)
    try:
        model_cfg = GPTConfig.from_dict(cfg["model"])
    except (ConfigError, TypeError) as err:
        raise CheckpointError(f"{run_dir}/{CONFIG} holds an invalid model config: {err}") from err
    model = GPT(model_cfg)
    load_weights(model, Path(run_dir) / WEIGHTS)
    return model.to(device).eval(), cfg
