"""A fake Telegram Bot API on 127.0.0.1 (real HTTP), an echo provider for the ``crab`` subprocess,
and helpers to drive ``crab serve telegram`` against them.

The server answers getMe, deleteWebhook, getUpdates (long polling with ``offset``; 409 while a
webhook is set, as Telegram does), sendMessage, editMessageText, sendChatAction,
answerCallbackQuery, setMyCommands and getFile (with the file itself on ``GET
/file/bot<token>/<file_path>``, from ``files``) with the JSON shapes recorded in ``fixtures/bot_api.json``
(from https://core.telegram.org/bots/api), and can be told to fail a method (429 with
``retry_after``, a parse error) to test the channel's handling. It reads parameters the ways the
Bot API accepts them ("Making requests": a JSON body, or form fields whose non-string values are
JSON-serialized — what python-telegram-bot sends), typed by each parameter's documented type.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import pytest

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "bot_api.json").read_text())
TOKEN = "7788990011:AAH-fake-Token-that-must-never-leak_x1y2z3"
WAIT = 60.0
BOT_USERNAME = FIXTURES["bot_user"]["username"]
INTEGER_PARAMS = {"chat_id", "message_id", "message_thread_id", "offset", "timeout", "limit"}
"""Parameters the Bot API documents as Integer (``chat_id`` is "Integer or String"; ids here are numbers)."""
JSON_PARAMS = {"reply_markup", "reply_parameters", "allowed_updates", "commands", "entities", "link_preview_options"}
"""Parameters the Bot API documents as objects or arrays: JSON-serialized in a form body."""
BOOLEAN_PARAMS = {"drop_pending_updates", "disable_notification", "protect_content", "show_alert"}


def read_params(content_type: str, body: bytes) -> dict[str, Any]:
    """A request's parameters, as the Bot API reads them from a JSON or a form body."""
    if content_type.startswith("application/json"):
        loaded = json.loads(body or b"{}")
        return loaded if isinstance(loaded, dict) else {}
    params: dict[str, Any] = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
    for key, value in list(params.items()):
        if key in INTEGER_PARAMS:
            params[key] = int(value)
        elif key in JSON_PARAMS:
            params[key] = json.loads(value)
        elif key in BOOLEAN_PARAMS:
            params[key] = value == "true"
    return params


def entities_of(text: str) -> list[dict[str, Any]]:
    """The entities Telegram attaches to a text: a leading bot command, and @mentions
    (offsets and lengths in UTF-16 code units)."""
    import re

    def units(part: str) -> int:
        return len(part.encode("utf-16-le")) // 2

    found = []
    command = re.match(r"/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?", text)
    if command:
        found.append({"offset": 0, "length": units(command.group(0)), "type": "bot_command"})
    for match in re.finditer(r"(?<![\w/])@[A-Za-z0-9_]{5,32}", text):
        found.append({"offset": units(text[: match.start()]), "length": units(match.group(0)), "type": "mention"})
    return found


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    time: float
    message_id: int | None = None


@dataclass
class FakeBotApi:
    """The server's state; ``url`` is its base URL (``base_url`` of the channel)."""

    token: str = TOKEN
    updates: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    refuse_html_containing: str | None = None
    webhook: str = ""
    held: set[str] = field(default_factory=set)
    delivered: list[int] = field(default_factory=list)
    """Update ids a getUpdates answer carried, in order (again when sent again)."""
    late: dict[str, threading.Event] = field(default_factory=dict)
    """Methods answered only once their event is set (``answer_late``): done, but crab learns it late."""
    next_update_id: int = 500
    next_message_id: int = 9000
    lock: threading.Condition = field(default_factory=threading.Condition)
    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    clock_ahead: float = 0.0
    """Seconds Telegram's clock (every ``date`` it gives) is ahead of this host's."""
    """file_id → the bytes ``getFile`` and the file URL serve (a photo's largest size, a document)."""

    # --- what a test does -------------------------------------------------------------------------

    def message(
        self,
        text: str | None,
        *,
        user: int = 1111111,
        chat: int | None = None,
        thread: int | None = None,
        reply_to: dict[str, Any] | None = None,
        caption: str | None = None,
        photo: bool = False,
        document: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A user's message as Telegram sends it (chats other than the user's own are supergroups)."""
        message = copy.deepcopy(FIXTURES["message"])
        message["from"]["id"] = user
        message["chat"] = {
            "id": chat if chat is not None else user,
            "type": "private" if chat in (None, user) else "supergroup",
        }
        message.pop("text")
        if text is not None:
            message["text"] = text
            if entities_of(text):
                message["entities"] = entities_of(text)
        if caption is not None:
            message["caption"] = caption
            if entities_of(caption):
                message["caption_entities"] = entities_of(caption)
        if photo:
            message["photo"] = copy.deepcopy(FIXTURES["photo"])
        if document is not None:
            message["document"] = {**FIXTURES["document"], **document}
        message["date"] = int(time.time() + self.clock_ahead)
        if thread is not None:
            message["message_thread_id"] = thread
            message["is_topic_message"] = True
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        return message

    def say(self, text: str | None, **how: Any) -> int:
        """A user's message arrives; returns its update_id (which is also its message_id)."""
        message = self.message(text, **how)
        with self.lock:
            update_id = self.next_update_id
            message["message_id"] = update_id
        return self.arrive({"message": message})

    def edit(self, message_id: int, text: str, **how: Any) -> int:
        """The user edits their message ``message_id`` (an ``edited_message`` update)."""
        message = self.message(text, **how)
        message["message_id"] = message_id
        message["edit_date"] = int(time.time())
        return self.arrive({"edited_message": message})

    def arrive(self, update: dict[str, Any]) -> int:
        """An update (anything after ``update_id``) arrives; returns its update_id."""
        with self.lock:
            update_id = self.next_update_id
            self.next_update_id += 1
            self.updates.append({"update_id": update_id, **update})
            self.lock.notify_all()
        return update_id

    def press(
        self, data: str, *, user: int = 1111111, chat: int = 1111111, message_id: int = 1, chat_type: str = ""
    ) -> int:
        """A user presses an inline button carrying ``data``."""
        query = copy.deepcopy(FIXTURES["callback_query"])
        query["from"]["id"] = user
        query["data"] = data
        kind = chat_type or ("private" if chat > 0 else "supergroup")
        query["message"] = {
            "message_id": message_id,
            "from": FIXTURES["bot_user"],
            "chat": {"id": chat, "type": kind},
            "date": int(time.time() + self.clock_ahead),
            "text": "?",
        }
        return self.arrive({"callback_query": query})

    def fail(self, method: str, answer: dict[str, Any], times: int = 1) -> None:
        """The next ``times`` calls of ``method`` get ``answer`` (its ``error_code`` the status), or
        the page ``answer["html"]`` when it has one (served as text/html)."""
        with self.lock:
            self.failures.setdefault(method, []).extend([answer] * times)

    def sent(self, chat: int | None = None, method: str = "sendMessage") -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method and (chat is None or c.params.get("chat_id") == chat)]

    def wait_for(self, what: str, check: Callable[[], Any], proc: subprocess.Popen[str] | None = None) -> Any:
        deadline = time.monotonic() + WAIT
        while True:
            value = check()
            if value:
                return value
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"crab ended ({proc.returncode}) before {what}: {proc.stderr.read()}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; calls: {[c.method for c in self.calls]}")
            time.sleep(0.02)

    def texts(self, chat: int) -> list[str]:
        """What the chat shows: each message's latest text (edits applied), in order sent."""
        shown: dict[int, str] = {}
        with self.lock:
            for c in self.calls:
                ok = c.message_id is not None and c.params.get("chat_id") == chat
                if ok and (c.method == "sendMessage" or c.message_id in shown):
                    shown[int(c.message_id or 0)] = str(c.params.get("text"))
        return list(shown.values())

    # --- what the server does -----------------------------------------------------------------------

    def hold(self, method: str) -> None:
        """Requests of ``method`` get no answer (and count as never arrived) until ``release``."""
        with self.lock:
            self.held.add(method)

    def answer_late(self, method: str) -> threading.Event:
        """Requests of ``method`` are carried out at once but answered only when the returned
        event is set (a slow link back to crab); other requests go on meanwhile."""
        with self.lock:
            event = self.late[method] = threading.Event()
        return event

    def release(self, method: str) -> None:
        with self.lock:
            self.held.discard(method)
            self.lock.notify_all()

    def answer(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        call = Call(method, params, time.monotonic())
        with self.lock:
            if method in self.held:
                self.calls.append(Call(f"held:{method}", params, time.monotonic()))
                while method in self.held:
                    self.lock.wait()
                return 502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}
            self.calls.append(call)
            queued = self.failures.get(method)
            if queued:
                failure = queued.pop(0)
                return int(failure["error_code"]), failure
        if method == "getMe":
            return 200, {"ok": True, "result": FIXTURES["bot_user"]}
        if method == "deleteWebhook":
            with self.lock:
                self.webhook = ""
            return 200, FIXTURES["ok_true"]
        if method == "getUpdates":
            if self.webhook:
                return 409, FIXTURES["conflict_webhook"]
            return 200, {"ok": True, "result": self._updates(params)}
        if method == "getFile":
            file_id = str(params.get("file_id") or "")
            if file_id not in self.files:
                return 400, {"ok": False, "error_code": 400, "description": "Bad Request: invalid file_id"}
            found = dict(FIXTURES["file"], file_id=file_id, file_size=len(self.files[file_id]))
            found["file_path"] = f"files/{file_id}"
            return 200, {"ok": True, "result": found}
        if method in ("sendChatAction", "answerCallbackQuery", "setMyCommands"):
            return 200, FIXTURES["ok_true"]
        if method in ("sendMessage", "editMessageText"):
            text = str(params.get("text") or "")
            if not text or len(text.encode("utf-16-le")) // 2 > 4096:
                return 400, {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"}
            marker = self.refuse_html_containing
            if marker and params.get("parse_mode") and marker in text:
                return 400, FIXTURES["cannot_parse"]
            with self.lock:
                if method == "sendMessage":
                    self.next_message_id += 1
                message_id = params.get("message_id") or self.next_message_id
                call.message_id = message_id
            result = {
                "message_id": message_id,
                "from": FIXTURES["bot_user"],
                "chat": {"id": params.get("chat_id"), "type": "private"},
                "date": int(time.time() + self.clock_ahead),
                "text": text,
            }
            return 200, {"ok": True, "result": result}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found: method not found"}

    def _updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        deadline = time.monotonic() + min(float(params.get("timeout") or 0), 0.5)
        with self.lock:
            while True:
                # as Telegram does: an offset confirms every update before it
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
                if self.updates or time.monotonic() >= deadline:
                    self.delivered.extend(u["update_id"] for u in self.updates)
                    return list(self.updates)
                self.lock.wait(max(0.0, deadline - time.monotonic()))


def _handler(api: FakeBotApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = read_params(self.headers.get("Content-Type") or "", self.rfile.read(length))
            _, _, rest = self.path.partition("/bot")
            token, _, method = rest.partition("/")
            if token != api.token:
                status, answer = 401, FIXTURES["unauthorized"]
            else:
                status, answer = api.answer(method, body)
                late = api.late.get(method)
                if late is not None:
                    late.wait(60)
            # A failure may be an HTML page, as a proxy or Telegram's front answers a 502 with.
            html = answer.get("html") if isinstance(answer.get("html"), str) else None
            data = html.encode() if html is not None else json.dumps(answer).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if html is not None else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up on a long poll (crab stopping)

        def do_GET(self) -> None:
            _, _, rest = unquote(self.path).partition("/file/bot")  # the client quotes the token's ':'
            token, _, path = rest.partition("/")
            file_id = path.removeprefix("files/")
            api.calls.append(Call("download", {"file_id": file_id}, time.monotonic()))
            data = api.files.get(file_id) if token == api.token and path.startswith("files/") else None
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def bot_api() -> Iterator[FakeBotApi]:
    api = FakeBotApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield api
    server.shutdown()
    server.server_close()


ECHO_PLUGIN = '''
"""An echo provider for crab-telegram's tests, a write tool ``jot``, ``pick``, which asks the
user a ``crab.Question`` through ``ctx.question`` (as crab-ask's ``ask_user`` does), and ``plan``,
which emits ``crab.events.PlanEvent``s (as crab-todo's ``todo`` does)."""
import json, os
from pathlib import Path

import crab
from crab.testing import ScriptedProvider

LONG = "\\n\\n".join(
    [f"Paragraph {i}: " + "words and more words " * 12 for i in range(30)]
    + ["```python\\n" + "\\n".join(f"print({i})" for i in range(400)) + "\\n```"]
    + [f"Tail {i}: " + "the end is near " * 10 for i in range(10)]
)


def reply(request):
    log = os.environ.get("TG_TEST_REQUEST_LOG")
    if log:
        with open(log, "a") as handle:
            sent = [crab.messages.message_to_dict(m) for m in request.messages]
            seen = [i.sha256 for m in request.messages for i in getattr(m, "images", ()) if i.data]
            handle.write(json.dumps({"system": request.system, "messages": sent, "image_bytes": seen}) + "\\n")
    last = request.messages[-1]
    users = [m for m in request.messages if m.role == "user"]
    text = users[-1].content if isinstance(users[-1].content, str) else str(users[-1].content)
    if last.role == "tool":
        return [{"text": f"jot said: {last.content}"}]
    if text.startswith("long"):
        return [{"text": LONG}]
    if text.startswith("slow"):
        return [step for i in range(5) for step in ({"delay": 0.5}, {"text": f"part {i}. "})]
    if text.startswith("stall"):  # a turn still running when a test kills crab
        return [{"delay": 30.0}, {"text": f"stalled: {text}"}]
    if text.startswith("wait"):
        return [{"delay": 2.0}, {"text": f"waited: {text}"}]
    if text.startswith("jot"):
        return [{"tool": "jot", "args": {"note": text[4:]}}]
    if text.startswith("plan"):
        return [{"tool": "plan", "args": {"steps": text[5:].split(", ")}}]
    if text.startswith("pick"):
        return [{"tool": "pick", "args": {"question": "Which database?", "choices": ["SQLite", "PostgreSQL"]}}]
    if text.startswith("wonder"):
        return [{"tool": "pick", "args": {"question": "What should the app be called?", "choices": []}}]
    if text.startswith("broken"):
        return [{"text": "**BREAK** this"}]
    return [{"text": f"echo: {text} ({len(users)} user messages)"}]


class Echo:
    name = "echo"

    def __init__(self):
        self.engine = ScriptedProvider(reply)

    def models(self):
        return [crab.ModelInfo(id="echo", provider="echo")]

    def check(self, model):
        return None

    def stream(self, request):
        return self.engine.stream(request)


@crab.tool(permission="write")
def jot(note: str) -> str:
    """Write a note."""
    return f"noted {note}"


@crab.hookimpl
def crab_providers(config):
    return [Echo()]


@crab.tool
async def pick(question: str, choices: list[str], ctx: crab.ToolContext) -> str:
    """Ask the user."""
    if ctx.question is None:
        return "nobody can answer"
    answer = await ctx.question(crab.Question(question, tuple(choices), free_text=not choices))
    return f"picked {answer}" if answer is not None else "no answer"


@crab.tool
async def plan(steps: list[str], ctx: crab.ToolContext) -> str:
    """Work through a checklist, telling the user each change (as crab-todo's todo does)."""
    import asyncio

    status = ["pending"] * len(steps)

    def show():
        items = tuple(crab.events.PlanItem(step, s) for step, s in zip(steps, status))
        ctx.emit(crab.events.PlanEvent(ctx.session_id, items))

    show()
    for i in range(len(steps)):
        for now in ("in_progress", "done"):
            await asyncio.sleep(0.05)
            status[i] = now
            show()
    return f"planned {len(steps)} steps"


@crab.hookimpl
def crab_tools(config):
    return [jot, pick, plan]


class Courier:
    """Delivers through the telegram channel without importing it (as a scheduler would)."""

    name = "courier"
    local = False

    async def run(self, agent):
        import asyncio

        results = []
        for address, text in [("1111111", "standup in **5** minutes"), ("6666666", "to a stranger"), ("x", "bad")]:
            for _ in range(400):
                try:
                    await agent.deliver("telegram", address, text)
                    results.append("ok")
                    break
                except crab.ChannelError as exc:
                    if "not connected" in str(exc) or "not running" in str(exc):
                        await asyncio.sleep(0.05)
                        continue
                    results.append(str(exc))
                    break
        Path(os.environ["TG_TEST_COURIER"]).write_text(json.dumps(results))
        await asyncio.sleep(3600)


@crab.hookimpl
def crab_channels(config):
    return [Courier()]
'''


STORE_PLUGIN = '''
"""A session store in one JSON-lines file, for crab-telegram's restart tests (only core's
memory store is installed beside the plugin; this one survives kill -9: each entry is written
and flushed before ``append`` returns)."""
import json, os, time
from dataclasses import asdict, replace

import crab


class FileStore:
    name = "tg-file"

    def __init__(self):
        self.path = os.environ["TG_TEST_STORE"]
        self.sessions, self.rows = {}, {}

    async def open(self):
        if not os.path.exists(self.path):
            return
        for line in open(self.path, encoding="utf-8"):
            row = json.loads(line)
            if row["kind"] == "session":
                self.sessions[row["id"]] = crab.storage.SessionInfo(**row["info"])
                self.rows[row["id"]] = []
            else:
                self.rows[row["session_id"]].append(crab.storage.Entry(**row["entry"]))

    async def close(self):
        return None

    def _write(self, row):
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\\n")
            handle.flush()
            os.fsync(handle.fileno())

    async def create_session(self, workspace, *, title=None, meta=None):
        info = crab.storage.SessionInfo(
            id=crab.storage.new_session_id(),
            workspace=workspace,
            created=time.time(),
            title=title,
            meta=dict(meta or {}),
        )
        self.sessions[info.id], self.rows[info.id] = info, []
        self._write({"kind": "session", "id": info.id, "info": asdict(info)})
        return info

    def _entries(self, session_id):
        if session_id not in self.rows:
            raise crab.StoreError(f"no session {session_id!r}")
        return self.rows[session_id]

    async def get_session(self, session_id):
        entries = self._entries(session_id)
        info = self.sessions[session_id]
        return replace(info, updated=entries[-1].time if entries else info.created, entry_count=len(entries))

    async def list_sessions(self, workspace=None, limit=50):
        infos = [await self.get_session(s) for s in self.sessions]
        infos = [i for i in infos if workspace is None or i.workspace == workspace]
        return sorted(infos, key=lambda i: (i.updated or i.created, i.id), reverse=True)[:limit]

    async def append(self, session_id, type, payload):
        entries = self._entries(session_id)
        entry = crab.storage.Entry(
            id=crab.storage.new_entry_id(),
            session_id=session_id,
            parent_id=entries[-1].id if entries else None,
            type=type,
            time=time.time(),
            payload=dict(payload),
        )
        entries.append(entry)
        self._write({"kind": "entry", "session_id": session_id, "entry": asdict(entry)})
        return entry

    async def entries(self, session_id, *, since_handoff=False):
        entries = self._entries(session_id)
        if since_handoff:
            marks = [i for i, e in enumerate(entries) if e.type == "anchor" and e.payload.get("kind") == "handoff"]
            return entries[marks[-1]:] if marks else list(entries)
        return list(entries)

    async def search(self, query, *, session_id=None, workspace=None, limit=20):
        return []

    async def fork(self, session_id, at_entry=None):
        raise crab.StoreError("the test store does not fork")


@crab.hookimpl
def crab_stores(config):
    return [FileStore()]
'''


@pytest.fixture
def tg_env(tmp_path: Path, bot_api: FakeBotApi) -> dict[str, str]:
    """Environment for a ``crab`` subprocess: the echo plugin, the fake server, a fresh CRAB_HOME."""
    site = tmp_path / "site"
    site.mkdir()
    for name, source in (("tg_echo", ECHO_PLUGIN), ("tg_store", STORE_PLUGIN)):
        (site / f"crab_{name}.py").write_text(source)
        dist = site / f"crab_{name}-0.0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: crab-{name.replace('_', '-')}\nVersion: 0.0.1\n")
        (dist / "entry_points.txt").write_text(f"[crab]\n{name.replace('_', '-')} = crab_{name}\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[plugins.telegram]\nbase_url = "{bot_api.url}"\nallow_from = ["1111111", "2222222"]\npoll_timeout = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TELEGRAM_"))}
    env.update(
        PYTHONPATH=str(site),
        CRAB_HOME=str(home),
        CRAB_PLUGINS="telegram,tg-echo",  # tg-store only where a test enables it (restarts)
        TELEGRAM_BOT_TOKEN=TOKEN,
        TG_TEST_REQUEST_LOG=str(home / "requests.jsonl"),
        TG_TEST_STORE=str(home / "sessions.jsonl"),
    )
    return env


@dataclass
class Served:
    proc: subprocess.Popen[str]
    stdout: str = ""
    stderr: str = ""

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.stdout, self.stderr = self.proc.communicate(timeout=WAIT)
        return self.proc.returncode


@pytest.fixture
def serve(tg_env: dict[str, str], tmp_path: Path, bot_api: FakeBotApi) -> Iterator[Callable[..., Served]]:
    """``serve(*extra_args)`` starts ``crab serve telegram`` and waits until it polls."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    started: list[Served] = []

    def start(
        *extra: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ("serve", "telegram")
    ) -> Served:
        polls = len(bot_api.sent(method="getUpdates"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "crab", *command, "-m", "echo/echo", *extra],
            env=env or tg_env,
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        served = Served(proc)
        started.append(served)
        bot_api.wait_for("the first poll", lambda: len(bot_api.sent(method="getUpdates")) > polls, proc)
        return served

    yield start
    for served in started:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.communicate()


@pytest.fixture
def bot_token() -> str:
    return TOKEN
