"""``crab skills list`` and ``crab skills show NAME``: the skills this folder's run would see.

The config and plugins are loaded as a command loads them (``crab.hooks.collect_hook``), so an
untrusted project's trust-only keys are dropped here too; every printed line is redacted.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from crab.hooks import collect_hook
from crab.secrets import Redactor, known_secrets

from crab_skills.content import loaded
from crab_skills.discovery import Catalog
from crab_skills.roots import plugin_dirs
from crab_skills.runtime import HOOK, catalog_for, did_you_mean
from crab_skills.settings import Settings


def _load() -> tuple[Catalog, Settings, Redactor]:
    found = collect_hook(HOOK)
    redactor = Redactor(known_secrets(found.config))
    catalog, settings = catalog_for(Path.cwd(), found.config, plugin_dirs(found.results))
    for line in [*found.warnings, *catalog.warnings]:
        sys.stderr.write(redactor.text(f"warning: {line}") + "\n")
    return catalog, settings, redactor


def list_skills(as_json: bool) -> int:
    catalog, _, redactor = _load()
    skills = list(catalog.skills.values())
    if as_json:
        rows = [{"name": s.name, "source": s.label, "description": s.description, "path": str(s.file)} for s in skills]
        print(json.dumps(redactor.payload(rows), ensure_ascii=False, indent=2))
        return 0
    if not skills:
        print("no skills (put SKILL.md folders in .crab/skills/ or $CRAB_HOME/skills/)")
        return 0
    width = max(shutil.get_terminal_size((100, 24)).columns, 60)
    name_w = max(4, *(len(s.name) for s in skills))
    source_w = max(6, *(len(s.label) for s in skills))
    print(f"{'NAME':<{name_w}}  {'SOURCE':<{source_w}}  DESCRIPTION")
    room = max(width - name_w - source_w - 4, 20)
    for s in skills:
        text = s.description if len(s.description) <= room else s.description[: room - 1] + "…"
        print(redactor.text(f"{s.name:<{name_w}}  {s.label:<{source_w}}  {text}"))
    return 0


def show_skill(name: str) -> int:
    catalog, settings, redactor = _load()
    skill = catalog.get(name)
    if skill is None:
        sys.stderr.write(f"crab: no skill named {name!r}.{did_you_mean(name, catalog)} See `crab skills list`.\n")
        return 1
    try:
        text = loaded(skill, settings.max_bytes)
    except OSError as exc:
        sys.stderr.write(f"crab: cannot read skill {name!r}: {exc.strerror or exc}\n")
        return 1
    print(redactor.text(text))
    return 0
