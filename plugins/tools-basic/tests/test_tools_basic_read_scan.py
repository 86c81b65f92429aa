"""read's scan of a file: the window, line count and sha256 it gives are those of the whole file's
bytes, wherever its lines fall against the chunks it is read in, and a huge line is never held whole."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from crab_tools_basic import anchored
from crab_tools_basic.files import INLINE_MAX, SCAN_CHUNK, _scan, read_window
from hypothesis import given, settings
from hypothesis import strategies as st


def expected(data: bytes, offset: int, limit: int) -> str:
    """The numbered lines ``offset``..``offset + limit - 1``, as read shows short lines."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    rows = [f"{n:>6}\t{lines[n - 1].decode().removesuffix(chr(13))}" for n in range(offset, offset + limit)]
    return "\n".join(rows)


def window(workspace: Path, name: str, offset: int, limit: int | None):  # type: ignore[no-untyped-def]
    real = workspace / name
    with anchored.parent_of(workspace, real, name) as parent:
        return read_window(parent, offset, limit)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b""])
def test_lines_across_chunk_boundaries(workspace: Path, ending: bytes) -> None:
    # Line lengths that put line ends before, on and after each chunk boundary.
    rows = [(b"x" * (n % 97)) + f" line {n}".encode() for n in range(1, 9000)]
    data = b"\n".join(rows).replace(b"\n", ending or b"\n") + ending
    assert len(data) > 3 * SCAN_CHUNK
    (workspace / "f.txt").write_bytes(data)
    total = len(rows)
    digest = hashlib.sha256(data).hexdigest()
    boundaries = [data.count(b"\n", 0, k * SCAN_CHUNK) + 1 for k in (1, 2, 3)]
    for first in [1, 2, *boundaries, *(b - 1 for b in boundaries), *(b + 1 for b in boundaries), total]:
        for limit in (1, 2, 7, 300):
            got = window(workspace, "f.txt", first, limit)
            assert (got.total_lines, got.sha256) == (total, digest)
            shown = min(limit, total - first + 1)
            assert got.text.split("\n[")[0] == expected(data, first, shown), (first, limit)


def test_a_window_ending_on_the_last_line_without_newline(workspace: Path) -> None:
    (workspace / "f.txt").write_bytes(b"a\nb\nlast")
    got = window(workspace, "f.txt", 3, None)
    assert (got.text, got.total_lines) == ("     3\tlast", 3)
    assert window(workspace, "f.txt", 2, 1).text == "     2\tb\n[showing lines 2-2 of 3; use offset=3 to read on]"


def test_a_huge_one_line_file_is_read_in_bounded_memory(workspace: Path) -> None:
    # In a process of its own: tracemalloc counts every thread of the test worker.
    (workspace / "min.js").write_bytes(b"x" * (48 << 20) + b"\nnext\n")
    script = textwrap.dedent(
        f"""
        import json, tracemalloc
        from pathlib import Path
        from crab_tools_basic import anchored
        from crab_tools_basic.files import read_window

        root = Path({str(workspace)!r})
        tracemalloc.start()
        with anchored.parent_of(root, root / "min.js", "min.js") as parent:
            got = read_window(parent, 1, None)
        print(json.dumps({{"peak": tracemalloc.get_traced_memory()[1], "total": got.total_lines,
                          "note": got.text.rsplit("\\n", 1)[1]}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["total"] == 2
    assert seen["note"].startswith("[line 1 is longer than 50 KB and was cut")
    assert seen["peak"] < 4 << 20, seen  # the line is 48 MB


@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=300),
    end=st.sampled_from([b"\n", b"\r\n", b""]),
    offset=st.integers(min_value=1, max_value=320),
    wanted=st.integers(min_value=1, max_value=50),
)
@settings(max_examples=300, deadline=None)
def test_the_inline_scan_of_one_chunk_is_the_chunked_scan(
    lines: list[bytes], end: bytes, offset: int, wanted: int
) -> None:
    """Inline, the whole file is one chunk and the newlines before the window are counted once:
    the lines shown, the line count and the hash are those of the chunked scan of the same bytes."""
    data = b"\n".join(lines) + (end if lines else b"")
    whole = _scan(io.BytesIO(b""), data, offset, wanted, None, INLINE_MAX)
    chunked_handle = io.BytesIO(data[7:])
    chunked = _scan(chunked_handle, data[:7], offset, wanted, None)
    assert whole == chunked
    assert whole[1] == data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
