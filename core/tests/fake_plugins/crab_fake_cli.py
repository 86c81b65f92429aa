"""A fake plugin that adds a `crab hello-cli` sub-command."""

import crab


@crab.hookimpl
def crab_cli(app, config):
    @app.command("hello-cli")
    def hello_cli() -> None:
        """Say hello from a plugin."""
        print("hello from a plugin command")

    @app.command("spin-loop")
    def spin_loop(folder: str) -> None:
        """Run an event loop of the command's own with a busy task beside a waiting main (what a
        plugin's server looks like), noting in ``folder`` when it runs and when main settled."""
        import asyncio
        from pathlib import Path

        marks = Path(folder)

        async def spin() -> None:
            while True:  # a signal nearly always lands in this task's step, not in select()
                sum(range(20_000))
                await asyncio.sleep(0)

        async def main() -> None:
            spinner = asyncio.ensure_future(spin())
            try:
                (marks / "running").write_text("")
                await asyncio.Event().wait()
            finally:
                spinner.cancel()
                (marks / "settled").write_text("")

        asyncio.run(main())
        print("the loop ended by itself")
