"""The README is a front door: at most 150 lines, and every link in it resolves (a file in
the repo, and a heading in it where the link names one, slugged as GitHub slugs it)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every anchor of a Markdown file (a repeated heading gets -1, -2, ... as on GitHub)."""
    out: set[str] = set()
    in_code = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"#{1,6} (.+)", line)):
            base, n = slug(m.group(1)), 0
            while (name := base if n == 0 else f"{base}-{n}") in out:
                n += 1
            out.add(name)
    return out


def broken_links(doc: Path) -> list[str]:
    bad = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # https:, mailto: (not resolvable offline)
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            bad.append(f"{target}: no file {path}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {path or doc.name}")
    return bad


def test_readme_is_short_and_every_link_resolves() -> None:
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 150
    assert LINK.findall(readme.read_text(encoding="utf-8")), "the README lost its links"
    assert broken_links(readme) == []


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# The verdict, across corpora\n## Set-up\n## Set-up\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "[ok](a.md#the-verdict-across-corpora) [ok](a.md#set-up-1) [web](https://x.org/y)\n"
        "[gone](b.md) [bad anchor](a.md#verdict)\n"
    )
    assert broken_links(doc) == ["b.md: no file b.md", "a.md#verdict: no heading #verdict in a.md"]
