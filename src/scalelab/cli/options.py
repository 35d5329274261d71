"""Command-line options derived from configs: one definition per option.

A config field made with `config.option(default, help)` is the one place an option is
defined: its name (`--field-name`, or the metadata's `flag`, a name users have), type,
default and help. A command names the config it takes as a parameter whose default is
`From(Config, ...)`; `derive(command)` puts that config's options in the parameter's place
(in Typer's terms: a signature Typer reads) and hands the command the config, built from

    the defaults (or `--preset NAME`'s config)  <  `--config FILE`  <  the options given,

so an option left at its default never overrides a preset or a file. `--config FILE` (TOML or
JSON) holds the keys of the config.json a run saves (`Record.to_dict`). A refusal names the
option the user gave (`--k 0: ...`, `cli.common.configured`), or the file and its key.

Why an adapter over Typer, not cyclopts, tyro or jsonargparse (docs/architecture.md,
"One definition per option"): Typer is already here, and its lazy group, usage line and
one-line errors stay as they are; the libraries' `--help` took 2-3x Typer's start-up, and
give nested configs dotted names (`--cfg.per-doc`) where users have `--per-doc`."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import typer

from scalelab.cli.common import configured, parse_list, renamed_option
from scalelab.config import Config, saved_key
from scalelab.errors import ConfigError, InputError
from scalelab.runs.migrate import KEY, migrate, renamed

CONFIG_HELP = (
    "Settings from a TOML or JSON file: the keys of the config.json a run saves. Options "
    "given here override it."
)
_CTX = "ctx_"  # the parameter through which the command learns which options were given


@dataclasses.dataclass(frozen=True)
class Opt:
    """One option: the config field it sets, its command parameter and flag."""

    field: str
    param: str
    flag: str
    hint: Any
    default: Any
    help: str
    retired: str | None = None
    unset: str | None = None  # what None means, shown as its default
    required: bool = False  # given on every call (the field's default is Python's only)
    blank: Any = ()  # a tuple field's value for an empty option ('')
    none_at: Any = None  # an option value that means None (`--target 0`: never)

    def typer_parameters(self) -> list[inspect.Parameter]:
        """The option (and its retired spelling, hidden) as parameters Typer reads."""
        default = self.default
        if _is_tuple(self.hint):  # a tuple field: comma-separated on the command line
            annotation: Any = str
            default = ",".join(str(v) for v in default if v is not None)
        else:
            annotation = self.hint
        flag = self.flag  # a switch can be turned off too (when a preset or file turned it on)
        flag += f"/--no-{flag[2:]}" if annotation is bool else ""
        unset = self.unset if default is None else None  # e.g. "the preset's"
        default = ... if self.required else default
        info = typer.Option(default, flag, help=self.help, show_default=unset or True)
        out = [_kw(self.param, annotation, info)]
        if self.retired:
            out.append(_kw(f"retired_{self.param}", Any, renamed_option(self.retired, self.flag)))
            out[-1] = out[-1].replace(annotation=_optional(annotation))
        return out

    def value(self, given: Any) -> Any:
        """The field's value from the option's (a tuple from its comma-separated text)."""
        if self.none_at is not None and given == self.none_at:
            return None
        if not _is_tuple(self.hint) or not isinstance(given, str):
            return given
        if not given.strip():
            return self.blank
        kind = typing.get_args(self.hint)[0]  # int, or int | None: ints
        kind = next((k for k in (int, float) if k is kind or k in typing.get_args(kind)), str)
        return tuple(parse_list(given, kind, self.flag))


@dataclasses.dataclass(frozen=True)
class Given:
    """The options given for a config built elsewhere (`From(..., overrides=True)`): field ->
    value, the file's (`--config`) first, then the command line's."""

    values: dict[str, Any]
    flags: dict[str, str]  # field -> the option that sets it

    def apply(self, make: Callable[..., Any]) -> Any:
        """`make(**values)`, a refusal naming the option at fault (`cli.common.configured`)."""
        return configured(make, self.flags, **self.values)


class From:
    """A command parameter's default: a config of class `classes[0]`, its options derived from
    the fields (`only` those, in that order, or all but `exclude`; a `FLAT` field's record
    gives its own fields); `flags` and `helps` override a field's flag and help for this
    command. `presets` (name -> config, or a function returning one) adds `--preset NAME`
    (`retired_presets`: a former switch such as `--quick` -> the preset it now names, hidden,
    with a note); `file` adds `--config FILE` (`section`: the key of the file that holds this
    config, where a command reads two from one file).

    With `overrides=True` the command builds the config itself (from a preset that depends on
    its other options): the options default to None (`defaults` names those that always
    apply), may come from several classes, and the command receives a `Given`."""

    # what a subclass that makes its own options (`FromFlat`) leaves as it is
    section: str | None = None
    overrides = False
    file = True
    retired_presets: Mapping[str, str] = types.MappingProxyType({})
    defaults: Mapping[str, Any] = types.MappingProxyType({})

    def __init__(
        self,
        *classes: type[Config],
        only: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
        flags: Mapping[str, str] | None = None,
        helps: Mapping[str, str] | None = None,
        presets: Mapping[str, Any] | None = None,
        preset_help: str | None = None,
        retired_presets: Mapping[str, str] | None = None,
        file: bool = True,
        overrides: bool = False,
        defaults: Mapping[str, Any] | None = None,
        section: str | None = None,
    ) -> None:
        self.cls, self.presets, self.file, self.overrides = classes[0], presets, file, overrides
        self.section = section
        self.preset_help = preset_help
        self.retired_presets = dict(retired_presets or {})  # a former switch -> its preset
        self.defaults = dict(defaults or {})
        known = _leaf_fields(classes)
        names = list(only) if only is not None else [n for n in known if n not in set(exclude)]
        flags, helps = flags or {}, helps or {}
        self.options = []
        for name in names:
            f, hint, default = known[name]
            flag = flags.get(name) or f.metadata.get("flag") or "--" + name.replace("_", "-")
            if overrides:
                default = self.defaults.get(name)
                hint = _optional(hint) if default is None else hint
            self.options.append(
                Opt(
                    field=name,
                    param=flag.lstrip("-").replace("-", "_"),
                    flag=flag,
                    hint=hint,
                    default=default,
                    help=helps.get(name) or f.metadata.get("help", ""),
                    retired=f.metadata.get("retired"),
                    unset="the preset's" if overrides else None,
                    blank=f.metadata.get("blank", ()),
                    none_at=f.metadata.get("none_at"),
                )
            )

    def preset_option(self) -> Any:
        names = ", ".join(self.presets or ())
        return typer.Option(None, "--preset", help=self.preset_help or f"Named settings: {names}.")

    def base(self, preset: str | None) -> Config:
        """The defaults, or the preset's config."""
        if preset is None:
            return self.cls()
        if preset not in (self.presets or {}):
            raise ConfigError(
                f"unknown preset {preset!r} (--preset); choose one of {', '.join(self.presets)}"
            )
        chosen = self.presets[preset]
        return chosen() if callable(chosen) else chosen

    def build(self, values: dict[str, Any], base: Config) -> Config:
        """`base` with the options given (`values`: option parameter -> value)."""
        by_param = {o.param: o for o in self.options}
        changes = {by_param[p].field: by_param[p].value(v) for p, v in values.items()}
        named = {o.field: o.flag for o in self.options}
        return configured(functools.partial(_replaced, base), named, **changes)

    def read(self, base: Config, doc: dict[str, Any], path: Path) -> Config:
        """`base` with a file's settings (`--config`)."""
        return from_file(self.cls, base, doc, path)

    def given(self, values: dict[str, Any], doc: dict[str, Any] | None) -> Given:
        """The options given, over the file's keys: a flat file's, or those of its sections (a
        run's config.json: `model` and `train`, its other keys left)."""
        sections = [v for v in (doc or {}).values() if isinstance(v, dict)]
        from_file = {k: v for section in sections for k, v in section.items()}
        from_file = from_file if sections else dict(doc or {})
        by_param = {o.param: o for o in self.options}
        fixed = {o.field: o.default for o in self.options if o.field in self.defaults}
        cli = {by_param[p].field: by_param[p].value(v) for p, v in values.items()}
        flags = {o.field: o.flag for o in self.options if o.field in cli}  # named in refusals
        return Given({**fixed, **from_file, **cli}, flags)


def _leaf_fields(classes: Iterable[type[Config]]) -> dict[str, tuple[Any, Any, Any]]:
    """Field name -> (field, type, default) of `classes`, the first holding a name winning; a
    `FLAT` field's record in its place, its fields' defaults those of the holder's default."""
    out: dict[str, tuple[Any, Any, Any]] = {}
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            if f.metadata.get("flat"):
                inner = _leaf_fields([type(default)])
                for name, (g, hint, _) in inner.items():
                    out.setdefault(name, (g, hint, getattr(default, name)))
            else:
                out.setdefault(f.name, (f, hints[f.name], default))
    return out


def _replaced(base: Config, **changes: Any) -> Config:
    """`base.replace(**changes)`, a change of a `FLAT` field's record made inside it."""
    top = {f.name for f in dataclasses.fields(base)}
    for f in dataclasses.fields(base):
        if f.metadata.get("flat"):
            part = getattr(base, f.name)
            inner = {k: changes.pop(k) for k in list(changes) if k not in top and hasattr(part, k)}
            if inner:
                changes[f.name] = part.replace(**inner)
    return base.replace(**changes)


def read_config_file(path: Path) -> dict[str, Any]:
    """A TOML or JSON file's keys (a saved config.json, or one written by hand)."""
    if not path.is_file():
        raise ConfigError(f"--config {path}: no such file")
    text = path.read_text()
    try:
        if path.suffix == ".toml":
            import tomllib

            doc = tomllib.loads(text)
        else:
            doc = json.loads(text)
    except ValueError as err:
        kind = "TOML" if path.suffix == ".toml" else "JSON"
        raise ConfigError(f"--config {path}: not {kind} ({' '.join(str(err).split())})") from None
    if not isinstance(doc, dict):
        raise ConfigError(
            f"--config {path}: expected a table of settings, got {type(doc).__name__}"
        )
    return doc


def from_file(cls: type[Config], base: Config, doc: dict[str, Any], path: Path) -> Config:
    """`base` with the file's keys over it: the keys `cls.to_dict` writes (a field saved under
    an older key, `saved_as`, is read under either name; a name of an older version as this
    version names it, `runs.migrate`); a saved file (it has a format key) is `migrate`d whole.
    A saved file's `provenance` (where and with what it ran) is no setting and is left aside."""
    try:
        doc = migrate(doc) if KEY in doc else renamed(doc)
    except InputError as err:
        raise ConfigError(f"--config {path}: {err}") from None
    doc = {k: v for k, v in doc.items() if k != "provenance"}
    saved = {f.name: saved_key(f) for f in dataclasses.fields(cls)}
    try:
        return cls.from_dict({**base.to_dict(), **{saved.get(k, k): v for k, v in doc.items()}})
    except ConfigError as err:
        raise ConfigError(f"--config {path}: {err}") from None
    except TypeError as err:
        raise ConfigError(f"--config {path}: {err}") from None


def derive(command: Callable[..., Any]) -> Callable[..., Any]:
    """`command` with each `From` parameter replaced by its config's options (see the module
    docstring); the command receives the config built from them."""
    sig = inspect.signature(command, eval_str=True)
    sources = {p.name: p.default for p in sig.parameters.values() if isinstance(p.default, From)}
    filed = [name for name, src in sources.items() if src.file]
    if len(filed) > 1 and not all(sources[name].section for name in filed):
        raise TypeError(f"{command.__name__}: --config can read one config, not {filed}")
    if sum(src.presets is not None for src in sources.values()) > 1:
        raise TypeError(f"{command.__name__}: one --preset per command")
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        if p.name in sources:
            src = sources[p.name]
            if src.presets is not None:
                params.append(_kw("preset", str | None, src.preset_option()))
                for flag, name in src.retired_presets.items():
                    info = typer.Option(False, flag, hidden=True, help=f"--preset {name}")
                    params.append(_kw(_retired_preset(flag), bool, info))
            for opt in src.options:
                params += opt.typer_parameters()
            if filed and p.name == filed[-1]:  # one --config, after the configs it reads
                info = typer.Option(None, "--config", help=CONFIG_HELP)
                params.append(_kw("config_file", Path | None, info))
        else:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
    own_ctx = next((p.name for p in params if p.annotation is typer.Context), None)
    if own_ctx is None:
        params.insert(0, _kw(_CTX, typer.Context, inspect.Parameter.empty))
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TypeError(f"{command.__name__}: options named twice: {twice}")

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        ctx = kwargs[own_ctx] if own_ctx else kwargs.pop(_CTX)
        path = kwargs.pop("config_file", None)
        preset = kwargs.pop("preset", None) if any(s.presets for s in sources.values()) else None
        for src in sources.values():
            for flag, name in src.retired_presets.items():
                if kwargs.pop(_retired_preset(flag)):
                    typer.echo(f"note: {flag} is deprecated; use --preset {name}", err=True)
                    preset = preset or name
        doc = read_config_file(path) if path is not None else None
        for name, src in sources.items():
            given: dict[str, Any] = {}
            for opt in src.options:
                value = kwargs.pop(opt.param)
                retired = kwargs.pop(f"retired_{opt.param}", None) if opt.retired else None
                if retired is not None:
                    given[opt.param] = retired
                elif _given(ctx, opt.param):
                    given[opt.param] = value
            filed = doc if src.file else None
            if filed is not None and src.section:  # a run's config.json: {"model", "train"}
                filed = filed.get(src.section, {})
            if src.overrides:
                kwargs[name] = src.given(given, filed)
                continue
            base = src.base(preset if src.presets is not None else None)
            if filed is not None:
                base = src.read(base, filed, path)
            kwargs[name] = src.build(given, base)
        return command(**kwargs)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    del run.__wrapped__  # Typer reads the signature above, not the command's
    return run


def _retired_preset(flag: str) -> str:
    return "retired_" + flag.lstrip("-").replace("-", "_")


def _given(ctx: Any, param: str) -> bool:
    """The option was given on the command line (or by environment), not left at default."""
    source = ctx.get_parameter_source(param)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def _kw(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def _is_tuple(hint: Any) -> bool:
    return typing.get_origin(hint) is tuple


def _optional(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return annotation if union and type(None) in args else annotation | None


class FromFlat(From):
    """A config whose options are flat names for its parts' fields (`PipelineConfig`: `flat`
    maps `id_batch_size` to the part `id`'s field `batch_size`; the option is
    --id-batch-size, its help and type the field's, its default `defaults[name]`). The class
    builds itself from flat names (`from_options(base, **flat)`), names a preset
    (`from_preset(name)`) and reads a saved config (`from_dict`, or flat keys)."""

    def __init__(
        self,
        cls: type[Any],
        flat: Mapping[str, tuple[str | None, str | None]],
        defaults: Mapping[str, Any],
        *,
        only: Iterable[str],
        required: Iterable[str] = (),
        helps: Mapping[str, str] | None = None,
        presets: Mapping[str, Any] | None = None,
        preset_help: str | None = None,
    ) -> None:
        self.cls, self.presets, self.preset_help = cls, presets, preset_help
        self.flat = dict(flat)
        helps = helps or {}
        self.options = []
        for name in only:
            part, field = self.flat[name]
            holder = cls if part is None else typing.get_type_hints(cls)[part]
            f = next(g for g in dataclasses.fields(holder) if g.name == field)
            hint = typing.get_type_hints(holder)[field]
            retired = f.metadata.get("retired")
            if retired and part is not None:  # --precision of the part id: --id-precision
                retired = f"--{part.replace('_', '-')}-{retired[2:]}"
            self.options.append(
                Opt(
                    field=name,
                    param=name,
                    flag="--" + name.replace("_", "-"),
                    hint=hint,
                    default=defaults[name],
                    help=helps.get(name) or f.metadata.get("help", ""),
                    retired=retired,
                    required=name in set(required),
                )
            )

    def base(self, preset: str | None) -> Any:
        return self.cls() if preset is None else self.cls.from_preset(preset)

    def build(self, values: dict[str, Any], base: Any) -> Any:
        by_param = {o.param: o for o in self.options}
        changes = {p: by_param[p].value(v) for p, v in values.items()}
        flags = {o.field: o.flag for o in self.options if o.field in changes}
        try:
            return self.cls.from_options(base, **changes)
        except ConfigError as err:
            message = as_given(str(err), {o.field: o.flag for o in self.options})
            if any(flag in message for flag in flags.values()):
                raise ConfigError(message) from None
        return configured(functools.partial(self.cls.from_options, base), flags, **changes)

    def read(self, base: Any, doc: dict[str, Any], path: Path) -> Any:
        """`base` with a file's settings: a saved config (nested, `to_dict`'s keys) or flat
        names (a declaration's, `FLAT`'s)."""
        nested = any(
            isinstance(v, dict) and self.flat[k][1] for k, v in doc.items() if k in self.flat
        )
        if set(doc) <= set(self.flat) and not nested:  # a part given whole reads either way
            try:
                return self.cls.from_options(base, **doc)
            except ConfigError as err:
                raise ConfigError(f"--config {path}: {err}") from None
        return from_file(self.cls, base, doc, path)


def as_given(message: str, flags: Mapping[str, str]) -> str:
    """A library message with the names a Python caller gives (`id_batch_size`) written as
    the command's options (`--id-batch-size`): a name with an underscore wherever it stands
    but in a comparison (`0 < min_tokens < max_tokens` reads as the rule it is), a plain word
    (`points`) where the message starts with it or a number follows it."""
    for name, flag in flags.items():
        word = rf"(?<![\w-])(?<!< ){re.escape(name)}(?![\w-])"
        message = re.sub(word if "_" in name else rf"^{word}|{word}(?= -?\d)", flag, message)
    return message
