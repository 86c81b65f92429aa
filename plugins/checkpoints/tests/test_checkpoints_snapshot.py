"""A checkpoint's snapshot sees a file rewritten in the second it was staged, at the same size:
git trusts an index entry's stat only when the index is newer than the file (its racy-entry
check, to the second in most builds), so the temporary index must keep the user's index's mtime."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from crab_checkpoints.git_store import GitCheckpoints


def test_a_same_size_rewrite_in_the_second_it_was_staged_is_seen(repo: Path, git) -> None:
    index = repo / ".git" / "index"
    for _ in range(20):
        (repo / "a.txt").write_text("one\n")
        git(repo, "add", "a.txt")
        (repo / "a.txt").write_text("two\n")
        if int(os.stat(repo / "a.txt").st_mtime) == int(os.stat(index).st_mtime):
            break
        # The second turned over between the two writes: try again.
    time.sleep(1.1)  # a copy made now, with a new mtime, would be a second newer than the entry
    tree = asyncio.run(GitCheckpoints(repo, "s").snapshot())
    assert git(repo, "cat-file", "blob", f"{tree}:a.txt") == "two\n"
