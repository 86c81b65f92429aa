"""Where skills are searched for this run, in precedence order (see ``crab_skills.discovery``).

The project's folder is the nearest ``.crab/skills`` from the workspace upwards, stopping at the
repository root (a folder with ``.git``); it is trusted only when that ``.crab`` folder is the one
whose ``config.toml`` the user trusted (``crab trust``). ``$CRAB_HOME`` is never a project.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from crab import Config
from crab.config import crab_home
from crab_frontmatter_kit import project_folder, project_trusted

from crab_skills.discovery import Root
from crab_skills.settings import Settings


def project_skills_dir(workspace: Path) -> Path | None:
    """The nearest ``.crab/skills`` folder from ``workspace`` up to the repository root, or None."""
    return project_folder(workspace, "skills")


def plugin_dirs(results: Iterable[tuple[str, object]]) -> list[tuple[str, Path]]:
    """(plugin, folder) from ``crab_skill_dirs`` answers; anything that is not a path is skipped."""
    found: list[tuple[str, Path]] = []
    for plugin, value in results:
        if value is None:
            continue
        items = value if isinstance(value, (list, tuple)) else [value]
        found.extend((plugin, Path(item)) for item in items if isinstance(item, (str, Path)))
    return found


def build_roots(
    workspace: Path, config: Config, settings: Settings, plugins: Sequence[tuple[str, Path]] = ()
) -> list[Root]:
    """Every root for this run, highest precedence first."""
    user = [Root(crab_home() / "skills", "user")]
    configured = [Root(path, "config") for path in settings.paths]
    shipped = [Root(path, f"plugin {name}") for name, path in plugins]
    project_dir = project_skills_dir(workspace) if settings.project else None
    if project_dir is None:
        return [*user, *configured, *shipped]
    if project_trusted(project_dir, config):
        return [Root(project_dir, "project", contained=True), *user, *configured, *shipped]
    return [*user, *configured, *shipped, Root(project_dir, "project", contained=True, trusted=False)]
