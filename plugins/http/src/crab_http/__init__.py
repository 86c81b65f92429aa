"""crab-http: the ``http`` channel (``crab serve http``: crab's API, an OpenAI-compatible API and a
web chat page) and ``crab http token create|list|revoke``, ``crab http run``."""

from typing import Any

import crab

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    from crab_http import settings

    table: crab.ConfigTable = settings.TABLE
    return table


@crab.hookimpl
def crab_channels(config: crab.Config) -> list[Any]:
    from crab_http.channel import HttpChannel

    return [HttpChannel(config)]


@crab.hookimpl
def crab_cli(app: Any, config: crab.Config) -> None:
    """``crab http run`` (``crab serve http [FLAGS]``) and ``crab http token create|list|revoke``.

    Defined here, not in a module of its own: ``crab --help`` loads only a plugin's top module."""
    import typer

    group = typer.Typer(help="The HTTP API and web chat: run it, manage its tokens.", no_args_is_help=True)
    tokens = typer.Typer(help="The bearer tokens that open the API (stored hashed).", no_args_is_help=True)
    passthrough = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}

    @group.command("run", context_settings=passthrough)
    def run(ctx: typer.Context) -> None:
        """Serve: the same as `crab serve http [FLAGS]` (--model, --store, --set …)."""
        import os
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", "crab", "serve", "http", *ctx.args])

    @tokens.command("create")
    def create(name: str = typer.Argument(..., help="who the token is for (laptop, ci, …)")) -> None:
        """Make a token named NAME and print it once (only its hash is kept)."""
        from crab_http.cli import create_token

        raise typer.Exit(create_token(name))

    @tokens.command("list")
    def list_() -> None:
        """The tokens' names and when each was made (never the tokens)."""
        from crab_http.cli import list_tokens

        raise typer.Exit(list_tokens())

    @tokens.command("revoke")
    def revoke(name: str = typer.Argument(..., help="the token's name")) -> None:
        """Revoke token NAME; a running server refuses it from its next request."""
        from crab_http.cli import revoke_token

        raise typer.Exit(revoke_token(name))

    group.add_typer(tokens, name="token")
    app.add_typer(group, name="http")
