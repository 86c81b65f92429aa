"""crab-ask: the ``ask_user`` tool, a question from the model to the user, asked by the active channel.

Only hook implementations live here; the tool is in ``asking.py``, imported when a hook runs.
"""

from __future__ import annotations

import crab

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    return crab.ConfigTable(
        "ask",
        (
            crab.Setting(
                "timeout",
                "int",
                900,
                "seconds ask_user waits for the user's answer before telling the model there was none",
                minimum=5,
                maximum=86_400,
            ),
        ),
        doc="crab-ask: the ask_user tool (a question from the model to the user)",
    )


@crab.hookimpl
def crab_tools(config: crab.Config) -> list[crab.Tool]:
    from crab_ask.asking import ask_user_tool

    return [ask_user_tool()]
