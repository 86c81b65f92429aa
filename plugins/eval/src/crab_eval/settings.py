"""``[plugins.eval]``: how many runs ``crab eval`` starts at once, their time limit, the judge model."""

from __future__ import annotations

import crab

NAME = "eval"
TABLE = crab.ConfigTable(
    NAME,
    (
        crab.Setting("jobs", "int", 2, doc="eval runs at once (`-j` for one command)", minimum=1, maximum=64),
        crab.Setting("timeout", "float", 600.0, doc="seconds one task run may take unless its task says", above=0),
        crab.Setting("judge_model", "str", doc="model that judges a task's `judge` rubric (`--judge-model`)"),
    ),
    doc="crab eval and crab replay",
)
