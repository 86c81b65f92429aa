"""Red team (issue 38's invariant across processes): a tool result holding a secret crab knows
(an ``*_API_KEY`` variable's value, say from ``cat .env``) goes to the model verbatim in the live
process, while the store keeps it redacted; a resumed session (``crab run -c``, ``/resume``, a
restarted ``crab serve``) sends the redacted text. The messages then differ from that result on,
and the next process pays its whole context again (and the model saw the secret once, never again).

Found by recording ``crab run`` and ``crab run -c`` request bodies (crab-provider-openai against
``crab.testing.ReplayServer``) with a workspace file holding the endpoint's key. The recorder
now keeps in context the message as stored, masked where a secret was."""

from __future__ import annotations

from typing import Any

import crab
import pytest
from crab._values.message_json import message_to_dict

SECRET = "sk-red-team-0123456789abcdef"


class Plugin:
    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool
        def env_file() -> str:
            """Show the project's .env."""
            return f"OPENAI_API_KEY={SECRET}\nDEBUG=1"

        return [env_file]


def test_a_resumed_session_sends_the_messages_the_live_one_sent(
    crab_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RED_TEAM_API_KEY", SECRET)
    live = crab_agent([[{"tool": "env_file", "args": {}}], [{"text": "seen"}]], plugins={"p": Plugin()})
    live.run("what is in .env?")
    before = live.requests[-1]

    resumed = crab_agent([[{"text": "again"}]], plugins={"p": Plugin()}, store=live.store)
    resumed.session = resumed.run_async(resumed.agent.resume(live.session.id))
    resumed.run("and now?")
    after = resumed.requests[-1]

    sent = [message_to_dict(m) for m in before.messages]
    assert [message_to_dict(m) for m in after.messages[: len(sent)]] == sent
    assert SECRET not in repr(sent)  # the model never got it
