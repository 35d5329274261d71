"""Frozen, validated dataclass configs saved as JSON beside their results, and the one rule
by which a dataclass becomes its JSON and is read back (`Record`).

`Record.to_dict` walks the fields in order: a nested record becomes its own `to_dict` (any
other dataclass its fields), a tuple a list. A field marked `FLAT`
(`dataclasses.field(metadata=FLAT)`) is saved as its own keys in place of its name (a run's
`StopRule`). A field marked `OMIT_DEFAULT` is left out while it holds its default (a
result's optional section, as a fit's regime analysis; a config field added later is filled
in where an older folder is read, `runs.migrate`). A field marked
`saved_as(key)` is saved under `key` in place of its name: a key that is no identifier
(`power+E`) or a result's established key (`sources`, `convergence`). `from_dict`
reads that JSON back by the field types: nested records from dicts, tuples from lists, flat
keys into their field, a `saved_as` key into its field. A subclass overrides
either only to add what its fields do not say.

A field made with `option(default, help)` is also a command-line option: its help is in the
field's metadata, and `scalelab.cli.options` derives the option (`--field-name`, or the
`flag` the metadata names; its type and default the field's) from it, so a setting is
defined once, here, for Python callers and the command line alike.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from scalelab.errors import ConfigError
from scalelab.io import atomic_write_json, read_json

#: Field metadata: save this nested record's keys in place of the field's name.
FLAT = {"flat": True}
#: Field metadata: leave the field out of the JSON while it holds its default.
OMIT_DEFAULT = {"omit_default": True}


def saved_as(key: str) -> dict[str, str]:
    """Field metadata: save the field under `key` (an on-disk name older than the field's)."""
    return {"saved_as": key}


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    flag: str | None = None,
    retired: str | None = None,
    default_factory: Any = dataclasses.MISSING,
    **metadata: Any,
) -> Any:
    """A config field that is also a command-line option: `help` is the option's help, `flag`
    its name where it is not `--field-name` (a name users have), `retired` a former spelling
    that still works with a note. Other metadata (`saved_as(...)`, `OMIT_DEFAULT`) as for any
    field; for the command line, `blank` (a tuple field's value for an empty option, default
    `()`) and `none_at` (an option value that means None, as `--target 0`: never)."""
    meta = {"help": help, **metadata}
    meta |= {"flag": flag} if flag else {}
    meta |= {"retired": retired} if retired else {}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def accepts(make: Callable[..., Any], **fields: Any) -> bool:
    """`make(**fields)` raises no ConfigError: how a refusal of several fields finds the one at
    fault (each tried alone)."""
    try:
        make(**fields)
    except ConfigError:
        return False
    return True


def saved_key(f: dataclasses.Field) -> str:
    """The JSON key a field is saved under: its `saved_as` key, else its name."""
    return f.metadata.get("saved_as", f.name)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _records(hint: Any) -> list[type[Record]]:
    """The `Record` types a field's type hint allows (`X`, `X | None`)."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = typing.get_args(hint) if union else (hint,)
    return [a for a in args if isinstance(a, type) and issubclass(a, Record)]


@dataclasses.dataclass(frozen=True)
class Record:
    """A dataclass that writes itself as JSON and reads itself back (see the module
    docstring)."""

    def to_dict(self) -> dict[str, Any]:
        def saved(value: Any) -> Any:  # records as their own to_dict, tuples as lists
            if isinstance(value, Record):
                return value.to_dict()
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                return {f.name: saved(getattr(value, f.name)) for f in dataclasses.fields(value)}
            if isinstance(value, list | tuple):
                return [saved(v) for v in value]
            if isinstance(value, dict):
                return {k: saved(v) for k, v in value.items()}
            return value

        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("omit_default") and value == f.default:
                continue
            out.update(saved(value) if f.metadata.get("flat") else {saved_key(f): saved(value)})
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        fields = dataclasses.fields(cls)

        def read(hint: Any, value: Any) -> Any:  # a saved value as the type `hint` holds it
            if isinstance(value, dict) and (kinds := _records(hint)):
                return kinds[0].from_dict(value)
            if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: as X
                inner = [a for a in typing.get_args(hint) if a is not type(None)]
                hint = inner[0] if len(inner) == 1 else hint
            args = typing.get_args(hint)
            if isinstance(value, list) and typing.get_origin(hint) is tuple:
                inner = [args[0]] * len(value) if args[-1:] == (Ellipsis,) else list(args)
                return tuple(read(h, v) for h, v in zip(inner, value, strict=False))
            if isinstance(value, list) and typing.get_origin(hint) is list and args:
                return [read(args[0], v) for v in value]
            return value

        names = {f.name for f in fields}
        hints = _hints(cls)
        values = dict(data)
        for f in fields:  # a field saved under another key: back to its name
            if saved_key(f) != f.name and saved_key(f) in values:
                values[f.name] = values.pop(saved_key(f))
        for f in fields:  # a flat field: its keys, over its saved or default value
            if f.metadata.get("flat"):
                kind = _records(hints[f.name])[0]
                keys = {g.name for g in dataclasses.fields(kind)}
                flat = {k: values.pop(k) for k in list(values) if k in keys}
                given = values.get(f.name, f.default)
                if given is dataclasses.MISSING:  # no default to fill in: the keys are all
                    values[f.name] = kind.from_dict(flat)
                    continue
                given = read(hints[f.name], given)
                values[f.name] = dataclasses.replace(given, **flat) if flat else given
        unknown = sorted(set(values) - names)
        if unknown:
            raise ConfigError(
                f"unknown {cls.__name__} field(s) {unknown}; valid fields: {sorted(names)}"
            )
        return cls(**{k: read(hints[k], v) for k, v in values.items()})

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def save(self, path: str | Path) -> None:
        atomic_write_json(path, self)  # the writer saves a record as its to_dict

    @classmethod
    def load(cls, path: str | Path) -> Self:
        return cls.from_dict(read_json(path))


@dataclasses.dataclass(frozen=True)
class Config(Record):
    """Base for configs: subclasses add fields and override `validate` (raise ConfigError)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check field values; raise `ConfigError` naming the field and the fix."""
