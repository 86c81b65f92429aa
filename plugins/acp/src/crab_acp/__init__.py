"""crab-acp: ``crab acp`` runs crab as the agent of an editor over the Agent Client Protocol.

Only the hook lives here. The server is ``crab_acp.server`` (stdio, logging), the protocol side
``crab_acp.agent`` (one ``crab.Agent`` per editor session, ``crab_acp.session``), the mapping of
crab's events to session updates ``crab_acp.updates``, and the tools that go through the editor
``crab_acp.editor_fs`` and ``crab_acp.editor_terminal``; each is imported when ``crab acp`` runs.
"""

from __future__ import annotations

from typing import Any

import crab

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_cli(app: Any, config: crab.Config) -> None:
    """``crab acp``: serve one editor on stdin/stdout until it closes the connection."""
    import typer

    def acp_cmd(
        model: str | None = typer.Option(None, "--model", "-m", help="Model id, or provider/model."),
        provider: str | None = typer.Option(None, "--provider", help="Provider name (see `crab models`)."),
        store: str | None = typer.Option(None, "--store", help="Session store (memory, jsonl, sqlite…)."),
    ) -> None:
        """Be the agent of an editor (Zed, JetBrains, Neovim, Emacs) over ACP on stdio; log: ~/.crab/logs/acp.log."""
        from crab_acp.server import serve

        raise typer.Exit(serve(model=model, provider=provider, store=store))

    app.command("acp")(acp_cmd)
