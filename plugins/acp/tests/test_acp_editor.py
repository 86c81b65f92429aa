"""``crab acp`` end to end: a real subprocess driven by the ACP SDK's client side (conftest's ``Editor``).

The model is crab.testing's scripted provider (``fake_site``); the tools are the test tools
there (a write that returns its diff, a plan, a long command, a note) and crab-acp's own editor
tools when the client offers files and terminals.
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import RequestError
from acp.schema import ClientCapabilities, FileSystemCapabilities, HttpMcpServer
from crab.testing import make_png

SPEC = acp.PROTOCOL_VERSION


async def start(conn: Any, crab_acp: Any, **caps: bool) -> str:
    await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities(**caps))
    new = await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[])
    return str(new.session_id)


def test_acp_initialize_states_what_crab_does(crab_acp: Any, editor: Any) -> None:
    async def go() -> Any:
        async with crab_acp.connect(crab_acp.script([{"text": "hi"}]), editor) as (conn, _):
            return await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities())

    init = crab_acp.run(go())
    caps = init.agent_capabilities
    assert init.protocol_version == SPEC
    assert caps.load_session is True
    assert caps.prompt_capabilities.image is True  # image blocks become crab.ImageParts
    assert caps.prompt_capabilities.audio is False
    assert caps.prompt_capabilities.embedded_context is True
    assert init.agent_info.name == "crab"
    assert init.auth_methods == []


def test_acp_new_session_streams_the_reply_and_offers_commands(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script([{"thinking": "let me think"}, {"text": "hello "}, {"text": "editor"}])

    async def go() -> Any:
        async with crab_acp.connect(model, editor) as (conn, _):
            await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities())
            new = await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[])
            answer = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("hi")])
            command = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("/hello bob")])
            return new, answer, command

    new, answer, command = crab_acp.run(go())
    assert answer.stop_reason == "end_turn" and command.stop_reason == "end_turn"
    assert new.modes.current_mode_id == "ask"
    assert [m.id for m in new.modes.available_modes] == ["ask", "read-only", "yolo", "plan"]
    model_option = new.config_options[0].root if hasattr(new.config_options[0], "root") else new.config_options[0]
    assert model_option.category == "model" and model_option.current_value == model
    assert "".join(u.content.text for u in editor.of("agent_thought_chunk")) == "let me think"
    assert editor.text() == "hello editorhello bob"
    commands = {c.name: c for c in editor.of("available_commands_update")[0].available_commands}
    assert commands["hello"].input.root.hint == "[NAME]"
    assert "help" in commands and "compact" in commands
    assert not {"quit", "abort", "fork"} & set(commands)  # the editor has its own controls for these
    assert all(session == new.session_id for session, _ in editor.updates)


def test_acp_tool_calls_ask_the_editor_once_always_or_reject(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script(
        [{"tool": "patch_file", "args": {"path": "a.txt"}, "id": "call_a"}],
        [{"tool": "patch_file", "args": {"path": "b.txt"}, "id": "call_b"}],
        [{"tool": "patch_file", "args": {"path": "c.txt"}, "id": "call_c"}],
        [{"tool": "patch_file", "args": {"path": "d.txt"}, "id": "call_d"}],
        [{"text": "done"}],
    )
    editor.answers = ["once", "deny", "always"]

    async def go() -> Any:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            return await conn.prompt(session_id=session, prompt=[acp.text_block("patch four files")])

    answer = crab_acp.run(go())
    assert answer.stop_reason == "end_turn"
    work: Path = crab_acp.work
    assert [(work / f"{n}.txt").exists() for n in "abcd"] == [True, False, True, True]
    # Three questions; "always" spared the fourth. Each names its call and offers crab's three answers.
    assert [q.tool_call_id for q, _ in editor.questions] == ["call_a", "call_b", "call_c"]
    question, options = editor.questions[0]
    assert question.title == "patch_file a.txt" and question.kind == "edit"
    assert question.raw_input == {"path": "a.txt"}
    assert [(o.option_id, o.kind) for o in options] == [
        ("once", "allow_once"),
        ("always", "allow_always"),
        ("deny", "reject_once"),
    ]
    started = {u.tool_call_id: u for u in editor.of("tool_call")}
    assert started["call_a"].kind == "edit" and started["call_a"].status == "pending"
    assert started["call_a"].locations[0].path == str(work / "a.txt")
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert ended["call_b"].status == "failed"
    assert "refused" in ended["call_b"].content[-1].content.text
    diff = ended["call_a"].content[0]
    assert diff.type == "diff" and diff.path == str(work / "a.txt")
    assert diff.new_text == "patched\n" and diff.old_text == ""


def test_acp_plans_and_mode_changes(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script(
        [{"tool": "make_plan", "args": {"steps": ["read", "fix", "test"]}}],
        [{"tool": "patch_file", "args": {"path": "x.txt"}}],
        [{"text": "refused, as you asked"}],
        [{"tool": "patch_file", "args": {"path": "y.txt"}}],
        [{"text": "yolo"}],
    )

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            await conn.set_session_mode(session_id=session, mode_id="read-only")
            await conn.prompt(session_id=session, prompt=[acp.text_block("plan, then patch")])
            await conn.set_session_mode(session_id=session, mode_id="yolo")
            await conn.prompt(session_id=session, prompt=[acp.text_block("patch now")])
            with pytest.raises(RequestError) as refused:
                await conn.set_session_mode(session_id=session, mode_id="sideways")
            assert refused.value.code == -32602

    crab_acp.run(go())
    plan = editor.of("plan")[0]
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read", "in_progress"),
        ("fix", "pending"),
        ("test", "pending"),
    ]
    assert not (crab_acp.work / "x.txt").exists()  # read-only refused it without asking
    assert (crab_acp.work / "y.txt").exists()  # yolo allowed it without asking
    assert editor.questions == []
    failed = [u for u in editor.of("tool_call_update") if u.status == "failed"]
    assert "read-only" in failed[0].content[-1].content.text


def test_acp_plan_mode_refuses_writes_until_a_plan_is_approved_then_runs_as_ask(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script(
        [{"tool": "patch_file", "args": {"path": "early.txt"}}],
        [{"tool": "approve_plan", "args": {}}],
        [{"tool": "patch_file", "args": {"path": "late.txt"}}],
        [{"text": "done"}],
    )
    editor.answers = ["once"]

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            await conn.set_session_mode(session_id=session, mode_id="plan")
            await conn.prompt(session_id=session, prompt=[acp.text_block("plan, then patch")])

    crab_acp.run(go())
    assert not (crab_acp.work / "early.txt").exists()  # plan mode refused it without asking
    failed = [u for u in editor.of("tool_call_update") if u.status == "failed"]
    assert "this session is in plan mode" in failed[0].content[-1].content.text
    assert [u.current_mode_id for u in editor.of("current_mode_update")] == ["ask"]  # approved: the mode follows
    assert (crab_acp.work / "late.txt").exists() and len(editor.questions) == 1  # asked, as in ask mode


def test_acp_cancel_mid_tool_ends_the_process_and_pairs_the_call(crab_acp: Any, editor: Any) -> None:
    marker = f"acp-cancel-{crab_acp.root.name}"
    model = crab_acp.script(
        [{"tool": "long_command", "args": {"marker": marker}, "id": "call_long"}], [{"text": "again"}]
    )
    editor.answers = ["once"]

    async def go() -> tuple[Any, Any]:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[acp.text_block("go")]))
            await crab_acp.wait_for(lambda: crab_acp.processes_with(marker), "the long command to start")
            await conn.cancel(session_id=session)
            cancelled = await turn
            gone = await crab_acp.wait_for(lambda: not crab_acp.processes_with(marker), "the command to end", 30)
            assert gone
            again = await conn.prompt(session_id=session, prompt=[acp.text_block("still there?")])
            return cancelled, again

    cancelled, again = crab_acp.run(go())
    assert cancelled.stop_reason == "cancelled"
    assert again.stop_reason == "end_turn"  # the session stays valid after an abort
    ended = [u for u in editor.of("tool_call_update") if u.tool_call_id == "call_long"]
    assert ended and ended[-1].status == "failed"  # the aborted call still got its one result
    assert "again" in editor.text()


def test_acp_cancel_while_the_question_is_open(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script([{"tool": "patch_file", "args": {"path": "q.txt"}}], [{"text": "ok"}])
    editor.hold_question = True

    async def go() -> Any:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[acp.text_block("go")]))
            await editor.asked.wait()
            await conn.cancel(session_id=session)
            return await turn

    assert crab_acp.run(go()).stop_reason == "cancelled"
    assert not (crab_acp.work / "q.txt").exists()


def test_acp_load_session_replays_its_history_in_a_new_process(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script(
        [{"thinking": "hmm"}, {"text": "I will note it"}, {"tool": "note", "args": {"text": "x"}, "id": "call_note"}],
        [{"text": "noted"}],
    )

    async def first() -> str:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            await conn.prompt(session_id=session, prompt=[acp.text_block("note x")])
            return session

    session = crab_acp.run(first())
    later = type(editor)(crab_acp.root)

    async def second() -> Any:
        async with crab_acp.connect(model, later) as (conn, _):
            await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities())
            loaded = await conn.load_session(cwd=str(crab_acp.work), session_id=session, mcp_servers=[])
            replayed = list(later.updates)
            try:
                await conn.load_session(cwd=str(crab_acp.work), session_id="20200101T000000-000000", mcp_servers=[])
            except RequestError as exc:
                missing = exc
            answer = await conn.prompt(session_id=session, prompt=[acp.text_block("and now?")])
            return loaded, replayed, missing, answer

    loaded, replayed, missing, answer = crab_acp.run(second())
    kinds = [u.session_update for _, u in replayed]
    assert kinds[:5] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ]
    assert replayed[0][1].content.text == "note x"
    assert replayed[3][1].tool_call_id == "call_note" and replayed[3][1].title == "note"
    assert replayed[4][1].status == "completed" and "noted: x" in replayed[4][1].content[0].content.text
    assert "available_commands_update" in kinds
    assert loaded.modes.current_mode_id == "ask"
    assert missing.code == -32602
    assert answer.stop_reason == "end_turn"


def test_acp_file_tools_go_through_the_editor(crab_acp: Any, editor: Any) -> None:
    work: Path = crab_acp.work
    (work / "app.py").write_text("print('on disk')\n")
    unsaved = "def main():\n    return 1\n"
    editor.buffers[str(work / "app.py")] = unsaved  # the editor's buffer differs from the disk
    model = crab_acp.script(
        [{"tool": "read", "args": {"path": "app.py"}, "id": "r1"}],
        [{"tool": "edit", "args": {"path": "app.py", "edits": [{"old": "return 1", "new": "return 2"}]}, "id": "e1"}],
        [{"tool": "write", "args": {"path": "new.txt", "content": "fresh\n"}, "id": "w1"}],
        [{"tool": "write", "args": {"path": "../outside.txt", "content": "no"}, "id": "w2"}],
        [{"text": "done"}],
    )

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp, fs=True)
            await conn.set_session_mode(session_id=session, mode_id="yolo")
            await conn.prompt(session_id=session, prompt=[acp.text_block("fix it")])

    crab_acp.run(go())
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert "return 1" in ended["r1"].content[-1].content.text  # the model saw the unsaved buffer
    assert editor.buffers[str(work / "app.py")] == "def main():\n    return 2\n"
    assert (work / "app.py").read_text() == "print('on disk')\n"  # the editor writes its file, not crab
    diff = ended["e1"].content[0]
    assert diff.type == "diff" and diff.path == str(work / "app.py")
    assert diff.old_text == unsaved and diff.new_text == "def main():\n    return 2\n"
    assert (str(work / "new.txt"), "fresh\n") in editor.writes
    assert ended["w2"].status == "failed" and "outside the workspace" in ended["w2"].content[-1].content.text
    assert not (crab_acp.root / "outside.txt").exists()


@pytest.mark.parametrize("reads", [False, True], ids=["writes-only", "reads-only"])
def test_acp_a_client_offering_one_file_capability_gets_it_and_the_disk_does_the_other(
    crab_acp: Any, editor: Any, reads: bool
) -> None:
    work: Path = crab_acp.work
    (work / "app.py").write_text("def main():\n    return 1\n")
    model = crab_acp.script(
        [{"tool": "read", "args": {"path": "app.py"}, "id": "r1"}],
        [{"tool": "edit", "args": {"path": "app.py", "edits": [{"old": "return 1", "new": "return 2"}]}, "id": "e1"}],
        [{"tool": "write", "args": {"path": "app.py", "content": "def main():\n    return 3\n"}, "id": "w1"}],
        [{"text": "done"}],
    )
    editor.answers = ["once", "once"]  # allowed, in the ask mode

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=reads, write_text_file=not reads))
            await conn.initialize(protocol_version=SPEC, client_capabilities=caps)
            new = await conn.new_session(cwd=str(work), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("fix it")])

    crab_acp.run(go())
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert [ended[c].status for c in ("r1", "e1", "w1")] == ["completed"] * 3, ended
    path = str(work / "app.py")
    if reads:  # read through the editor, changes on disk
        assert editor.reads == [path, path, path] and editor.writes == []
        assert (work / "app.py").read_text() == "def main():\n    return 3\n"
        assert "on disk" in ended["w1"].content[-1].content.text
        return
    # written through the editor (its buffers, its undo), read from disk: the disk keeps its text
    assert editor.reads == []
    assert editor.writes == [(path, "def main():\n    return 2\n"), (path, "def main():\n    return 3\n")]
    assert (work / "app.py").read_text() == "def main():\n    return 1\n"
    assert "in the editor" in ended["e1"].content[-1].content.text


def test_acp_bash_runs_in_an_editor_terminal(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script(
        [{"tool": "bash", "args": {"command": "echo from-terminal; exit 3"}, "id": "b1"}],
        [{"tool": "bash", "args": {"command": "sleep 30", "timeout": 0.5}, "id": "b2"}],
        [{"text": "done"}],
    )
    editor.answers = ["always"]

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp, terminal=True)
            await conn.prompt(session_id=session, prompt=[acp.text_block("run it")])

    crab_acp.run(go())
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert ended["b1"].content[0].type == "terminal" and ended["b1"].content[0].terminal_id == "term-1"
    assert "from-terminal" in ended["b1"].content[-1].content.text
    assert "[exit code 3]" in ended["b1"].content[-1].content.text and ended["b1"].status == "failed"
    assert "timed out" in ended["b2"].content[-1].content.text
    assert ("term-2", "kill") in editor.terminal_log
    assert ("term-1", "release") in editor.terminal_log and ("term-2", "release") in editor.terminal_log
    live = [u for u in editor.of("tool_call_update") if u.status == "in_progress"]
    assert [u.content[0].terminal_id for u in live] == ["term-1", "term-2"]  # shown live, as they ran


def test_acp_prompt_parts_and_model_choice(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script([{"text": "seen"}])
    readme = crab_acp.work / "README.md"

    async def go() -> Any:
        async with crab_acp.connect(model, editor, "--store", "memory") as (conn, _):
            session = await start(conn, crab_acp)
            blocks = [
                acp.text_block("explain"),
                acp.resource_link_block("README.md", readme.as_uri()),
                acp.resource_block(acp.embedded_text_resource((crab_acp.work / "x.py").as_uri(), "x = 1")),
                acp.image_block("aGVsbG8=", "image/png"),
                acp.image_block(base64.b64encode(make_png(2, 2)).decode(), "image/png"),
            ]
            await conn.prompt(session_id=session, prompt=blocks)
            try:
                await conn.set_config_option(config_id="model", session_id=session, value="nosuch/model")
            except RequestError as exc:
                return exc
            return None

    refused = crab_acp.run(go())
    assert refused is not None and refused.code == -32602 and "nosuch" in str(refused.data)
    log = crab_acp.log()
    assert "initialize from" in log


def test_acp_editor_mcp_servers_become_crab_mcp_settings_or_a_note(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script([{"text": "ok"}])

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities())
            server = HttpMcpServer(type="http", name="docs", url="http://127.0.0.1:9/mcp", headers=[])
            await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[server])
            await crab_acp.wait_for(lambda: editor.of("agent_message_chunk"), "the note")

    crab_acp.run(go())
    # crab-mcp is not among this test's plugins: the editor is told its servers did not start.
    assert "crab-mcp is not installed or not enabled" in editor.text()


def test_acp_bad_session_requests_are_errors_not_crashes(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script([{"text": "still alive"}])

    async def go() -> list[int]:
        codes = []
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            for call in (
                conn.new_session(cwd="relative/path", mcp_servers=[]),
                conn.prompt(session_id="no-such-session", prompt=[acp.text_block("x")]),
                conn.set_config_option(config_id="colour", session_id=session, value="red"),
            ):
                try:
                    await call
                except RequestError as exc:
                    codes.append(exc.code)
            answer = await conn.prompt(session_id=session, prompt=[acp.text_block("ok?")])
            assert answer.stop_reason == "end_turn"
        return codes

    assert crab_acp.run(go()) == [-32602, -32602, -32602]
    assert editor.text() == "still alive"


def test_acp_switching_the_model_continues_the_session(crab_acp: Any, editor: Any) -> None:
    first = crab_acp.script([{"text": "from the first model"}])
    second = crab_acp.script([{"text": "from the second model"}])

    async def go() -> Any:
        async with crab_acp.connect(first, editor) as (conn, _):
            session = await start(conn, crab_acp)
            await conn.prompt(session_id=session, prompt=[acp.text_block("one")])
            changed = await conn.set_config_option(config_id="model", session_id=session, value=second)
            await conn.prompt(session_id=session, prompt=[acp.text_block("two")])
            return session, changed

    session, changed = crab_acp.run(go())
    option = changed.config_options[0]
    option = getattr(option, "root", option)
    assert option.current_value == second
    assert {first, second} <= {o.value for o in option.options}  # the provider's models are offered
    assert editor.text() == "from the first modelfrom the second model"
    # One stored session holds both turns: the second model continued it.
    stored = (crab_acp.crab_home / "filestore" / f"{session}.jsonl").read_text()
    assert '"one"' in stored and '"two"' in stored


def test_acp_the_editors_folder_is_a_project_under_crabs_trust_rules(crab_acp: Any, editor: Any) -> None:
    project = crab_acp.work / ".crab"
    project.mkdir()
    (project / "config.toml").write_text('[crab]\npermissions = "yolo"\n')
    model = crab_acp.script([{"text": "ok"}])

    async def mode() -> str:
        async with crab_acp.connect(model, editor) as (conn, _):
            await conn.initialize(protocol_version=SPEC, client_capabilities=crab_acp.capabilities())
            new = await conn.new_session(cwd=str(crab_acp.work), mcp_servers=[])
            return str(new.modes.current_mode_id)

    assert crab_acp.run(mode()) == "ask"  # an untrusted project cannot widen what crab may do
    trusted = subprocess.run(
        [sys.executable, "-m", "crab", "trust", str(crab_acp.work)],
        env=crab_acp.env,
        cwd=crab_acp.work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trusted.returncode == 0, trusted.stderr
    assert crab_acp.run(mode()) == "yolo"  # once the user trusted it, its setting is their word


def test_acp_a_tools_question_with_choices_is_asked_in_the_editor(crab_acp: Any, editor: Any) -> None:
    model = crab_acp.script(
        [{"tool": "ask_user", "args": {"question": "Which one?", "choices": ["red", "blue"]}, "id": "q1"}],
        [{"tool": "ask_user", "args": {"question": "Why?"}, "id": "q2"}],
        [{"text": "thanks"}],
    )
    editor.answers = ["option:blue"]

    async def go() -> None:
        async with crab_acp.connect(model, editor) as (conn, _):
            session = await start(conn, crab_acp)
            await conn.prompt(session_id=session, prompt=[acp.text_block("ask me")])

    crab_acp.run(go())
    ((asked, options),) = editor.questions  # the free-text question has no ACP form: not asked
    assert asked.tool_call_id == "q1" and asked.title == "Which one?"
    assert [o.name for o in options] == ["red", "blue", "Don't answer"]
    ended = {u.tool_call_id: u for u in editor.of("tool_call_update") if u.status in ("completed", "failed")}
    assert ended["q1"].content[-1].content.text == "answer: blue"
    assert ended["q2"].content[-1].content.text == "answer: None"
