"""What crab shows of a server's answers: diagnostics (errors first, bounded), locations with their
line's text, hover text, symbol trees; and positions between crab's 1-based line and column (in
characters) and LSP's 0-based line and UTF-16 offset."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}
MAX_LOCATIONS = 50
MAX_SYMBOLS = 300
MAX_HOVER = 4000
SYMBOL_KINDS = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property",
    8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable",
    14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array", 19: "object", 20: "key",
    21: "null", 22: "enum member", 23: "struct", 24: "event", 25: "operator", 26: "type parameter",
}  # fmt: skip


def to_lsp(text: str, line: int, column: int) -> dict[str, int]:
    """LSP's position of crab's 1-based ``line`` and ``column`` (characters) in ``text``."""
    lines = text.split("\n")
    row = max(0, min(line - 1, len(lines) - 1)) if lines else 0
    prefix = lines[row][: max(0, column - 1)] if lines else ""
    return {"line": row, "character": len(prefix.encode("utf-16-le")) // 2}


def path_of(uri: str) -> Path | None:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def shown_path(uri: str, workspace: Path) -> str:
    path = path_of(uri)
    if path is None:
        return uri
    try:
        return path.relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(path)


def _severity(diagnostic: dict[str, Any]) -> int:
    value = diagnostic.get("severity")
    return value if isinstance(value, int) and value in SEVERITIES else 1


def _start(item: dict[str, Any]) -> tuple[int, int]:
    start = (item.get("range") or {}).get("start") or {}
    return int(start.get("line", 0)) + 1, int(start.get("character", 0)) + 1


def diagnostics(shown: str, found: Sequence[dict[str, Any]], limit: int, source: str) -> str:
    """One line per diagnostic, errors first (then by position), at most ``limit``; "" for none."""
    if not found:
        return ""
    ordered = sorted(found, key=lambda d: (_severity(d), _start(d)))
    counts: dict[str, int] = {}
    for d in ordered:
        counts[SEVERITIES[_severity(d)]] = counts.get(SEVERITIES[_severity(d)], 0) + 1
    summary = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in counts.items())
    lines = [f"{source} diagnostics for {shown} ({summary}):"]
    for d in ordered[:limit]:
        line, column = _start(d)
        message = " ".join(str(d.get("message", "")).split())[:500]
        code = d.get("code")
        origin = " ".join(str(x) for x in (d.get("source"), code) if x not in (None, ""))
        lines.append(
            f"{shown}:{line}:{column}: {SEVERITIES[_severity(d)]}: {message}" + (f" [{origin}]" if origin else "")
        )
    if len(ordered) > limit:
        lines.append(f"… {len(ordered) - limit} more not shown")
    return "\n".join(lines)


def _line_text(path: Path | None, line: int, cache: dict[Path, list[str]]) -> str:
    if path is None:
        return ""
    if path not in cache:
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                cache[path] = handle.read(2_000_000).split("\n")
        except OSError:
            cache[path] = []
    rows = cache[path]
    return rows[line - 1].strip()[:200] if 0 < line <= len(rows) else ""


def locations(answer: Any, workspace: Path) -> list[str]:
    """``path:line:column: text`` for a definition or references answer (Location, a list of
    them, or LocationLinks), at most ``MAX_LOCATIONS`` plus a line saying how many more."""
    items = answer if isinstance(answer, list) else [answer] if isinstance(answer, dict) else []
    cache: dict[Path, list[str]] = {}
    out: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("uri") or item.get("targetUri")
        where = item.get("range") or item.get("targetSelectionRange") or item.get("targetRange")
        if not isinstance(uri, str) or not isinstance(where, dict):
            continue
        line, column = _start({"range": where})
        text = _line_text(path_of(uri), line, cache)
        out.append(f"{shown_path(uri, workspace)}:{line}:{column}" + (f": {text}" if text else ""))
    if len(out) > MAX_LOCATIONS:
        out = [*out[:MAX_LOCATIONS], f"… {len(out) - MAX_LOCATIONS} more not shown"]
    return out


def hover(answer: Any) -> str:
    """The text of a hover answer (MarkupContent, MarkedString or a list of them)."""
    contents = answer.get("contents") if isinstance(answer, dict) else None
    parts: list[str] = []
    for item in contents if isinstance(contents, list) else [contents]:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("value"), str):
            language = item.get("language")
            parts.append(f"```{language}\n{item['value']}\n```" if language else item["value"])
    text = "\n\n".join(p.strip() for p in parts if p.strip())
    return text if len(text) <= MAX_HOVER else text[:MAX_HOVER] + f"… [{len(text) - MAX_HOVER} more characters cut]"


def symbols(answer: Any) -> list[str]:
    """``kind name (line N)`` per symbol, children indented (DocumentSymbol trees), or flat
    (SymbolInformation), at most ``MAX_SYMBOLS``."""
    out: list[str] = []

    def walk(items: Any, depth: int) -> None:
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or len(out) > MAX_SYMBOLS:
                continue
            where = item.get("selectionRange") or item.get("range") or (item.get("location") or {}).get("range") or {}
            line, _ = _start({"range": where})
            kind = SYMBOL_KINDS.get(item.get("kind"), "symbol")  # type: ignore[arg-type]
            detail = f" {item['detail']}" if isinstance(item.get("detail"), str) and item["detail"] else ""
            out.append(f"{'  ' * depth}{kind} {item.get('name')}{detail[:80]} (line {line})")
            walk(item.get("children"), depth + 1)

    walk(answer, 0)
    if len(out) > MAX_SYMBOLS:
        out = [*out[:MAX_SYMBOLS], "… more not shown"]
    return out
