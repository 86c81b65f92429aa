"""The configurations a suite runs against: a model and its overrides, each with a stable label.

``-m MODEL[,KEY=VALUE…][,prompt=FILE]`` is one configuration; ``--set`` and ``--prompt-file`` apply
to all of them. ``--scripted`` is the one configuration ``scripted``: each task's own solution
on the mock provider. The label is what ``--resume`` matches finished runs by.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import crab

SCRIPTED = "scripted"


@dataclass(frozen=True)
class Configuration:
    label: str
    model: str | None
    sets: tuple[str, ...] = ()
    prompt_file: Path | None = None

    @property
    def scripted(self) -> bool:
        return self.label == SCRIPTED and self.model is None

    @property
    def fingerprint(self) -> str:
        """Changes with anything that changes the runs (a finished run is resumed only on a match)."""
        prompt = read_prompt(self.prompt_file) if self.prompt_file is not None else None
        text = json.dumps([self.label, self.model, list(self.sets), prompt])
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def run_arguments(self) -> list[str]:
        """``crab run`` options for this configuration (its model is added per task when scripted)."""
        arguments = ["-m", self.model] if self.model else []
        for item in self.sets:
            arguments += ["--set", item]
        if self.prompt_file is not None:
            arguments += ["--set", f"crab.system_prompt_append={read_prompt(self.prompt_file)}"]
        return arguments


def read_prompt(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise crab.UsageError(f"cannot read the prompt file {path}: {exc}") from None


def _checked_set(item: str, where: str) -> str:
    key, sep, _ = item.partition("=")
    if not sep or not key or "." not in key:
        raise crab.UsageError(f"{where} {item!r}: write KEY=VALUE with a dotted key, e.g. crab.tool_view=full")
    return item


def configurations(models: list[str], sets: list[str], prompt_file: str | None, scripted: bool) -> list[Configuration]:
    common = tuple(_checked_set(item, "--set") for item in sets)
    prompt = Path(prompt_file).expanduser().resolve() if prompt_file else None
    if prompt is not None:
        read_prompt(prompt)
    if scripted:
        if models:
            raise crab.UsageError("--scripted runs each task's own solution: leave out -m")
        return [Configuration(SCRIPTED, None, common, prompt)]
    if not models:
        return [Configuration("default", None, common, prompt)]
    found: list[Configuration] = []
    for spec in models:
        model, *extras = [part.strip() for part in spec.split(",")]
        if not model or "=" in model:
            raise crab.UsageError(f"-m {spec!r}: start with the model, e.g. -m openai/gpt-4.1-mini,crab.tool_view=full")
        own_prompt = prompt
        own_sets = list(common)
        for extra in extras:
            if extra.startswith("prompt="):
                own_prompt = Path(extra.removeprefix("prompt=")).expanduser().resolve()
                read_prompt(own_prompt)
            else:
                own_sets.append(_checked_set(extra, f"-m {spec!r}:"))
        if any(c.label == spec for c in found):
            raise crab.UsageError(f"-m {spec!r} is given twice")
        found.append(Configuration(spec, model, tuple(own_sets), own_prompt))
    return found
