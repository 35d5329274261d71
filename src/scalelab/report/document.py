"""A shareable report: one self-contained HTML page (figures embedded as PNG) and its
Markdown twin (figures as PNG files beside it).

The page is laid out for a laptop screen: the text column is at most 1000 px wide, figures
shrink to it, wide tables and code scroll inside their own box, long names wrap; a list of
figures under the title links to each one (tests/test_report_browser.py checks all of this
in headless Chromium)."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

from scalelab.io import atomic_write_bytes, atomic_write_text, to_json

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
h1,h2,h3,p,figcaption,li{overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%;margin:1em 0}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;
white-space:nowrap}td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}caption{text-align:left;
color:#555;font-size:90%;padding:4px 0}figure{margin:1.5em 0}img{max-width:100%;height:auto}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:12px}
figcaption{color:#555;font-size:90%}.contents{font-size:90%;color:#444}
td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:6em;text-align:left}
"""


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def _html_table(
    rows: list[dict[str, Any]], cols: list[Any], caption: str, wrap: tuple[str, ...] = ()
) -> str:
    """A table in a box that scrolls sideways when the table is wider than the page; the
    cells of the `wrap` columns (names, words) break lines instead."""
    h = ["<div class='scroll'><table>"]
    if caption:
        h.append(f"<caption>{html.escape(caption)}</caption>")
    h.append("<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in cols) + "</tr>")
    for r in rows:
        h.append(
            "<tr>"
            + "".join(
                f"<td{' class=wrap' if c in wrap else ''}>{html.escape(_fmt(r.get(c)))}</td>"
                for c in cols
            )
        )
    return "\n".join(h) + "\n</table></div>"


@dataclass
class Report:
    """Collect headings, text, tables and figures; `write` renders both formats."""

    title: str
    _blocks: list[tuple[str, Any]] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self._blocks.append(("heading", (level, text)))

    def paragraph(self, text: str) -> None:
        self._blocks.append(("paragraph", text))

    def table(
        self, rows: list[dict[str, Any]], caption: str = "", wrap: tuple[str, ...] = ()
    ) -> None:
        """A table; the cells of the `wrap` columns may break lines to keep it in the page."""
        self._blocks.append(("table", (rows, caption, wrap)))

    def figure(self, fig: Figure, caption: str = "") -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        self._blocks.append(("figure", (buf.getvalue(), caption)))

    def image(self, png: bytes, caption: str = "") -> None:
        """A figure already drawn, as PNG bytes (a file a command saved)."""
        self._blocks.append(("figure", (png, caption)))

    def code(self, text: str) -> None:
        self._blocks.append(("code", text))

    def json(self, obj: Any) -> None:
        self.code(to_json(obj))

    def _contents(self) -> str:
        """The list of the page's figures, each linked: what a reader (and the browser test)
        can expect to find below."""
        captions = [payload[1] for kind, payload in self._blocks if kind == "figure"]
        if not captions:
            return "<p class='contents'>This page has no figures.</p>"
        items = "".join(
            f"<li><a href='#figure-{i}'>Figure {i}</a>: {html.escape(c.split('. ')[0])}</li>"
            for i, c in enumerate(captions, 1)
        )
        return f"<nav class='contents'>Figures:<ol>{items}</ol></nav>"

    def write(self, out_dir: str | Path, stem: str = "report") -> tuple[Path, Path]:
        """Write `stem.html` and `stem.md` (+ `stem_files/*.png`) atomically."""
        out_dir = Path(out_dir)
        h = [
            "<!doctype html><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{html.escape(self.title)}</title><style>{_CSS}</style>",
            f"<h1>{html.escape(self.title)}</h1>",
            self._contents(),
        ]
        md = [f"# {self.title}", ""]
        n_fig = 0
        for kind, payload in self._blocks:
            if kind == "heading":
                level, text = payload
                h.append(f"<h{level}>{html.escape(text)}</h{level}>")
                md += ["#" * level + " " + text, ""]
            elif kind == "paragraph":
                h.append(f"<p>{html.escape(payload)}</p>")
                md += [payload, ""]
            elif kind == "code":
                h.append(f"<pre>{html.escape(payload)}</pre>")
                md += ["```", payload, "```", ""]
            elif kind == "table":
                rows, caption, wrap = payload
                if not rows:
                    continue
                cols = list(rows[0])
                h.append(_html_table(rows, cols, caption, wrap))
                if caption:
                    md += [f"*{caption}*", ""]
                md.append("| " + " | ".join(map(str, cols)) + " |")
                md.append("|" + "---|" * len(cols))
                md += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
                md.append("")
            elif kind == "figure":
                png, caption = payload
                n_fig += 1
                b64 = base64.b64encode(png).decode("ascii")
                h.append(
                    f"<figure id='figure-{n_fig}'><img src='data:image/png;base64,{b64}' "
                    f"alt='Figure {n_fig}'><figcaption>Figure {n_fig}. "
                    f"{html.escape(caption)}</figcaption></figure>"
                )
                rel = f"{stem}_files/figure{n_fig}.png"
                atomic_write_bytes(out_dir / rel, png)
                md += [f"![{caption}]({rel})", "", f"*{caption}*", ""]
        html_path = atomic_write_text(out_dir / f"{stem}.html", "\n".join(h) + "\n")
        md_path = atomic_write_text(out_dir / f"{stem}.md", "\n".join(md) + "\n")
        return html_path, md_path
