"""``crab mcp serve``: what plugins offer through ``crab_prompts`` (crab-skills: its skills) as
MCP prompts.

crab-mcp declares the hook (``crab_mcp.PromptHooks``) and collects it once when the
server starts; no plugin imports another. Each prompt is a mapping: ``name``, ``description``,
``arguments`` (a list of ``{"name", "description", "required"}``) and ``render``, a function of
the client's arguments giving the text of the one user message ``prompts/get`` answers
(cut at ``MAX_TEXT``). A name offered twice keeps the first; a malformed entry is left out with
a warning on stderr. The list is fixed for the life of the server, so ``listChanged`` is false.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HOOK = "crab_prompts"
MAX_TEXT = 200_000
"""Characters of one rendered prompt served at most."""


@dataclass(frozen=True)
class ServedPrompt:
    name: str
    description: str
    arguments: tuple[Mapping[str, Any], ...]
    render: Callable[[Mapping[str, str]], str]
    plugin: str


def gather(results: Sequence[tuple[str, Any]]) -> dict[str, ServedPrompt]:
    """The prompts of every plugin's answer, by name, in plugin order."""
    found: dict[str, ServedPrompt] = {}
    for plugin, value in results:
        for entry in value or []:
            try:
                prompt = ServedPrompt(
                    str(entry["name"]),
                    str(entry.get("description") or ""),
                    tuple(dict(a) for a in entry.get("arguments") or ()),
                    entry["render"],
                    plugin,
                )
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                print(f"warning: plugin {plugin} offered a malformed prompt ({exc!r}); left out", file=sys.stderr)
                continue
            if not callable(prompt.render) or not prompt.name:
                print(f"warning: plugin {plugin} offered a prompt without name or render; left out", file=sys.stderr)
                continue
            found.setdefault(prompt.name, prompt)
    return found


def collect(plugins: str | None) -> dict[str, ServedPrompt]:
    """Collect ``crab_prompts`` from the enabled plugins (``plugins``: a ``--plugins`` list, to
    which crab-mcp, which declares the hook, is added)."""
    from crab import CrabError
    from crab.hooks import collect_hook

    names = None if plugins is None else [p.strip() for p in plugins.split(",") if p.strip()]
    wanted = None if names is None else ",".join([*names, *([] if "mcp" in names else ["mcp"])])
    try:
        found = collect_hook(HOOK, wanted)
    except (CrabError, ValueError) as exc:
        print(f"warning: no prompts offered: {exc}", file=sys.stderr)
        return {}
    return gather(found.results)


def mcp_prompt(prompt: ServedPrompt) -> Any:
    from mcp import types

    arguments = [
        types.PromptArgument(
            name=str(a.get("name")), description=a.get("description") or None, required=bool(a.get("required"))
        )
        for a in prompt.arguments
    ]
    return types.Prompt(name=prompt.name, description=prompt.description or None, arguments=arguments or None)


def get(prompts: Mapping[str, ServedPrompt], name: str, arguments: Mapping[str, str] | None) -> Any:
    """``prompts/get``: the rendered text as one user message; ``MCPError`` for an unknown name
    or a required argument missing."""
    from mcp import MCPError, types

    prompt = prompts.get(name)
    if prompt is None:
        offered = ", ".join(sorted(prompts)) or "none"
        raise MCPError(types.INVALID_PARAMS, f"no prompt {name!r} (offered: {offered})")
    given = {str(k): str(v) for k, v in (arguments or {}).items()}
    missing = [str(a.get("name")) for a in prompt.arguments if a.get("required") and not given.get(str(a.get("name")))]
    if missing:
        raise MCPError(types.INVALID_PARAMS, f"prompt {name!r} needs the argument(s) {', '.join(missing)}")
    try:
        text = str(prompt.render(given))
    except Exception as exc:
        raise MCPError(types.INTERNAL_ERROR, f"prompt {name!r} failed: {type(exc).__name__}: {exc}") from None
    if len(text) > MAX_TEXT:
        text = f"{text[:MAX_TEXT]}\n[… cut at {MAX_TEXT:,} characters]"
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
    return types.GetPromptResult(description=prompt.description or None, messages=[message])
