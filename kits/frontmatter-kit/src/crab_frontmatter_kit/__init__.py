"""crab-frontmatter-kit: Markdown files with front matter that users write to define things.

Skills (crab-skills), agents (crab-subagents) and the user's own commands are such files, found in
``$CRAB_HOME/<kind>`` and a project's ``.crab/<kind>``. This kit reads them (``split``: a
documented YAML subset, no PyYAML) and finds their folders with crab's trust rules
(``project_folder``, ``project_trusted``), so no plugin copies another's reader. A kit, not a
plugin: no entry point.
"""

from __future__ import annotations

from crab_frontmatter_kit._document import Document, FrontMatterError, split
from crab_frontmatter_kit._folders import project_folder, project_trusted, user_folder

__all__ = ["Document", "FrontMatterError", "project_folder", "project_trusted", "split", "user_folder"]
