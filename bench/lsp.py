"""crab-lsp benchmark: the time from an edit to its diagnostics, with each real language server.

For ``ruff server``, ``pylsp`` (python-lsp-server with pyflakes) and ``typescript-language-server``
(from ``plugins/lsp/tests/peers``, installed with ``npm ci`` as the tests do): the first edit of a
file (the server's start and ``initialize`` included, what the first ``write`` of a run pays),
then ``--edits`` edits of that file, each alternating a version with an error and one without,
timed from sending the file's new text to the diagnostics that say so (an error, or none), the
last part of them for a server that sends them in parts (typescript-language-server: syntax,
then types). That is what a ``write`` or ``edit`` waits in ``crab_after_tool_call``, less the
``settle`` quiet time a server in parts is given. Prints the cold time and the median and slowest
warm time per server. A server that is not installed is named and skipped.

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

from crab_lsp.server import LanguageServer  # noqa: E402
from crab_lsp.settings import ServerSpec  # noqa: E402
from lsp_support import pylsp_command, ruff_command, typescript_command  # noqa: E402

CASES = {
    "ruff": ("a.py", "import os\n\nprint(os.sep)\n", "import os\n\nprint(os.sep\n"),
    "pylsp": ("a.py", "import os\n\nprint(os.sep)\n", "import os\n\nprint(undefined_name)\n"),
    "typescript": ("a.ts", "const x: number = 1;\nconsole.log(x);\n", 'const x: number = "one";\nconsole.log(x);\n'),
}


async def _until(server: LanguageServer, path: Path, text: str, broken: bool, deadline: float) -> float:
    """Seconds from sending ``text`` until the server's diagnostics of ``path`` say what it should
    (an error when ``broken``, none otherwise): a server that sends them in parts is timed to the
    part that completes them, not to the first."""
    uri = path.resolve().as_uri()
    start = time.perf_counter()
    await server.sync(path, text)
    while True:
        found = server.diagnostics.get(uri)
        errors = [d for d in found or [] if d.get("severity", 1) == 1]
        if found is not None and bool(errors) == broken:
            return time.perf_counter() - start
        seen = server.published(uri)
        if not await server.wait(uri, seen, max(0.0, deadline - time.monotonic())):
            raise SystemExit(f"{server.spec.name}: no {'error' if broken else 'clean result'} for {path.name}")


async def measure(name: str, command: list[str], edits: int) -> tuple[float, list[float]]:
    file, good, bad = CASES[name]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if name == "typescript":
            (work / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
        path = work / file
        path.write_text(bad)
        spec = ServerSpec(name, command[0], tuple(command[1:]), (f"*{path.suffix}",))
        server = LanguageServer(spec, work, 60.0)
        deadline = time.monotonic() + 600
        try:
            start = time.perf_counter()
            await server.start()
            cold = time.perf_counter() - start + await _until(server, path, bad, True, deadline)
            warm = []
            for n in range(edits):
                text = good if n % 2 == 0 else bad
                path.write_text(text)
                warm.append(await _until(server, path, text, text == bad, deadline))
            return cold, warm
        finally:
            await server.stop()


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
