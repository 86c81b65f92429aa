"""Turning a downloaded body into text for the model: HTML to Markdown, other text decoded.

HTML goes through beautifulsoup4 (``html.parser``, no C extension needed) and markdownify. Before
conversion the noise is dropped: scripts, styles, navigation, forms, and elements the page hides
from its readers (``hidden``, ``aria-hidden``, ``display:none``), which are a favourite place to
put instructions for an AI that no human would see. When the page has one ``<main>`` (or else one
``<article>``), only that is converted. Links and images get absolute URLs, so the model can
fetch what a page links to; ``data:`` images are dropped. Elements nested deeper than
``MAX_DEPTH`` are kept as their plain text. A declared charset that is no text encoding
(``rot13``, ``zlib``, ``base64``…) counts as unknown. bs4 and markdownify are imported inside the
functions.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

NOISE_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "aside",
    "footer",
    "form",
    "button",
    "input",
    "select",
    "textarea",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "svg",
    "canvas",
    "link",
    "meta",
    "dialog",
)
"""Elements whose text is never the page's content."""

NOISE_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "menu", "menubar", "dialog", "alert"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_BLANK_LINES = re.compile(r"\n[ \t]*(\n[ \t]*){2,}")
_LANGUAGE_CLASS = re.compile(r"^(?:language|lang|highlight-source|sourceCode)-?([\w+#.-]+)$")
MAX_DEPTH = 100
"""Levels of elements converted as structure; deeper ones become plain text. markdownify recurses
about three Python frames a level, so 100,000 nested tags would exceed the recursion limit."""


@dataclass(frozen=True, slots=True)
class Page:
    """A page as text: ``kind`` is ``markdown`` (from HTML) or ``text``; ``title`` may be empty."""

    text: str
    kind: str
    title: str = ""


def text_charset(charset: str | None) -> str | None:
    """``charset`` when Python knows it as a text encoding, else None."""
    if not charset:
        return None
    try:
        # LookupError for codecs that are no text encoding (zlib, rot13, base64, hex); UnicodeError
        # for ones that take no error handler (idna, undefined). b"" would skip the codec.
        b"a".decode(charset, errors="ignore")
    except (LookupError, UnicodeError):
        return None
    return charset


def decode(body: bytes, charset: str | None) -> str:
    """``body`` as text: the declared charset when Python knows it, else UTF-8, else Windows-1252."""
    charset = text_charset(charset)
    if charset:
        try:
            return body.decode(charset, errors="replace")
        except UnicodeError:
            pass  # idna, punycode and the like refuse errors="replace" or these bytes: as if undeclared
    if body.startswith(codecs.BOM_UTF8):
        return body[3:].decode("utf-8", errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(body) - 3:  # the download cap cut a character in two
            return body[: exc.start].decode("utf-8")
        return body.decode("cp1252", errors="replace")


def _language(el: Any) -> str:
    for node in (el, el.find("code")):
        if node is None:
            continue
        for cls in node.get("class") or ():
            match = _LANGUAGE_CLASS.match(cls)
            if match:
                return str(match.group(1))
    return ""


def _hidden(el: Any) -> bool:
    attrs = el.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    if str(attrs.get("role", "")).lower() in NOISE_ROLES:
        return True
    return bool(_HIDDEN_STYLE.search(str(attrs.get("style", ""))))


def absolute(base_url: str, link: str) -> str | None:
    """``link`` made absolute against ``base_url``; None for script and ``data:`` links, and for
    ones that are no URL at all (``http://[::1``), which urljoin refuses with ValueError."""
    from urllib.parse import urljoin

    link = link.strip()
    if not link or link.lower().startswith(("javascript:", "data:", "vbscript:")):
        return None
    try:
        return urljoin(base_url, link)
    except ValueError:
        return None


def _converter(base_url: str) -> Any:
    from markdownify import MarkdownConverter

    # markdownify finds convert_<tag> methods by name, so its type hints do not declare them
    plain: Any = MarkdownConverter

    class WebConverter(MarkdownConverter):
        """markdownify with absolute links and no inline data: images."""

        def convert_a(self, el: Any, text: str, parent_tags: set[str]) -> str:
            href = el.get("href")
            if href:
                target = absolute(base_url, str(href))
                if target is None:
                    del el["href"]
                else:
                    el["href"] = target
            return str(plain.convert_a(self, el, text, parent_tags))

        def convert_img(self, el: Any, text: str, parent_tags: set[str]) -> str:
            src = absolute(base_url, str(el.get("src") or ""))
            if src is None:
                alt = (el.get("alt") or "").strip()
                return f"[image: {alt}]" if alt else ""
            el["src"] = src
            return str(plain.convert_img(self, el, text, parent_tags))

    return WebConverter(
        heading_style="ATX",
        bullets="-",
        escape_underscores=False,
        escape_asterisks=False,
        code_language_callback=_language,
        strip_document="strip",
    )


def html_to_markdown(body: bytes | str, charset: str | None = None, base_url: str = "") -> Page:
    """Readable Markdown of an HTML page (see the module docstring for what is dropped)."""
    from bs4 import BeautifulSoup

    if isinstance(body, bytes):
        soup = BeautifulSoup(body, "html.parser", from_encoding=text_charset(charset))
    else:
        soup = BeautifulSoup(body, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
    for tag in soup(NOISE_TAGS):
        tag.decompose()
    for tag in soup.find_all(_hidden):
        if not tag.decomposed:
            tag.decompose()
    if title_tag is not None and not title_tag.decomposed:
        title_tag.decompose()
    root: Any = soup
    for name in ("main", "article"):
        found = soup.find_all(name)
        if len(found) == 1:
            root = found[0]
            break
    flatten_below(root, MAX_DEPTH)
    text = _converter(base_url).convert_soup(root)
    return Page(tidy(text), "markdown", title)


def flatten_below(root: Any, depth: int) -> None:
    """Replace what each element ``depth`` levels below ``root`` holds with its plain text.

    Runs after the noise is dropped, so hidden text stays hidden; walks level by level, never
    recursing, since the tree may be as deep as the page likes.
    """
    from bs4 import Tag

    level = [root]
    for _ in range(depth):
        level = [child for tag in level for child in tag.children if isinstance(child, Tag)]
        if not level:
            return
    for tag in level:
        if any(isinstance(child, Tag) for child in tag.children):
            text = tag.get_text()
            tag.clear()
            tag.append(text)


def tidy(text: str) -> str:
    """Trailing spaces off, no more than one blank line in a row."""
    lines = [line.rstrip() for line in text.splitlines()]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip("\n")


def to_page(body: bytes, charset: str | None, is_html: bool, base_url: str) -> Page:
    """The body as a ``Page``: Markdown for HTML, decoded text otherwise."""
    if is_html:
        return html_to_markdown(body, charset, base_url)
    return Page(decode(body, charset).replace("\r\n", "\n"), "text")
