"""edit: literal matching, all-or-nothing, byte-exact outside the edits, the shapes models send."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolError, ToolResult
from crab_tools_basic.edit import prepare_edit_arguments
from crab_tools_basic.splice import Edit, apply_edits, dominant_ending


def edit_bytes(original: bytes, *edits: Edit) -> bytes:
    return apply_edits(original, list(edits))[0]


def test_crlf_file_keeps_crlf_and_new_lines_get_crlf() -> None:
    original = b"one\r\ntwo\r\nthree\r\n"
    assert edit_bytes(original, ("two\n", "2\nzwei\n")) == b"one\r\n2\r\nzwei\r\nthree\r\n"


def test_old_text_may_be_sent_with_crlf_too() -> None:
    assert edit_bytes(b"a\r\nb\r\n", ("a\r\nb", "c")) == b"c\r\n"


def test_mixed_endings_only_the_edited_region_changes() -> None:
    original = b"lf\ncrlf\r\nlf2\ncrlf2\r\nlf3\n"  # LF dominant (3 to 2)
    assert dominant_ending(original.decode()) == "\n"
    result = edit_bytes(original, ("crlf2", "x\ny"))
    assert result == b"lf\ncrlf\r\nlf2\nx\ny\r\nlf3\n"


def test_bom_is_kept() -> None:
    original = "\ufeffhéllo\nwörld\n".encode()
    assert edit_bytes(original, ("wörld", "welt")) == "\ufeffhéllo\nwelt\n".encode()


def test_edit_at_the_very_start_of_a_bom_file() -> None:
    assert edit_bytes(b"\xef\xbb\xbfabc", ("abc", "xyz")) == b"\xef\xbb\xbfxyz"


def test_no_final_newline_stays_without_one() -> None:
    assert edit_bytes(b"a\nb", ("b", "c")) == b"a\nc"


def test_non_ascii_and_non_utf8_bytes_survive() -> None:
    original = "π = 3.14\n".encode() + b"\xff\xfe latin-1 junk\n" + "日本語\n".encode()
    result = edit_bytes(original, ("日本語", "にほんご"))
    assert result == "π = 3.14\n".encode() + b"\xff\xfe latin-1 junk\n" + "にほんご\n".encode()


def test_several_edits_apply_against_the_original() -> None:
    # The second old text exists only in the original, not after the first edit: still fine.
    assert edit_bytes(b"a b c\n", ("a", "b"), ("b c", "c d")) == b"b c d\n"


def test_zero_matches_shows_the_closest_region() -> None:
    original = b"def f():\n    return 1\n\ndef g():\n    return 2\n"
    with pytest.raises(ToolError) as caught:
        edit_bytes(original, ("def g():\n  return 2\n", "x"))
    message = str(caught.value)
    assert "not found" in message
    assert "lines 4-5" in message
    assert "+    return 2" in message


def test_several_matches_name_the_lines() -> None:
    with pytest.raises(ToolError, match=r"matches 3 times \(at lines 1, 3, 5\)"):
        edit_bytes(b"x = 1\n\nx = 1\n\nx = 1\n", ("x = 1", "x = 2"))


def test_overlapping_matches_of_one_old_count_as_several() -> None:
    with pytest.raises(ToolError, match="matches 2 times"):
        edit_bytes(b"aaa", ("aa", "b"))


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ([("", "x")], "old is empty"),
        ([("same", "same")], "nothing would change"),
        ([("ab", "x"), ("bc", "y")], "overlap"),
        ([("abc", "x"), ("b", "y")], "overlap"),
        ([], "no edits"),
    ],
)
def test_refused_edits(edits: list[tuple[str, str]], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        apply_edits(b"abcd same\n", edits)


def test_adjacent_edits_are_not_overlapping() -> None:
    assert edit_bytes(b"abcd", ("ab", "1"), ("cd", "2")) == b"12"


def test_prepare_arguments_accepts_common_shapes() -> None:
    assert prepare_edit_arguments({"file_path": "a", "old_string": "x", "new_string": "y"}) == {
        "path": "a",
        "edits": [{"old": "x", "new": "y"}],
    }
    assert prepare_edit_arguments({"path": "a", "oldText": "x", "newText": "y"})["edits"] == [{"old": "x", "new": "y"}]
    assert prepare_edit_arguments({"path": "a", "edits": '[{"oldText": "x", "newText": "y"}]'})["edits"] == [
        {"old": "x", "new": "y"}
    ]
    assert prepare_edit_arguments({"path": "a", "edits": {"old": "x", "new": "y"}})["edits"] == [
        {"old": "x", "new": "y"}
    ]
    with pytest.raises(ValueError, match="not JSON"):
        prepare_edit_arguments({"path": "a", "edits": "[{"})


def test_tool_accepts_a_json_string_and_a_top_level_pair(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.txt"
    target.write_text("alpha\nbeta\n")
    assert not call("read", path="a.txt").is_error
    assert not call("edit", file_path="a.txt", edits='[{"old": "alpha", "new": "ALPHA"}]').is_error
    assert not call("edit", path="a.txt", oldText="beta", newText="BETA").is_error
    assert target.read_text() == "ALPHA\nBETA\n"


def test_bad_json_edits_is_an_error_result(workspace: Path, call: Callable[..., ToolResult]) -> None:
    result = call("edit", path="a.txt", edits="[{")
    assert result.is_error
    assert "not JSON" in result.content


def test_failed_edit_leaves_the_file_alone(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.txt"
    target.write_bytes(b"one\r\ntwo\r\n")
    assert not call("read", path="a.txt").is_error
    before = target.stat()
    result = call("edit", path="a.txt", edits=[{"old": "one", "new": "1"}, {"old": "missing", "new": "x"}])
    assert result.is_error
    assert "edit 2" in result.content
    assert target.read_bytes() == b"one\r\ntwo\r\n"
    assert target.stat().st_mtime_ns == before.st_mtime_ns
    assert target.stat().st_ino == before.st_ino


def test_edit_reports_where_the_edits_landed(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("a\nb\nc\nd\n")
    assert not call("read", path="a.txt").is_error
    result = call("edit", path="a.txt", edits=[{"old": "a\n", "new": "a\nA1\nA2\n"}, {"old": "d", "new": "D"}])
    assert result.content == "edited a.txt: 2 replacements (lines 1-4, line 6)"
    assert (workspace / "a.txt").read_text() == "a\nA1\nA2\nb\nc\nD\n"


def test_edit_refuses_binary_and_missing_files(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "b.bin").write_bytes(b"\0\1\2abc")
    assert "binary" in call("edit", path="b.bin", old="abc", new="x").content
    assert "does not exist" in call("edit", path="nope.txt", old="a", new="b").content


def test_replace_all_replaces_every_occurrence_left_to_right() -> None:
    result, landed = apply_edits(b"x = 1\ny = x\nx\n", [("x", "z", True)])
    assert result == b"z = 1\ny = z\nz\n"
    assert [(r.first_line, r.last_line) for r in landed] == [(1, 1), (2, 2), (3, 3)]
    # Occurrences that overlap each other: each is taken after the one before, as str.replace does.
    assert edit_bytes(b"aaaa", ("aa", "b", True)) == b"bb"
    # Beside other edits, checked against the original like them.
    assert edit_bytes(b"a-a-b\n", ("a", "c", True), ("b", "d")) == b"c-c-d\n"
    with pytest.raises(ToolError, match="overlap"):
        apply_edits(b"ab ab", [("ab", "x", True), ("b a", "y")])
    with pytest.raises(ToolError, match="not found"):
        apply_edits(b"abc", [("zz", "y", True)])


def test_several_matches_suggest_replace_all() -> None:
    with pytest.raises(ToolError, match="or set replace_all"):
        edit_bytes(b"x\nx\n", ("x", "y"))


def test_replace_all_counts_lines_across_many_replacements() -> None:
    original = b"".join(b"keep %d\nold\n" % i for i in range(3000))
    result, landed = apply_edits(original, [("old", "new\nline", True)])
    assert result == b"".join(b"keep %d\nnew\nline\n" % i for i in range(3000))
    assert [(r.first_line, r.last_line) for r in landed[:2]] == [(2, 3), (5, 6)]
    assert (landed[-1].first_line, landed[-1].last_line) == (8999, 9000)


def test_the_tool_takes_replace_all_in_each_shape(workspace: Path, call: Callable[..., ToolResult]) -> None:
    target = workspace / "a.py"
    target.write_text("old()\nold()\nkeep\n")
    assert not call("read", path="a.py").is_error
    twice = call("edit", path="a.py", edits=[{"old": "old()", "new": "new()"}])
    assert twice.is_error and "matches 2 times" in twice.content
    done = call("edit", path="a.py", edits=[{"old": "old()", "new": "new()", "replace_all": True}])
    assert done.content == "edited a.py: 2 replacements (line 1, line 2)"
    assert target.read_text() == "new()\nnew()\nkeep\n"
    # Claude Code's shape: a top-level pair with its replace_all.
    done = call("edit", file_path="a.py", old_string="new()", new_string="x()", replace_all=True)
    assert not done.is_error and target.read_text() == "x()\nx()\nkeep\n"
    assert prepare_edit_arguments({"path": "a", "edits": [{"oldString": "a", "newString": "b", "replaceAll": True}]})[
        "edits"
    ] == [{"old": "a", "new": "b", "replace_all": True}]


def test_the_result_names_at_most_twenty_places(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("x\n" * 25)
    assert not call("read", path="a.txt").is_error
    done = call("edit", path="a.txt", edits=[{"old": "x", "new": "y", "replace_all": True}])
    assert done.content.endswith("line 19, line 20 and 5 more)")
    assert done.content.startswith("edited a.txt: 25 replacements (line 1, line 2,")
