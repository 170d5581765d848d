"""The pictures of the docs: every image a page or the README shows is on disk, and the
benchmark charts (``python -m benchmarks --charts``) are what the committed results draw,
byte for byte, so that a chart is never older than its JSON."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
CHARTS = ROOT / "docs" / "img" / "benchmarks"


class _ImgSources(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.sources += [v for k, v in attrs if k == "src" and v]


def _sources(tokens: list[Token]) -> Iterator[str]:
    for token in tokens:
        if token.type == "image":
            yield str(token.attrs["src"])
        elif token.type in ("html_block", "html_inline"):
            parser = _ImgSources()
            parser.feed(token.content)
            yield from parser.sources
        if token.children:
            yield from _sources(token.children)


def images(page: Path) -> list[str]:
    """The sources of the Markdown images (inline and by reference) and of the ``<img>``
    tags of a page, as a CommonMark parser reads it (code blocks hold none)."""
    md = MarkdownIt("commonmark").enable("table")
    return list(_sources(md.parse(page.read_text(encoding="utf-8"))))


def test_every_image_of_the_docs_and_readme_is_on_disk() -> None:
    seen, missing = [], []
    for page in PAGES:
        for src in images(page):
            url = urlsplit(src)
            if url.scheme or url.netloc:  # http(s), data: nothing on disk to check
                continue
            seen.append(src)
            if not (page.parent / unquote(url.path)).is_file():
                missing.append(f"{page.relative_to(ROOT)}: {src}")
    assert missing == []
    assert len(seen) >= 6  # the five charts of docs/benchmarks.md and one in the README


def test_the_image_check_reads_every_form_of_image(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '![a chart\nover two lines](a.svg "title")\n\n![by reference][r]\n\n'
        '<p><img alt="x" src="b.png"></p>\n\ntext <img src="c.png"> inline\n\n'
        "    ![in code](not-an-image.svg)\n\n```\n![fenced](nor-this.svg)\n```\n\n"
        "[r]: d.svg\n",
        encoding="utf-8",
    )
    assert images(page) == ["a.svg", "d.svg", "b.png", "c.png"]


def test_every_benchmark_chart_is_shown_in_the_benchmark_page() -> None:
    shown = {Path(src).name for src in images(ROOT / "docs" / "benchmarks.md")}
    assert {p.name for p in CHARTS.glob("*.svg")} <= shown


def test_the_committed_charts_are_what_the_committed_results_draw(tmp_path: Path) -> None:
    matplotlib = pytest.importorskip(
        "matplotlib", reason="matplotlib is not installed (the test and bench extras have it)"
    )
    from benchmarks import charts

    if not matplotlib.__version__.startswith(charts.MATPLOTLIB_SERIES + "."):
        pytest.skip(
            f"matplotlib {matplotlib.__version__}: the charts are drawn with "
            f"{charts.MATPLOTLIB_SERIES}.x (the test extra's pin), another series draws "
            "other bytes"
        )
    assert charts.main(["--out", str(tmp_path)]) == 0
    drawn = {p.name: p.read_bytes() for p in tmp_path.glob("*.svg")}
    committed = {p.name: p.read_bytes() for p in CHARTS.glob("*.svg")}
    assert len(drawn) >= 4
    assert sorted(drawn) == sorted(committed)
    stale = [name for name in drawn if drawn[name] != committed[name]]
    assert stale == [], (
        f"{stale} differ from what benchmarks/results/*.json draws: run "
        "`python -m benchmarks --charts` and commit docs/img/benchmarks/"
    )


def test_the_test_extra_pins_the_series_the_charts_are_drawn_with() -> None:
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11+")
    import tomllib
    from benchmarks.charts import MATPLOTLIB_SERIES
    from packaging.requirements import Requirement

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    [pin] = [Requirement(r) for r in extras["test"] if Requirement(r).name == "matplotlib"]
    major, minor = (int(n) for n in MATPLOTLIB_SERIES.split("."))
    assert pin.specifier.contains(f"{major}.{minor}.0")
    assert not pin.specifier.contains(f"{major}.{minor + 1}.0")
    assert not pin.specifier.contains(f"{major}.{minor - 1}.99")
