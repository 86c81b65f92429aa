"""A fake plugin that adds a `crab hello-cli` sub-command."""

import crab


@crab.hookimpl
def crab_cli(app, config):
    @app.command("hello-cli")
    def hello_cli() -> None:
        """Say hello from a plugin."""
        print("hello from a plugin command")
