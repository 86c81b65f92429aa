"""crab-lsp benchmark: the time from an edit to its diagnostics, with each real language server.

For ``ruff server``, ``pylsp`` (python-lsp-server with pyflakes) and ``typescript-language-server``
(from ``plugins/lsp/tests/peers``, installed with ``npm ci`` as the tests do): the first edit of a
file (the server's start and ``initialize`` included, what the first ``write`` of a run pays),
then ``--edits`` edits of that file, each alternating a version with an error and one without,
timed from the file's new text to the server's new diagnostics (what each later ``write`` or
``edit`` waits in ``crab_after_tool_call``). Prints the cold time and the median and slowest warm
time per server. A server that is not installed is named and skipped.

    python bench/lsp.py [--edits 20]

Needs crab-lsp[test] installed (requirements-dev.txt); node and npm for TypeScript.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "lsp" / "tests"))

from crab_lsp.runtime import Lsp  # noqa: E402

from conftest import pylsp_command, ruff_command, typescript_command  # noqa: E402

CASES = {
    "ruff": ("a.py", "import os\n\nprint(os.sep)\n", "import os\n\nprint(os.sep\n"),
    "pylsp": ("a.py", "import os\n\nprint(os.sep)\n", "import os\n\nprint(undefined_name)\n"),
    "typescript": ("a.ts", "const x: number = 1;\nconsole.log(x);\n", 'const x: number = "one";\nconsole.log(x);\n'),
}


async def measure(name: str, command: list[str], edits: int) -> tuple[float, list[float]]:
    path, good, bad = CASES[name]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if name == "typescript":
            (work / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
        table = {"command": command[0], "args": command[1:], "patterns": [f"*{Path(path).suffix}"]}
        settings = {"servers": {name: table}, "diagnostics_wait": 60.0, "request_timeout": 60.0, "max_diagnostics": 20}
        lsp = Lsp(work, settings)
        try:
            (work / path).write_text(bad)
            start = time.perf_counter()
            said = await lsp.diagnostics(path)
            cold = time.perf_counter() - start
            assert "error" in said, said
            warm: list[float] = []
            for n in range(edits):
                text = good if n % 2 == 0 else bad
                (work / path).write_text(text)
                start = time.perf_counter()
                said = await lsp.diagnostics(path)
                warm.append(time.perf_counter() - start)
                assert ("error" in said) == (text == bad), (name, n, said)
            return cold, warm
        finally:
            await lsp.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args()
    servers = {"ruff": ruff_command(), "pylsp": pylsp_command(), "typescript": typescript_command()}
    print(f"{'server':<12} {'first edit (start)':>19} {'edit median':>12} {'edit slowest':>13}")
    for name, command in servers.items():
        if not isinstance(command, list):
            print(f"{name:<12} skipped: {command or 'not installed'}")
            continue
        cold, warm = asyncio.run(measure(name, command, args.edits))
        print(
            f"{name:<12} {cold * 1000:>16.0f} ms {statistics.median(warm) * 1000:>9.0f} ms {max(warm) * 1000:>10.0f} ms"
        )


if __name__ == "__main__":
    main()
