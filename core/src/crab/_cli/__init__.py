"""The ``crab`` console script: fast paths for ``--version`` and ``plugins list``, then the typer app."""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the ``crab`` command."""
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):
        from crab._cli.version import version_lines

        print("\n".join(version_lines()))
        return
    if args[:2] == ["plugins", "list"]:  # typer alone costs more than the listing: answer without it
        from crab._cli.plugins_cmd import run_list

        listed = run_list(args[2:])
        if listed is not None:
            sys.exit(listed)
    from crab._cli.signals import GATE, Interrupted, finish

    GATE.install()  # the gate enables the watchdog once it runs agent work or a signal comes
    code = 1
    try:
        from crab._cli.app import run_app

        code = run_app(args)
        if GATE.stopped is not None:  # the command went on after its event loop was stopped
            raise Interrupted(GATE.stopped)
    except Interrupted as exc:
        sys.stderr.write(f"{exc.message}\n")
        code = exc.exit_code
    except BaseException:
        if GATE.stopped is None:
            raise
        # A plugin command's event loop was stopped by a signal; asyncio.run then raises.
        stopped = Interrupted(GATE.stopped)
        sys.stderr.write(f"{stopped.message}\n")
        code = stopped.exit_code
    finally:
        code = finish(code)
    sys.exit(code)
