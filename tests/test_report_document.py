"""The report writer: self-contained HTML with embedded PNGs, and a Markdown twin."""

import base64
import re
from pathlib import Path

import matplotlib.pyplot as plt

from scalelab.report.document import Report


def test_report_embeds_figures_and_writes_markdown_twin(tmp_path: Path) -> None:
    rep = Report("t")
    rep.heading("Section")
    rep.paragraph("a < b")
    rep.table([{"n": 1, "loss": 0.123456}], caption="cap")
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    rep.figure(fig, "fig one")
    html_path, md_path = rep.write(tmp_path)
    page = html_path.read_text()
    assert "a &lt; b" in page and "<td>0.1235</td>" in page
    png = base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)'", page).group(1))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    md = md_path.read_text()
    assert "| 1 | 0.1235 |" in md
    assert (tmp_path / "report_files" / "figure1.png").read_bytes() == png
