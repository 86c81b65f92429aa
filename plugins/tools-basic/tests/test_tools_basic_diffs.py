"""edit and write results carry a ``FileDiff`` of what they changed, and their previews compute the
same diff from the arguments without writing anything (crab_tools_basic.diffs)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crab import ToolContext, ToolResult
from crab.tools import preview_diffs
from crab_tools_basic.diffs import MAX_DIFF_LINES, MAX_WHOLE_CHARS, file_diff
from crab_tools_basic.registry import build_tools


def preview(name: str, ctx: ToolContext, settings: dict[str, Any], **arguments: Any) -> tuple[Any, ...]:
    tools = {t.name: t for t in build_tools(settings)}
    return asyncio.run(preview_diffs(tools[name], arguments, ctx))


def test_an_edit_result_carries_its_unified_diff(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    call("read", path="app.py")
    result = call("edit", path="app.py", edits=[{"old": "b = 2", "new": "b = 20\nbb = 21"}])
    assert not result.is_error, result.content
    (diff,) = result.diffs
    assert diff.path == "app.py"
    assert diff.unified.startswith("--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,4 @@\n")
    assert " a = 1\n-b = 2\n+b = 20\n+bb = 21\n c = 3\n" in diff.unified
    assert (diff.added, diff.removed) == (2, 1)
    assert (diff.before, diff.after) == ("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nbb = 21\nc = 3\n")


def test_a_write_that_creates_a_file_diffs_from_nothing(workspace: Path, call: Callable[..., ToolResult]) -> None:
    result = call("write", path="new/notes.txt", content="one\ntwo")
    (diff,) = result.diffs
    assert diff.unified.startswith("--- /dev/null\n+++ b/new/notes.txt\n")
    assert diff.unified.endswith("+two\n\\ No newline at end of file\n")
    assert (diff.added, diff.removed, diff.before, diff.after) == (2, 0, None, "one\ntwo")


def test_an_overwrite_diffs_against_the_old_content(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("x\ny\n")
    call("read", path="a.txt")
    (diff,) = call("write", path="a.txt", content="x\nz\n").diffs
    assert "-y\n+z\n" in diff.unified and (diff.added, diff.removed) == (1, 1)


def test_a_failed_edit_has_no_diff(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("x\n")
    call("read", path="a.txt")
    result = call("edit", path="a.txt", edits=[{"old": "nope", "new": "y"}])
    assert result.is_error and result.diffs == ()


def test_a_long_diff_is_cut_but_counted_whole() -> None:
    before = "".join(f"line {i}\n" for i in range(2000)).encode()
    after = "".join(f"LINE {i}\n" for i in range(2000)).encode()
    diff = file_diff("big.txt", before, after)
    lines = diff.unified.splitlines()
    assert len(lines) == MAX_DIFF_LINES + 1 and lines[-1].startswith("… ") and lines[-1].endswith("more diff lines")
    assert (diff.added, diff.removed) == (2000, 2000)
    assert diff.before is None and diff.after is None  # larger than MAX_WHOLE_CHARS
    assert len(before) > MAX_WHOLE_CHARS


def test_a_binary_file_gets_a_note_not_a_diff() -> None:
    diff = file_diff("img.bin", b"\x00\x01\x02", b"\x00\x03")
    assert diff.unified == "Binary file img.bin changed\n" and diff.before is None


def test_previews_show_the_change_and_write_nothing(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    (workspace / "a.txt").write_text("hello\nworld\n")
    (edit,) = preview("edit", ctx, settings, path="a.txt", edits=[{"old": "world", "new": "there"}])
    assert "-world\n+there\n" in edit.unified
    (created,) = preview("write", ctx, settings, path="deep/er/b.txt", content="new\n")
    assert created.unified.startswith("--- /dev/null\n+++ b/deep/er/b.txt\n")
    assert (workspace / "a.txt").read_text() == "hello\nworld\n"
    assert not (workspace / "deep").exists()


def test_a_preview_of_a_call_that_would_fail_is_empty(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    (workspace / "a.txt").write_text("hello\n")
    assert preview("edit", ctx, settings, path="a.txt", edits=[{"old": "absent", "new": "x"}]) == ()
    assert preview("edit", ctx, settings, path="missing.txt", edits=[{"old": "a", "new": "b"}]) == ()
    assert preview("write", ctx, settings, path="../outside.txt", content="x") == ()
    # The shapes models send are prepared first, as for the call itself.
    (shaped,) = preview("edit", ctx, settings, file_path="a.txt", old_string="hello", new_string="bye")
    assert "-hello\n+bye\n" in shaped.unified


PREVIEW_IN_LITTLE_MEMORY = """
import asyncio, json, resource, sys
from pathlib import Path
from crab import ToolContext
from crab.tools import preview_diffs
from crab_tools_basic.registry import build_tools

ws = Path(sys.argv[1])
ctx = ToolContext(session_id="s", workspace=ws, settings={})
tools = {t.name: t for t in build_tools({})}
size = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmSize:"))) * 1024
room = size + 512 * 1024 * 1024  # far less than the file: reading it whole cannot fit
resource.setrlimit(resource.RLIMIT_AS, (room, room))
calls = [
    ("write", {"path": "big.txt", "content": "small\\n"}),
    ("edit", {"path": "big.txt", "edits": [{"old": "line", "new": "row"}]}),
]
shown = [[d.unified for d in asyncio.run(preview_diffs(tools[name], args, ctx))] for name, args in calls]
print(json.dumps(shown))
"""


def test_a_preview_of_a_huge_file_does_not_read_it(workspace: Path) -> None:
    # The permission question's diff is computed before the user said anything: a model proposing
    # to change a 4 GB file must not make crab read it into memory for a diff it would not show.
    # The preview runs in a process whose address space cannot hold the file.
    with (workspace / "big.txt").open("wb") as handle:
        handle.write(b"line\n" * 100)
        handle.truncate(4 << 30)
    child = subprocess.run(
        [sys.executable, "-c", PREVIEW_IN_LITTLE_MEMORY, str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout) == [
        [f"big.txt: too large to diff ({4 << 30} → 6 bytes)\n"],
        [f"big.txt: too large to diff ({4 << 30} bytes)\n"],
    ]


WRITE_IN_LITTLE_MEMORY = """
import asyncio, json, resource, sys
from pathlib import Path
from crab import ToolContext
from crab.tools import run_tool
from crab_tools_basic.registry import build_tools

ws = Path(sys.argv[1])
ctx = ToolContext(session_id="s", workspace=ws, settings={})
tools = {t.name: t for t in build_tools({})}
size = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmSize:"))) * 1024
room = size + 512 * 1024 * 1024  # far less than the file: reading it whole cannot fit
resource.setrlimit(resource.RLIMIT_AS, (room, room))
asyncio.run(run_tool(tools["read"], {"path": "big.txt", "limit": 1}, ctx))
written = asyncio.run(run_tool(tools["write"], {"path": "big.txt", "content": "small\\n"}, ctx))
print(json.dumps([written.content, [d.unified for d in written.diffs]]))
"""


def test_overwriting_a_huge_file_does_not_hold_it_in_memory(workspace: Path) -> None:
    # The read gate's hash of what is there is taken a chunk at a time, and a diff too large to
    # show is not computed: the old content is never held whole.
    with (workspace / "big.txt").open("wb") as handle:
        handle.write(b"line\n" * 10_000)  # a text head (read sniffs its start), then zeros
        handle.truncate(1 << 30)
    child = subprocess.run(
        [sys.executable, "-c", WRITE_IN_LITTLE_MEMORY, str(workspace)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout) == [
        "overwrote big.txt (6 bytes, 1 lines)",
        [f"big.txt: too large to diff ({1 << 30} → 6 bytes)\n"],
    ]
    assert (workspace / "big.txt").read_text() == "small\n"
