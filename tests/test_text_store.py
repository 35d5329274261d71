"""Token stores: contents equal re-tokenising the documents; atomic, idempotent, checked."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from scalelab.errors import ConfigError, InputError
from scalelab.text.corpora import Corpus, Document, load_corpus
from scalelab.text.split import SPLITS, split_documents
from scalelab.text.store import TokenStore, prepare_corpus


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    docs = load_corpus("python-stdlib").documents[:200]
    docs = [Document(d.name, d.text[:1500]) for d in docs]
    # a literal end-of-text marker inside a document must stay text, not become a boundary
    docs.append(Document("eot-inside", "before <|endoftext|> after\n" * 3))
    return Corpus("mini", "PSF-2.0", "test", tuple(docs))


@pytest.fixture(scope="module")
def store_dir(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stores") / "mini"
    return prepare_corpus(corpus, out, vocab_size=512, seed=5, test_fraction=0.2, quiet=True)


def test_store_equals_retokenising_every_document(corpus: Corpus, store_dir: Path) -> None:
    tok = Tokenizer.from_file(str(store_dir / "tokenizer.json"))
    tok.encode_special_tokens = True
    expected = split_documents(corpus.documents, seed=5, test_fraction=0.2)
    for split in SPLITS:
        store = TokenStore(store_dir, split)
        docs = expected[split]
        assert store.n_documents == len(docs) > 0
        assert store.document_names() == [d.name for d in docs]
        assert store.tokens.dtype == np.uint16 and store.offsets.dtype == np.int64
        eot = store.eot_id
        want = np.concatenate([np.array([*tok.encode(d.text).ids, eot]) for d in docs])
        np.testing.assert_array_equal(np.asarray(store.tokens), want)
        for i, d in enumerate(docs):
            assert tok.decode(store.document(i).tolist()) == d.text
        assert (np.asarray(store.tokens) == eot).sum() == len(docs)  # EOT only as separator
        info = store.meta["splits"][split]
        h = hashlib.sha256()
        for d in docs:
            data = d.text.encode()
            h.update(len(data).to_bytes(8, "little") + data)
        assert info["sha256"] == h.hexdigest()
        assert info["n_chars"] == sum(len(d.text) for d in docs)


def test_meta_records_corpus_and_tokenizer(corpus: Corpus, store_dir: Path) -> None:
    store = TokenStore(store_dir)
    meta = store.meta
    assert meta["corpus"]["name"] == "mini" and meta["corpus"]["license"] == "PSF-2.0"
    assert meta["corpus"]["sha256"] == corpus.sha256()
    assert store.vocab_size == 512 and store.eot_id == 0 and meta["dtype"] == "uint16"
    assert store.tokenizer_path == store_dir / "tokenizer.json"
    assert store.tokenizer().get_vocab_size() == 512
    assert "git_revision" in meta["provenance"]


def test_prefix_is_nested_and_bounded(store_dir: Path) -> None:
    store = TokenStore(store_dir, "train")
    np.testing.assert_array_equal(store.prefix(1000), store.prefix(5000)[:1000])
    assert len(store.prefix(store.n_tokens)) == store.n_tokens
    with pytest.raises(InputError, match="holds"):
        store.prefix(store.n_tokens + 1)


def test_rerun_is_a_no_op_and_a_different_request_is_refused(
    corpus: Corpus, store_dir: Path
) -> None:
    before = (store_dir / "train.bin").stat().st_mtime_ns
    again = prepare_corpus(corpus, store_dir, vocab_size=512, seed=5, test_fraction=0.2, quiet=True)
    assert again == store_dir and (store_dir / "train.bin").stat().st_mtime_ns == before
    with pytest.raises(ConfigError, match=r"different config \(seed: saved=5 now=6\)"):
        prepare_corpus(corpus, store_dir, vocab_size=512, seed=6, test_fraction=0.2, quiet=True)


def test_failures_leave_nothing_behind(corpus: Corpus, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="more than this corpus supports"):
        prepare_corpus(corpus, tmp_path / "s", vocab_size=200_000, quiet=True)
    tiny = Corpus("tiny", "x", "x", (Document("a", "one"), Document("b", "two")))
    with pytest.raises(InputError, match="split of 'tiny' is empty"):
        prepare_corpus(tiny, tmp_path / "t", vocab_size=300, quiet=True)
    assert list(tmp_path.iterdir()) == []


def test_uint32_when_the_vocabulary_does_not_fit_16_bits(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(70_000)]
    vocab = {"<unk>": 0, **{w: i + 1 for i, w in enumerate(words)}, "<|endoftext|>": 70_001}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    docs = tuple(Document(str(i), f"w{i} w{69_999 - i} w{(7 * i) % 70_000}") for i in range(400))
    out = prepare_corpus(Corpus("big", "x", "x", docs), tmp_path / "s", tokenizer=tok, quiet=True)
    store = TokenStore(out, "train")
    assert store.tokens.dtype == np.uint32 and store.vocab_size == 70_002
    assert store.eot_id == 70_001
    names = store.document_names()
    for i in range(store.n_documents):
        j = int(names[i])
        assert store.document(i).tolist() == [j + 1, 70_000 - j, (7 * j) % 70_000 + 1]


def test_damaged_stores_are_refused(store_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a token store"):
        TokenStore(tmp_path)
    with pytest.raises(InputError, match="no split 'dev'"):
        TokenStore(store_dir, "dev")
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in store_dir.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    data = (broken / "val.bin").read_bytes()
    (broken / "val.bin").write_bytes(data[:-2])
    with pytest.raises(InputError, match="damaged"):
        TokenStore(broken, "val")
    (broken / "test.offsets.npy").unlink()
    with pytest.raises(InputError, match=r"damaged token store.*test\.offsets\.npy"):
        TokenStore(broken, "test")
    (broken / "meta.json").write_text('{"format": "scalelab-token-store/1", "spl')
    with pytest.raises(InputError, match=r"damaged token store.*JSONDecodeError"):
        TokenStore(broken, "train")


def test_a_loaded_tokenizer_reproduces_the_store(
    corpus: Corpus, store_dir: Path, tmp_path: Path
) -> None:
    again = prepare_corpus(
        corpus, tmp_path / "again", tokenizer=store_dir, seed=5, test_fraction=0.2, quiet=True
    )
    for split in SPLITS:
        a, b = TokenStore(store_dir, split), TokenStore(again, split)
        np.testing.assert_array_equal(np.asarray(a.tokens), np.asarray(b.tokens))
        np.testing.assert_array_equal(a.offsets, b.offsets)
    meta = TokenStore(again).meta
    assert meta["tokenizer_source"] == str(store_dir.resolve())
    assert meta["request"]["tokenizer_sha256"] is not None


def test_too_few_documents_names_the_fix_that_applies_to_the_format(tmp_path: Path) -> None:
    """Issue 52: a 10-document JSONL was told to use --split-on line, which reads text files
    only; a text file of blank-separated paragraphs still gets that hint."""
    jsonl = tmp_path / "ten.jsonl"
    jsonl.write_text("".join(f'{{"text": "document {i} has words"}}\n' for i in range(10)))
    text = tmp_path / "ten.txt"
    text.write_text("\n\n".join(f"paragraph {i} has words" for i in range(10)))
    for path, hint in ((jsonl, False), (text, True)):
        with pytest.raises(InputError, match=r"split of .* is empty") as refused:
            prepare_corpus(load_corpus(path), tmp_path / f"{path.stem}-{hint}", vocab_size=260)
        assert ("--split-on line" in str(refused.value)) is hint


def test_a_csv_is_one_document_per_row_of_its_text_column(tmp_path: Path) -> None:
    """Issue 52: a .csv was read as one text document (the error then blamed an empty train
    split); it is read like Parquet, one document per row of --text-field."""
    import csv

    path = tmp_path / "rows.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows([[i, f"row {i}, with a comma\nand a line break"] for i in range(5)])
    docs = load_corpus(path).documents
    assert [d.text for d in docs] == [f"row {i}, with a comma\nand a line break" for i in range(5)]
    with pytest.raises(InputError, match=r"no column 'body' \(columns: \['id', 'text'\]\)"):
        load_corpus(path, text_field="body")
    tsv = tmp_path / "rows.tsv"
    tsv.write_text("text\tn\nfirst row\t1\nsecond row\t2\n", encoding="utf-8")
    assert [d.text for d in load_corpus(tsv).documents] == ["first row", "second row"]


def test_an_opened_store_is_read_once_by_the_steps_that_share_it(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers validate's first step hands one `Store` (the model configs, the test
    points, the unigram floor, the facts floor) open each split at most once between them,
    and give what they give from the path."""
    from scalelab.lm.config import configs_for_preset
    from scalelab.pipeline.config import PipelineConfig
    from scalelab.pipeline.store import count_id_points
    from scalelab.text import store as store_module
    from scalelab.text.floors import facts_floor, store_unigram_entropy
    from scalelab.text.store import Store

    cfg = PipelineConfig(id=PipelineConfig().id.replace(batch_size=64))
    by_path = (
        configs_for_preset("tiny", store_dir)[0].vocab_size,
        count_id_points(store_dir, cfg),
        store_unigram_entropy(store_dir, 32),
        facts_floor(store_dir)[1],
    )
    opens: list[str] = []
    real = store_module.TokenStore.__init__

    def counted(self, data_dir, split="train"):
        opens.append(split)
        real(self, data_dir, split)

    monkeypatch.setattr(store_module.TokenStore, "__init__", counted)
    shared = Store(store_dir)
    by_object = (
        configs_for_preset("tiny", shared)[0].vocab_size,
        count_id_points(shared, cfg),
        store_unigram_entropy(shared, 32),
        facts_floor(shared)[1],
    )
    assert by_object == by_path
    assert sorted(opens) == ["test", "train"]  # one open of each split read
