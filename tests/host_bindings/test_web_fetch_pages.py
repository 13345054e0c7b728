"""web_fetch on real-world-shaped pages and on hostile HTML, through ``Runtime.from_config``.

The pages live in ``pages/``; a real HTTP server on 127.0.0.1 serves them, some with the
charset only in the Content-Type header, some only in a ``<meta>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import EgressConfig, ToolcageConfig, ToolOverride
from toolcage.runtime import Runtime, TextContent

from .servers import Server, _send, serving

PAGES = Path(__file__).parent / "pages"

HEADER_CHARSETS = {"news_latin1_header.html": "text/html; charset=ISO-8859-1"}
"""Pages whose charset is declared in the Content-Type header only."""

# Hostile documents: deep nesting of each kind, huge attributes, broken markup, and
# millions of tiny elements (about the default 5 MiB response cap).
HOSTILE = {
    "deep-div": b"<div>" * 100_000 + b"bottom" + b"</div>" * 100_000,
    "deep-inline": b"<p>top</p>" + b"<b><i><span>" * 40_000 + b"bottom",
    "deep-table": b"<p>top</p>" + b"<table><tr><td>" * 20_000 + b"bottom",
    "deep-list": b"<p>top</p>" + b"<ul><li>" * 50_000 + b"bottom",
    "deep-quote": b"<p>top</p>" + b"<blockquote>" * 50_000 + b"bottom",
    "shallow-lists": b"<ul><li>" * 300 + b"three hundred down",
    "huge-href": b'<p>before</p><a href="' + b"h" * 5_000_000 + b'">big link</a><p>after</p>',
    "huge-alt": b"<img src='/i.png' alt='" + b"alt " * 1_200_000 + b"'><p>after the image</p>",
    "broken": (
        b"<html><body><<<>>></table></td><p>one<p>two</b></i><table><tr><td>a<td>b</tr>"
        b"<tr><td>c</table><li>stray<![CDATA[x]]><?php echo 1 ?>\x00<p>end \x1b[31m red"
        b"<p>&#99999999999; &#xD800; &bogus; &#; &amp &lt;3 <3 a < b <p title='x > y'>after"
        b"<script>never()"
    ),
    "huge-text": b"<p>" + b"lorem ipsum dolor " * 300_000,
    "huge-code": b"<pre>" + b"x = 1\n" * 900_000,
    "many-links": b"<p>" + b"<a href='/a/very/long/path/to/somewhere'>x</a>" * 110_000,
    "all-latin": b'<meta charset="windows-1252"><p>' + "caf\u00e9 ".encode("cp1252") * 1_150_000,
    "tiny-elements": b"<i></i>" * 740_000,
    "tiny-paragraphs": b"<p>x</p>" * 640_000,
    # What lexbor alone would take quadratic time over (see web_fetch/page.c).
    "many-attributes": b"<p " + b"".join(b'a%d="v" ' % i for i in range(100_000)) + b">after",
    "late-href": (
        b'<p><a href="/a" ' + b"x=1 " * 127 + b">first</a></p>"
        b"<p><a " + b"x=1 " * 128 + b'href="/b">second</a></p>'
    ),
    "repeated-body": b"<p>before</p>" + b"".join(b"<body b%d=1>" % i for i in range(50_000)),
    "many-options": b"<p>before</p><select>" + b"<option>x" * 50_000 + b"</select><p>after",
    "many-tag-names": b"".join(b"<t%d>x</t%d>" % (i, i) for i in range(10_000)),
}


def _page(name: str) -> Callable[[BaseHTTPRequestHandler], None]:
    def route(handler: BaseHTTPRequestHandler) -> None:
        body = (PAGES / name).read_bytes()
        _send(handler, 200, body, HEADER_CHARSETS.get(name, "text/html"))

    return route


def _bytes(
    body: bytes, content_type: str = "text/html"
) -> Callable[[BaseHTTPRequestHandler], None]:
    def route(handler: BaseHTTPRequestHandler) -> None:
        _send(handler, 200, body, content_type)

    return route


@pytest.fixture(scope="module")
def site() -> Iterator[Server]:
    routes = {f"/pages/{page.name}": _page(page.name) for page in PAGES.glob("*.html")}
    routes["/blog/2026/post.html"] = _page("blog_article.html")
    routes.update({f"/hostile/{name}": _bytes(body) for name, body in HOSTILE.items()})
    routes["/shift-jis"] = _bytes(
        "<p>ascii part</p><p>日本語</p>".encode("shift_jis"), "text/html; charset=Shift_JIS"
    )
    routes["/utf16"] = _bytes("\ufeff<p>wide café</p>".encode("utf-16-le"))
    with serving(routes) as server:
        yield server


def fetch(
    tmp_path: Path, url: str, memory_bytes: int | None = None, **arguments: Any
) -> dict[str, Any]:
    """Run web_fetch through a real Runtime; the envelope's text and error type."""
    (tmp_path / "workspace").mkdir(exist_ok=True)
    config = ToolcageConfig(
        egress=EgressConfig(private_exceptions=("127.0.0.1",), max_response_bytes=6_000_000),
        tools={"web_fetch": ToolOverride(memory_bytes=memory_bytes)},
        base_dir=tmp_path,
    )

    async def call() -> dict[str, Any]:
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute("web_fetch", {"url": url, **arguments})
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        kind = result.error.kind.value if result.error is not None else None
        return {"ok": not result.is_error, "error_type": kind, "text": text}

    return anyio.run(call)


class TestRealWorldPages:
    def test_blog_article_keeps_the_article_and_drops_the_chrome(
        self, site: Server, tmp_path: Path
    ) -> None:
        text = fetch(tmp_path, site.url + "/blog/2026/post.html")["text"]
        assert text.startswith(
            "Title: Shipping a Parser to WebAssembly — Field Notes\n\n"
            "# Shipping a Parser to WebAssembly\n\n"
        )
        assert (
            "We moved our HTML handling into a *sandboxed* guest. The result was **faster** "
            "than we expected, and it never touches the host's memory." in text
        )
        assert f"![The conversion pipeline]({site.url}/blog/2026/images/pipeline.png)" in text
        assert "## Why a real parser" in text
        assert "[the spec](https://html.spec.whatwg.org/multipage/parsing.html)" in text
        assert f"[our earlier post]({site.url}/blog/2025/scanner-bugs.html)" in text
        assert "> Be liberal in what you accept.\n>\n> — Jon Postel" in text
        for chrome in ("Archive", "Popular posts", "Subscribe", "All rights", "Privacy", "gtag"):
            assert chrome not in text
        assert "Tags:" not in text  # the article's own footer

    def test_docs_code_blocks_keep_their_language(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/docs_page.html")["text"]
        assert (
            "```python\ndef load(path):\n    with open(path) as f:\n"
            "        return parse(f.read())  # keeps   spacing\n```" in text
        )
        assert '```js\nconst cfg = await load("config.toml");\nif (cfg.level < 2 && ' in text
        assert '```rust\nfn main() {\n    let cfg = Config::load("config.toml")?;\n}\n```' in text
        assert "`` --level=`debug` ``" in text
        assert "Docs home" not in text
        assert "Edit this page" not in text

    def test_docs_tables_stay_tables(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/docs_page.html")["text"]
        assert (
            "| Option | Type | Meaning |\n"
            "| --- | --- | --- |\n"
            "| `level` | int | Verbosity, 0 \\| 1 \\| 2 |\n"
            "| `pattern` | string | A regex such as `a\\|b`, matched against each line |\n"
            "| `paths` | list |  |" in text
        )
        # no th: the first row is the header
        assert "| Code | Meaning |\n| --- | --- |\n| 0 | success |\n| 2 | bad *usage* |" in text

    def test_named_entities_are_all_decoded(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/wiki_article.html")["text"]
        assert text.startswith("Title: Cafe naïve – Wikipedia-like\n\n# Café naïve\n\n")
        assert (
            "The **Café naïve** is a coffee house — famous for its ♥ latte art … and rated ✓ "
            "by critics. Prices run from £2½ to €5; temperatures ≥ 60°C. It is ≂̸ ordinary" in text
        )
        assert "Opened by Zoë André‑Lefèvre in Malmö, the café served ☕ from day one." in text
        assert "| Founded | 1887 (aged 139) |" in text
        assert "| Motto | «Coffee & care» |" in text
        assert "&" + "hearts;" not in text
        for chrome in ("Main page", "Random article", "last edited", "Jump to content"):
            assert chrome not in text

    def test_nested_lists_and_images(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/lists_and_images.html")["text"]
        assert (
            "- Clothes\n  - Shirts\n  - Socks\n    1. Wool\n    2. Cotton\n"
            f"- Gear ![A green tent]({site.url}/img/tent.jpg)\n\n3. Third step\n4. Fourth step"
            in text
        )
        assert (
            f"[![Lake \\[at dawn\\]]({site.url}/pages/thumbs/lake.png)]({site.url}/gallery/)"
            in text
        )
        assert "Inline pixel" in text
        assert "data:image" not in text

    def test_layout_tables_are_blocks_and_data_tables_stay(
        self, site: Server, tmp_path: Path
    ) -> None:
        text = fetch(tmp_path, site.url + "/pages/forum_layout_tables.html")["text"]
        assert (
            "| 1. | [Show: a parser in WASM](https://news.example/board/item?id=1)"
            " (example.org) |\n"
            "| --- | --- |\n"
            "|  | 128 points by ada \\| [42 comments](https://news.example/board/item?id=1) |\n"
            "| 2. | [About this board](https://news.example/about) |" in text
        )
        # the page's frame is a table of tables: its last cell is a paragraph of its own
        assert text.endswith("\n\nApplications are open. [FAQ](https://news.example/faq.html)")

    def test_plain_text_format(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/docs_page.html", format="text")["text"]
        assert "```" not in text
        assert "\n#" not in text
        assert "Option\tType\tMeaning\nlevel\tint\tVerbosity, 0 | 1 | 2" in text
        assert "def load(path):\n    with open(path) as f:" in text


class TestCharsets:
    def test_iso_8859_1_declared_in_the_header(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/news_latin1_header.html")["text"]
        assert text.startswith("Title: Zürich: café prices rise\n\n# Zürich: café prices rise")
        # ISO-8859-1 labels mean windows-1252: 0x93/0x94 are curly quotes, 0x97 a dash
        assert "A naïve estimate put a croissant at £3 or 4½ francs; the “guide” was wrong." in text
        assert "Façades along the Limmat — señor Müller said — need ±5% more work." in text
        assert "\ufffd" not in text

    def test_iso_8859_1_declared_in_meta_only(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/news_latin1_meta.html")["text"]
        assert text.startswith("Title: Crème brûlée wins\n\n# Crème brûlée wins")
        assert "chose the crème brûlée over the pâté; «superbe», said Anaïs." in text

    def test_windows_1252_curly_quotes(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/pages/quotes_windows1252.html")["text"]
        assert text.startswith("Title: “Smart” quotes\n\n")
        assert "She said “it’s fine” — it cost €20… or so." in text
        assert "‘Single’ and „low“ quotes, a bullet • and ™." in text

    def test_utf16_with_a_byte_order_mark(self, site: Server, tmp_path: Path) -> None:
        assert fetch(tmp_path, site.url + "/utf16")["text"] == "wide café"

    def test_other_charsets_come_with_a_note(self, site: Server, tmp_path: Path) -> None:
        result = fetch(tmp_path, site.url + "/shift-jis")
        assert result["ok"] is True
        assert result["text"].startswith("[the page's charset (shift_jis) was not decoded")
        assert "ascii part" in result["text"]


class TestHostileHtml:
    @pytest.mark.parametrize("name", ["deep-div", "deep-inline", "deep-table", "deep-list"])
    def test_deep_nesting_is_cut_with_a_note(self, site: Server, tmp_path: Path, name: str) -> None:
        result = fetch(tmp_path, f"{site.url}/hostile/{name}")
        assert result["ok"] is True
        assert "[the page was cut here: its elements nest more than 1024 deep]" in result["text"]
        if name != "deep-div":
            assert result["text"].startswith("top")

    def test_deep_quotes_are_not_indented_without_end(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/hostile/deep-quote")["text"]
        assert max(len(line) for line in text.splitlines()) < 200

    def test_lists_deeper_than_the_frames_read_as_text(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/hostile/shallow-lists")["text"]
        assert "three hundred down" in text
        assert "[elements nested too deep were read as plain text]" in text
        assert max(len(line) for line in text.splitlines()) < 200

    def test_a_five_megabyte_href_is_dropped(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/hostile/huge-href")["text"]
        assert text == "before\n\nbig link\n\nafter"

    def test_a_huge_alt_is_cut(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/hostile/huge-alt")["text"]
        assert text.endswith("after the image")
        assert len(text) < 2000

    def test_broken_markup(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/hostile/broken")["text"]
        assert text.startswith("<<<>>>\n\none\n\ntwo\n\n| a | b |\n| --- | --- |\n| c |  |")
        assert "- stray" in text
        assert "end [31m red" in text  # the escape character is dropped
        assert "\x1b" not in text
        assert "\ufffd \ufffd &bogus; &#; & <3 <3 a < b\n\n  after" in text  # in the <li>
        assert "never" not in text

    @pytest.mark.parametrize("memory_mib", [8, 12, 16, 24, 32])
    def test_a_page_bigger_than_the_memory_limit_is_a_clear_error(
        self, site: Server, tmp_path: Path, memory_mib: int
    ) -> None:
        result = fetch(
            tmp_path, site.url + "/hostile/tiny-paragraphs", memory_bytes=memory_mib << 20
        )
        if result["ok"]:  # parsed in part, with a note
            assert "[the page was cut here:" in result["text"]
            return
        assert result["error_type"] == "execution_error"
        assert result["text"] in (
            "the page (5120000 bytes) does not fit in this tool's memory; a larger "
            "[tools.web_fetch] memory_bytes would hold it",
            "the page does not fit in this tool's memory; a larger "
            "[tools.web_fetch] memory_bytes would hold it",
            f"Tool web_fetch was stopped at its memory limit ({memory_mib} MiB)",
        )

    @pytest.mark.parametrize(
        ("name", "start"),
        [
            ("huge-text", "lorem ipsum dolor lorem"),
            ("huge-code", "x = 1\nx = 1\n"),
            ("many-links", "[x](http://127.0.0.1:"),
            ("all-latin", "caf\u00e9 caf\u00e9"),
        ],
    )
    def test_output_stops_at_two_mebibytes(
        self, site: Server, tmp_path: Path, name: str, start: str
    ) -> None:
        result = fetch(tmp_path, f"{site.url}/hostile/{name}")
        assert result["ok"] is True, result
        assert result["text"].startswith(start)
        assert "[output truncated — original size: 2,0" in result["text"]

    def test_an_element_keeps_its_first_128_attributes(self, site: Server, tmp_path: Path) -> None:
        text = fetch(tmp_path, site.url + "/hostile/late-href")["text"]
        assert text == f"[first]({site.url}/a)\n\nsecond"

    @pytest.mark.parametrize(
        ("name", "text"),
        [
            ("many-attributes", "after"),
            ("repeated-body", "before"),
            ("many-options", "before\n\nafter"),
            ("many-tag-names", "x" * 10_000),
        ],
    )
    def test_pages_lexbor_alone_would_take_quadratic_time_over(
        self, site: Server, tmp_path: Path, name: str, text: str
    ) -> None:
        result = fetch(tmp_path, f"{site.url}/hostile/{name}")
        assert result == {"ok": True, "error_type": None, "text": text}

    @pytest.mark.parametrize("name", ["tiny-elements", "tiny-paragraphs"])
    def test_millions_of_tiny_elements_stay_in_memory(
        self, site: Server, tmp_path: Path, name: str
    ) -> None:
        result = fetch(tmp_path, f"{site.url}/hostile/{name}")
        assert result["ok"] is True, result
        if name == "tiny-paragraphs":
            assert result["text"].startswith("x\n\nx\n\nx")
