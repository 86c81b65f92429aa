"""``crab sessions``: list, show, search, fork, export and migrate the sessions of the configured store;
thin commands over plain functions (which tests call), heavy imports only when one runs."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from crab._contracts.messages import Usage
    from crab._contracts.storage import Entry, SearchHit, SessionInfo, Store

T = TypeVar("T")

app = typer.Typer(help="List, show, search, fork, export and migrate sessions.", rich_markup_mode=None)

EVERYTHING = 1_000_000_000
"""``list_sessions`` limit meaning "all of them" (migrate must not leave any behind)."""

StoreOpt = Annotated[
    str | None, typer.Option("--store", help="Store to use (jsonl, sqlite, memory…); default [crab] store.")
]
PluginsOpt = Annotated[
    str | None, typer.Option("--plugins", help="Comma list of plugins to load (overrides config; '' = none).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    markdown = "markdown"


# --- plain functions ------------------------------------------------------------------------


def _dumps(value: Any, **options: Any) -> str:
    """``json.dumps``, imported on first use (``crab --help`` loads this module).

    A lone surrogate (an undecodable file name a tool returned) stays as its JSON escape
    (``\\udcff``): the text is valid UTF-8 and reads back to the same string.
    """
    import json
    import re

    text = json.dumps(value, **options)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


def _echo(text: str, **options: Any) -> None:
    """``typer.echo`` of text that is valid UTF-8 (lone surrogates shown as U+FFFD)."""
    from crab._values.utf8 import valid_text

    typer.echo(valid_text(text), **options)


def format_time(at: float | None) -> str:
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))


def calls_usage(entries: Iterable[Entry]) -> Usage | None:
    """The summed usage of a session's ``model_call`` events (turns', compactions', plugins'),
    None when none recorded any."""
    from crab._contracts.messages import Usage
    from crab._values.message_json import usage_from_dict

    total: Usage | None = None
    for entry in entries:
        raw = entry.payload.get("usage") if entry.type == "event" else None
        if entry.payload.get("kind") == "model_call" and isinstance(raw, dict):
            total = (total or Usage()) + usage_from_dict(raw)
    return total


def usage_summary(usage: Usage) -> str:
    """``usage 25 in, 15 out, 2000 cache read, 1000 cache write, $0.0050`` (cache counts when any)."""
    cached = ""
    if usage.cache_read_tokens or usage.cache_write_tokens:
        cached = f", {usage.cache_read_tokens} cache read, {usage.cache_write_tokens} cache write"
    cost = f", ${usage.cost:.4f}" if usage.cost is not None else ""
    return f"usage {usage.input_tokens} in, {usage.output_tokens} out{cached}{cost}"


def session_to_dict(info: SessionInfo) -> dict[str, Any]:
    """A session header as JSON (``crab sessions list --json``, ``show --json``)."""
    from crab._values.message_json import usage_to_dict

    return {
        "id": info.id,
        "workspace": info.workspace,
        "title": info.title,
        "created": info.created,
        "updated": info.updated,
        "entry_count": info.entry_count,
        "forked_from": info.forked_from,
        "fork_entry": info.fork_entry,
        "meta": dict(info.meta),
        "usage": usage_to_dict(info.usage) if info.usage is not None else None,
    }


def _json_line(data: Mapping[str, Any]) -> str:
    return _dumps(data, ensure_ascii=False, separators=(",", ":"))


def export_jsonl(
    info: SessionInfo, entries: Iterable[Entry], blobs: Mapping[str, bytes] | None = None
) -> Iterable[str]:
    """Header line, each image once (``{"blob": sha256, "media_type", "data": base64}``), then one
    line per entry: the tape format described in docs/storage.md, with the images it names."""
    import base64

    from crab._values.entries import entry_to_dict, session_header

    entries = list(entries)
    yield _json_line(session_header(info))
    for sha256, media_type in _image_types(entries).items():
        data = (blobs or {}).get(sha256)
        if data is not None:
            yield _json_line({"blob": sha256, "media_type": media_type, "data": base64.b64encode(data).decode()})
    for entry in entries:
        yield _json_line(entry_to_dict(entry))


def _image_types(entries: Iterable[Entry]) -> dict[str, str]:
    """sha256 → media type of every image the entries name, in first-seen order."""
    found: dict[str, str] = {}
    for entry in entries:
        refs = list(entry.payload.get("images") or ())
        details = entry.payload.get("compaction")
        if isinstance(details, Mapping):
            for kept in details.get("kept") or ():
                refs.extend(kept.get("images") or () if isinstance(kept, Mapping) else ())
        for ref in refs:
            if isinstance(ref, Mapping) and isinstance(ref.get("sha256"), str):
                found.setdefault(ref["sha256"], str(ref.get("media_type", "")))
    return found


async def session_blobs(store: Store, entries: Iterable[Entry]) -> dict[str, bytes]:
    """The bytes of every image ``entries`` name that ``store`` holds (none without ``BlobStore``)."""
    from crab._contracts.storage import BlobStore

    if not isinstance(store, BlobStore):
        return {}
    found: dict[str, bytes] = {}
    for sha256 in _image_types(entries):
        data = await store.get_blob(sha256)
        if data is not None:
            found[sha256] = data
    return found


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def _call_text(call: Mapping[str, Any]) -> str:
    arguments = call.get("arguments")
    shown = call.get("raw_arguments") if not arguments else _dumps(arguments, ensure_ascii=False)
    return f"{call.get('name', '?')}({shown or ''})"


def export_markdown(info: SessionInfo, entries: Iterable[Entry]) -> Iterable[str]:
    """A readable transcript: messages, tool calls and results, anchors; events and plugin data left
    out. Crab's own notes to the model (``crab._builtin.tool_view.is_note``) are headed "crab", not "User"."""
    from crab._builtin.tool_view import is_note

    yield f"# Session {info.id}"
    yield ""
    yield f"- workspace: `{info.workspace}`"
    yield f"- created: {format_time(info.created)} UTC"
    if info.title:
        yield f"- title: {info.title}"
    if info.forked_from:
        yield f"- forked from: {info.forked_from} at entry {info.fork_entry}"
    for entry in entries:
        payload = entry.payload
        stamp = format_time(entry.time)
        if entry.type == "message" and payload.get("role") == "user":
            yield ""
            yield f"## {'crab' if is_note(str(payload.get('content', ''))) else 'User'} · {stamp}"
            yield ""
            yield str(payload.get("content", ""))
        elif entry.type == "message":
            stop = payload.get("stop_reason")
            note = f" ({stop})" if stop in ("aborted", "error", "max_tokens") else ""
            yield ""
            yield f"## Assistant · {stamp}{note}"
            content = str(payload.get("content", ""))
            if content:
                yield ""
                yield content
            for call in payload.get("tool_calls", ()) or ():
                if isinstance(call, Mapping):
                    yield ""
                    yield f"- tool call `{call.get('id', '')}`: `{_call_text(call)}`"
            if payload.get("error"):
                yield ""
                yield f"> error: {payload['error']}"
        elif entry.type == "tool_result":
            failed = " (error)" if payload.get("is_error") else ""
            yield ""
            yield f"### Result of {payload.get('name', '?')} `{payload.get('call_id', '')}`{failed}"
            yield ""
            yield _fence(str(payload.get("content", "")))
        elif entry.type == "anchor":
            kind = payload.get("kind", "mark")
            yield ""
            yield f"---\n\n**{kind}: {payload.get('name', '')}** · {stamp}"
            state = payload.get("state")
            if isinstance(state, Mapping) and state:
                yield ""
                yield _fence(_dumps(state, ensure_ascii=False, indent=2))


def entry_summary(entry: Entry, width: int = 100) -> str:
    """One line describing an entry (``crab sessions show``)."""
    from crab._values.entries import entry_text

    payload = entry.payload
    if entry.type == "message":
        head = str(payload.get("role", "?"))
        calls = payload.get("tool_calls") or ()
        if calls:
            head += " → " + ", ".join(str(c.get("name", "?")) for c in calls if isinstance(c, Mapping))
        if payload.get("stop_reason") in ("aborted", "error"):
            head += f" [{payload['stop_reason']}]"
        text = str(payload.get("content", ""))
    elif entry.type == "tool_result":
        head = f"result {payload.get('name', '?')}" + (" [error]" if payload.get("is_error") else "")
        text = str(payload.get("content", ""))
    elif entry.type == "event":
        head = f"event {payload.get('kind', '?')}"
        text = "" if payload.get("kind") == "system_prompt" else entry_text(entry)
    elif entry.type == "anchor":
        head = f"anchor {payload.get('kind', 'mark')} {payload.get('name', '')}"
        text = entry_text(entry)
    else:
        head = f"custom {payload.get('plugin', '?')}"
        text = entry_text(entry)
    images = payload.get("images") if entry.type in ("message", "tool_result") else None
    if isinstance(images, list) and images:
        head += f" [{len(images)} image{'s' if len(images) > 1 else ''}]"
    text = " ".join(text.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return (
        f"{format_time(entry.time)}  {entry.id}  {head}: {text}"
        if text
        else f"{format_time(entry.time)}  {entry.id}  {head}"
    )


def child_tree(infos: Iterable[SessionInfo], session_id: str, limit: int = 200) -> list[tuple[int, SessionInfo]]:
    """The sessions started by ``session_id``'s tool calls (their meta names it as parent), and
    theirs in turn: (depth, session) in display order, oldest first at each level, at most
    ``limit`` of them (a cycle in hand-edited meta cannot loop)."""
    from crab._loop.child import PARENT_SESSION_META

    by_parent: dict[str, list[SessionInfo]] = {}
    for info in infos:
        parent = (info.meta or {}).get(PARENT_SESSION_META)
        if isinstance(parent, str):
            by_parent.setdefault(parent, []).append(info)
    tree: list[tuple[int, SessionInfo]] = []
    seen = {session_id}

    def walk(parent: str, depth: int) -> None:
        for child in sorted(by_parent.get(parent, []), key=lambda info: info.created):
            if child.id in seen or len(tree) >= limit:
                continue
            seen.add(child.id)
            tree.append((depth, child))
            walk(child.id, depth + 1)

    walk(session_id, 1)
    return tree


def child_line(depth: int, info: SessionInfo) -> str:
    """One line of ``crab sessions show``'s tree: the child, what ran there and which call started it."""
    from crab._loop.child import CHILD_LABEL_META, PARENT_CALL_META

    meta = info.meta or {}
    count = "?" if info.entry_count is None else str(info.entry_count)
    label = meta.get(CHILD_LABEL_META) or "child"
    return f"{'  ' * depth}└ {info.id}  {label}  call {meta.get(PARENT_CALL_META, '?')}  {count} entries"


def child_dict(tree: list[tuple[int, SessionInfo]]) -> list[dict[str, Any]]:
    """The tree as nested JSON objects (``show --json``'s ``children``)."""
    from crab._loop.child import CHILD_LABEL_META, PARENT_CALL_META

    root: list[dict[str, Any]] = []
    stack: list[list[dict[str, Any]]] = [root]
    for depth, info in tree:
        del stack[depth:]
        below: list[dict[str, Any]] = []
        node: dict[str, Any] = {
            "id": info.id,
            "label": (info.meta or {}).get(CHILD_LABEL_META),
            "call_id": (info.meta or {}).get(PARENT_CALL_META),
            "entry_count": info.entry_count,
            "children": below,
        }
        stack[-1].append(node)
        stack.append(below)
    return root


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What ``migrate`` did: sessions copied, sessions the target already had, entries copied."""

    copied: list[str]
    skipped: list[str]
    entries: int


async def migrate_sessions(source: Store, target: Store) -> MigrationReport:
    """Copy every session of ``source`` with its entries into ``target``.

    A target with the ``crab.storage.SessionImporter`` capability (both crab store plugins have it) keeps
    ids, parent chains, times and fork origins; any other target gets new sessions appended entry
    by entry (new ids and times). Sessions the target already holds are skipped, so a migration
    that was interrupted can simply be run again. The image blobs the entries name are copied
    first, where both stores keep blobs.
    """
    import inspect

    from crab._contracts.errors import StoreError
    from crab._contracts.storage import BlobStore, SessionImporter

    importer = target.import_session if isinstance(target, SessionImporter) else None
    copied: list[str] = []
    skipped: list[str] = []
    count = 0
    for info in reversed(await source.list_sessions(limit=EVERYTHING)):
        if importer is not None:
            try:
                await target.get_session(info.id)
            except StoreError:
                pass
            else:
                skipped.append(info.id)
                continue
        entries = await source.entries(info.id)
        if isinstance(target, BlobStore):
            for data in (await session_blobs(source, entries)).values():
                await target.put_blob(data)
        if importer is not None:
            result = importer(info, entries)
            if inspect.isawaitable(result):
                await result
        else:
            new = await target.create_session(info.workspace, title=info.title, meta=info.meta)
            for entry in entries:
                await target.append(new.id, entry.type, entry.payload)
        copied.append(info.id)
        count += len(entries)
    return MigrationReport(copied=copied, skipped=skipped, entries=count)


# --- commands -------------------------------------------------------------------------------


def _with_store(store_name: str | None, plugins: str | None, work: Callable[[Store], Awaitable[T]]) -> T:
    """Run ``work`` with the configured (or named) store opened, from a plain sync command."""
    import asyncio

    from crab._assembly.choosing import build_host, open_store
    from crab._config.layers import load_config

    config = load_config()

    async def main() -> T:
        host = build_host(config, plugins)  # None: CRAB_PLUGINS or the config choose, each named as such
        async with open_store(config, store_name, host=host) as store:
            return await work(store)

    return asyncio.run(main())


MEMORY_EMPTY = (
    "the memory store keeps none once crab exits (pip install crab-tape-jsonl or crab-store-sqlite to keep them)"
)
"""Why a listing or ``-c`` finds nothing when no persistent store is installed."""


@app.command("list")
def list_cmd(
    as_json: JsonOpt = False,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="Only sessions of this workspace path.")
    ] = None,
    here: Annotated[bool, typer.Option("--here", help="Only sessions of the current folder.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many, most recent first.")] = 50,
    store: StoreOpt = None,
    plugins: PluginsOpt = None,
) -> None:
    """Sessions, most recently updated first."""
    from crab._loop.child import PARENT_SESSION_META

    if here:
        workspace = str(Path.cwd())

    used: list[str] = []

    async def work(s: Store) -> list[SessionInfo]:
        used.append(s.name)
        return await s.list_sessions(workspace, limit=limit)

    infos = _with_store(store, plugins, work)
    if as_json:
        _echo(_dumps([session_to_dict(i) for i in infos], ensure_ascii=False, indent=2))
        return
    if not infos:
        _echo(f"no sessions: {MEMORY_EMPTY}" if used == ["memory"] else "no sessions")
        return
    for info in infos:
        count = "?" if info.entry_count is None else str(info.entry_count)
        title = f"  {info.title}" if info.title else ""
        fork = f"  (fork of {info.forked_from})" if info.forked_from else ""
        parent = (info.meta or {}).get(PARENT_SESSION_META)
        fork += f"  (child of {parent})" if parent else ""
        when = format_time(info.updated or info.created)
        _echo(f"{info.id}  {when}  {count:>6} entries  {info.workspace}{title}{fork}")


@app.command("show")
def show_cmd(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session id (see `crab sessions list`).")],
    as_json: JsonOpt = False,
    since_handoff: Annotated[bool, typer.Option("--since-handoff", help="Only from the last handoff on.")] = False,
    store: StoreOpt = None,
    plugins: PluginsOpt = None,
) -> None:
    """A session's header and entries, one line each, then the child sessions its tool calls started."""
    from crab._loop.child import PARENT_CALL_META, PARENT_SESSION_META

    async def work(s: Store) -> tuple[SessionInfo, list[Entry], list[tuple[int, SessionInfo]]]:
        from crab._assembly.choosing import require_session

        info = await require_session(s, session_id)
        entries = await s.entries(session_id, since_handoff=since_handoff)
        # Children share their parent's workspace: listing only that one keeps this cheap.
        return info, entries, child_tree(await s.list_sessions(info.workspace or None, limit=EVERYTHING), info.id)

    info, entries, children = _with_store(store, plugins, work)
    if info.usage is None and not since_handoff:
        # A store without totals (jsonl, memory): the usage its model_call events recorded.
        from dataclasses import replace

        info = replace(info, usage=calls_usage(entries))
    if as_json:
        from crab._values.entries import entry_to_dict

        document = {
            "session": session_to_dict(info),
            "entries": [entry_to_dict(e) for e in entries],
            "children": child_dict(children),
        }
        _echo(_dumps(document, ensure_ascii=False, indent=2))
        return
    _echo(f"session {info.id}  workspace {info.workspace}  created {format_time(info.created)}")
    if info.title:
        _echo(f"title {info.title}")
    if info.forked_from:
        _echo(f"forked from {info.forked_from} at entry {info.fork_entry}")
    parent = (info.meta or {}).get(PARENT_SESSION_META)
    if parent:
        _echo(f"child of {parent} (call {(info.meta or {}).get(PARENT_CALL_META, '?')})")
    if info.usage is not None:
        _echo(usage_summary(info.usage))
    for entry in entries:
        _echo(entry_summary(entry))
    if children:
        _echo(f"child sessions ({len(children)}):")
        for depth, child in children:
            _echo(child_line(depth, child))


@app.command("search")
def search_cmd(
    query: Annotated[str, typer.Argument(help="Words that must all appear.")],
    session_id: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    workspace: Annotated[str | None, typer.Option("--workspace", "-w", help="Only this workspace path.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many hits, newest first.")] = 20,
    as_json: JsonOpt = False,
    store: StoreOpt = None,
    plugins: PluginsOpt = None,
) -> None:
    """Entries containing every word of QUERY, newest first."""

    async def work(s: Store) -> list[SearchHit]:
        return await s.search(query, session_id=session_id, workspace=workspace, limit=limit)

    hits = _with_store(store, plugins, work)
    if as_json:
        rows = [
            {"session_id": h.session_id, "entry_id": h.entry_id, "type": h.type, "time": h.time, "excerpt": h.excerpt}
            for h in hits
        ]
        _echo(_dumps(rows, ensure_ascii=False, indent=2))
        return
    if not hits:
        _echo("no matches")
        return
    for hit in hits:
        _echo(f"{hit.session_id}  {hit.entry_id}  {format_time(hit.time)}  {hit.type}: {hit.excerpt}")


@app.command("fork")
def fork_cmd(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session to fork.")],
    at: Annotated[
        str | None, typer.Option("--at", metavar="ENTRY", help="Fork at this entry (default: the last).")
    ] = None,
    store: StoreOpt = None,
    plugins: PluginsOpt = None,
) -> None:
    """A new session holding ID's entries up to ENTRY; prints the new id (resume it with --session)."""

    async def work(s: Store) -> SessionInfo:
        from crab._assembly.choosing import require_session

        await require_session(s, session_id)
        return await s.fork(session_id, at_entry=at)

    info = _with_store(store, plugins, work)
    _echo(info.id)


@app.command("export")
def export_cmd(
    session_id: Annotated[str, typer.Argument(metavar="ID", help="Session to export.")],
    format: Annotated[ExportFormat, typer.Option("--format", "-f", help="jsonl or markdown.")] = ExportFormat.jsonl,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    store: StoreOpt = None,
    plugins: PluginsOpt = None,
) -> None:
    """A session as JSON lines (header, then one entry per line) or as a Markdown transcript."""

    async def work(s: Store) -> tuple[SessionInfo, list[Entry], dict[str, bytes]]:
        from crab._assembly.choosing import require_session

        info = await require_session(s, session_id)
        entries = await s.entries(session_id)
        return info, entries, await session_blobs(s, entries) if format is ExportFormat.jsonl else {}

    info, entries, blobs = _with_store(store, plugins, work)
    lines = export_jsonl(info, entries, blobs) if format is ExportFormat.jsonl else export_markdown(info, entries)
    text = "\n".join(lines) + "\n"
    if output is None:
        _echo(text, nl=False)
    else:
        from crab._values.utf8 import valid_text

        output.write_text(valid_text(text), encoding="utf-8")
        _echo(f"wrote {output}", err=True)


@app.command("migrate")
def migrate_cmd(
    to: Annotated[
        str, typer.Option("--to", metavar="NAME", help="Target store (jsonl, sqlite…; see `crab plugins list`).")
    ],
    source: Annotated[
        str | None, typer.Option("--from", metavar="NAME", help="Source store (default: [crab] store).")
    ] = None,
    plugins: PluginsOpt = None,
) -> None:
    """Copy every session, with ids, parents and times, from the current store into another."""
    import asyncio

    from crab._assembly.choosing import build_host, open_store, store_name
    from crab._config.layers import load_config
    from crab._contracts.errors import UsageError

    config = load_config()
    host = build_host(config, plugins)  # None: CRAB_PLUGINS or the config choose, each named as such
    source_name = store_name(host, config, source)
    if source_name == to:
        raise UsageError(f"the source and target store are both {to!r}; pass --from NAME or --to NAME")

    async def main() -> MigrationReport:
        async with (
            open_store(config, source_name, host=host) as from_store,
            open_store(config, to, host=host) as to_store,
        ):
            return await migrate_sessions(from_store, to_store)

    report = asyncio.run(main())
    _echo(
        f"copied {len(report.copied)} sessions ({report.entries} entries) from {source_name} to {to}"
        + (f"; {len(report.skipped)} already there, skipped" if report.skipped else "")
    )
