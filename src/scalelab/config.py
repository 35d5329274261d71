"""Frozen, validated dataclass configs saved as JSON beside their results."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Self

from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json, read_json


@dataclasses.dataclass(frozen=True)
class Config:
    """Base for configs: subclasses add fields and override `validate` (raise ConfigError)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check field values; raise `ConfigError` naming the field and the fix."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(
                f"unknown {cls.__name__} field(s) {unknown}; valid fields: {sorted(names)}"
            )
        return cls(**data)

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def save(self, path: str | Path) -> None:
        atomic_write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> Self:
        return cls.from_dict(read_json(path))
