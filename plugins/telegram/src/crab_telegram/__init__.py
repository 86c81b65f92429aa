"""crab-telegram: the ``telegram`` channel (``crab serve telegram``) and ``crab telegram run|pair``."""

from typing import Any

import crab

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    from crab_telegram import settings

    table: crab.ConfigTable = settings.TABLE
    return table


@crab.hookimpl
def crab_channels(config: crab.Config) -> list[Any]:
    from crab_telegram.channel import TelegramChannel

    return [TelegramChannel(config)]


@crab.hookimpl
def crab_cli(app: Any, config: crab.Config) -> None:
    """``crab telegram run`` (``crab serve telegram [FLAGS]``) and ``crab telegram pair``.

    Defined here, not in a module of its own: ``crab --help`` loads only a plugin's top module."""
    import typer

    group = typer.Typer(help="The Telegram channel: run the bot, pair your account.", no_args_is_help=True)
    passthrough = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}

    @group.command("run", context_settings=passthrough)
    def run(ctx: typer.Context) -> None:
        """Run the bot: the same as `crab serve telegram [FLAGS]` (--model, --store, --set …)."""
        import os
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", "crab", "serve", "telegram", *ctx.args])

    @group.command("pair")
    def pair(minutes: float = typer.Option(5.0, help="How long to wait for the code.")) -> None:
        """Allow your Telegram account: send the code shown to the bot; your id is added to allow_from.

        Run it while `crab serve telegram` is stopped (Telegram gives updates to one poller)."""
        from crab_telegram.pairing import run_pairing

        raise typer.Exit(run_pairing(config, minutes * 60))

    app.add_typer(group, name="telegram")
