"""What hook implementations answer and gather beside ``crab.hookimpl``/``crab.hookspec``: the
decisions of ``crab_before_tool_call`` (``Allow``, ``Deny``, ``Replace``) and ``collect_hook``,
which gathers a registration hook from every enabled plugin for a CLI sub-command (docs/hooks.md),
and ``permission_decision``: core's permission gate for a mode, for a plugin that holds a call to a
narrower mode than the agent's own (crab-temporal's turn ceiling)."""

from crab._assembly.collect_hook import HookResults, collect_hook
from crab._builtin.permission_gate import decide as permission_decision
from crab._contracts.interception import Allow, Decision, Deny, Replace

__all__ = ["Allow", "Decision", "Deny", "HookResults", "Replace", "collect_hook", "permission_decision"]
