"""A shareable report: one self-contained HTML page (figures embedded as PNG) and its
Markdown twin (figures as PNG files beside it)."""

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
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:right}th{background:#f4f4f4}img{max-width:100%}pre{background:#f7f7f7;padding:1em;
overflow-x:auto;font-size:12px}figcaption{color:#555;font-size:90%}
"""


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


@dataclass
class Report:
    """Collect headings, text, tables and figures; `write` renders both formats."""

    title: str
    _blocks: list[tuple[str, Any]] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self._blocks.append(("heading", (level, text)))

    def paragraph(self, text: str) -> None:
        self._blocks.append(("paragraph", text))

    def table(self, rows: list[dict[str, Any]], caption: str = "") -> None:
        self._blocks.append(("table", (rows, caption)))

    def figure(self, fig: Figure, caption: str = "") -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        self._blocks.append(("figure", (buf.getvalue(), caption)))

    def code(self, text: str) -> None:
        self._blocks.append(("code", text))

    def json(self, obj: Any) -> None:
        self.code(to_json(obj))

    def write(self, out_dir: str | Path, stem: str = "report") -> tuple[Path, Path]:
        """Write `stem.html` and `stem.md` (+ `stem_files/*.png`) atomically."""
        out_dir = Path(out_dir)
        h = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(self.title)}</title>"]
        h.append(f"<style>{_CSS}</style><h1>{html.escape(self.title)}</h1>")
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
                rows, caption = payload
                if not rows:
                    continue
                cols = list(rows[0])
                h.append("<table>")
                if caption:
                    h.append(f"<caption>{html.escape(caption)}</caption>")
                h.append("<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in cols))
                for r in rows:
                    cells = "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols)
                    h.append(f"<tr>{cells}</tr>")
                h.append("</table>")
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
                    f"<figure><img src='data:image/png;base64,{b64}'>"
                    f"<figcaption>{html.escape(caption)}</figcaption></figure>"
                )
                rel = f"{stem}_files/figure{n_fig}.png"
                atomic_write_bytes(out_dir / rel, png)
                md += [f"![{caption}]({rel})", "", f"*{caption}*", ""]
        html_path = atomic_write_text(out_dir / f"{stem}.html", "\n".join(h) + "\n")
        md_path = atomic_write_text(out_dir / f"{stem}.md", "\n".join(md) + "\n")
        return html_path, md_path
