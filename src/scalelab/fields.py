"""The checks configs and commands share, with one wording: a positive integer and a choice
from a fixed set. Each raises ConfigError naming the field, the value and what is allowed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scalelab.errors import ConfigError

#: The forward pass's compute dtypes a config may name (`scalelab.device.resolve_dtype`):
#: auto is bfloat16 where the device has native bf16 matmuls, float32 elsewhere.
DTYPES = ("auto", "float32", "bfloat16")


def positive_int(value: Any, name: str, *, optional: bool = False) -> None:
    """`value` is an int >= 1 (a bool is not), or None when `optional`."""
    if optional and value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        unset = " or unset" if optional else ""
        raise ConfigError(f"{name} must be a positive integer{unset}, got {value!r}")


def choice(value: Any, name: str, choices: Iterable[str]) -> None:
    """`value` is one of `choices`."""
    allowed = tuple(choices)
    if value not in allowed:
        raise ConfigError(f"{name} {value!r}: {name} must be one of {', '.join(allowed)}")
