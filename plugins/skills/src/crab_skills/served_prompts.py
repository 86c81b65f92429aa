"""Skills as prompts for whoever serves ``crab_prompts`` (crab-mcp's hook: ``crab mcp serve``
offers them as MCP prompts), without importing crab-mcp.

Each skill of the folder crab runs in becomes a prompt of the same name and description, with
one optional argument, ``request``; its text is what ``/skill:NAME request`` makes the user's
turn (``crab_skills.content.user_turn``: the skill in a tag that names its source, then the
request), so a client's user sees the same guidance-only framing. Skills shipped by other
plugins (``crab_skill_dirs``) are not collected here, only the user's and the project's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crab import Config

from crab_skills.content import user_turn
from crab_skills.discovery import Skill
from crab_skills.runtime import catalog_for

REQUEST = {"name": "request", "description": "what to do with the skill (optional)", "required": False}


def _render(skill: Skill, max_bytes: int) -> Any:
    def render(arguments: Mapping[str, str]) -> str:
        return user_turn(skill, max_bytes, str(arguments.get("request") or ""))

    return render


def prompts(config: Config, workspace: Path | None = None) -> list[dict[str, Any]]:
    """One prompt per skill found for ``workspace`` (the current folder by default)."""
    catalog, settings = catalog_for(workspace or Path.cwd(), config, [])
    return [
        {
            "name": skill.name,
            "description": skill.description if skill.trusted else f"{skill.description} ({skill.label})",
            "arguments": [REQUEST],
            "render": _render(skill, settings.max_bytes),
        }
        for skill in catalog.skills.values()
    ]
