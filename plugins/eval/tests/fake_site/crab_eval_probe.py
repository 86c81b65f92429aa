"""A tiny tool plugin for crab-eval's replay tests: ``probe`` says what EVAL_PROBE_MODE says."""

import os

import crab


@crab.tool(permission="read")
def probe() -> str:
    """Report the probe's mode."""
    return f"probe says {os.environ.get('EVAL_PROBE_MODE', 'steady')}"


@crab.hookimpl
def crab_tools(config):
    return [probe]
