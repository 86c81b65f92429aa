"""``crab telegram run`` (a shortcut for ``crab serve telegram``) and ``crab telegram pair``."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

PAIR_MINUTES = 5.0


def add_commands(app: Any, config: Any) -> None:
    group = typer.Typer(help="The Telegram channel: run the bot, pair your account.", no_args_is_help=True)

    @group.command(
        "run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
    )
    def run(ctx: typer.Context) -> None:
        """Run the bot: the same as `crab serve telegram [FLAGS]` (--model, --store, --set …)."""
        args = [sys.executable, "-m", "crab", "serve", "telegram", *ctx.args]
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, args)

    @group.command("pair")
    def pair(
        minutes: Annotated[float, typer.Option(help="How long to wait for the code.")] = PAIR_MINUTES,
    ) -> None:
        """Allow your Telegram account: send the code shown to the bot; your id is added to allow_from.

        Run it while `crab serve telegram` is stopped (Telegram gives updates to one poller)."""
        from crab_telegram.pairing import run_pairing

        raise typer.Exit(run_pairing(config, minutes * 60))

    app.add_typer(group, name="telegram")
