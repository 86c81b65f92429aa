"""crab-example: a tool the model can call (`word_count`) and a command you can type (`/words`).

Only hook implementations live here, and they import only crab and the standard library; the
work is in `tools.py`, imported when a hook runs, so `crab --help` never pays for it.
"""

from __future__ import annotations

import crab

CRAB_API = ">=0.1,<0.2"  # the plugin API versions this plugin works with (crab.API_VERSION)


@crab.hookimpl
def crab_config_table() -> crab.ConfigTable:
    """Declare [plugins.example]: crab checks it in every config layer and fills the defaults."""
    return crab.ConfigTable(
        "example",
        (crab.Setting("max_bytes", "int", 1_000_000, "largest file word_count reads, in bytes", minimum=1),),
        doc="example: a tool plugin for crab, from the word-count example",
    )


@crab.hookimpl
def crab_tools(config: crab.Config) -> list[crab.Tool]:
    from crab_example.tools import word_count

    return [word_count]


@crab.hookimpl
def crab_commands(config: crab.Config) -> list[crab.Command]:
    from crab_example.tools import words_command

    return [crab.Command("words", "count the words in a file of the workspace", words_command, usage="PATH")]
