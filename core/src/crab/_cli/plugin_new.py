"""``crab plugin new NAME --kind KIND``: render the plugin template shipped in crab-core's wheel
(``crab/templates/plugin/``: ``common/`` for every kind, ``<kind>/`` its hook module, logic and tests,
``string.Template`` files); ``plugin-template/`` is its output for ``example``, held identical by a test."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from crab._contracts.errors import UsageError

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "plugin"
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
MAX_NAME = 40


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of plugin: the hook it shows, its implementation module, and its README text."""

    description: str
    """The example the template starts from (``NAME: a tool plugin for crab, from the word-count
    example``): what the code does until the author changes it, never the plugin's own purpose."""
    module: str
    what: str
    usage: str
    config: str


_NO_CONFIG = "This plugin declares no settings. To add some, see the `tool` kind's `crab_config_table`."
KINDS: dict[str, Kind] = {
    "tool": Kind(
        "word-count",
        "tools",
        "the tool `word_count` (permission `read`) and the command `/words PATH`.",
        'Ask the model to count words (`crab run "how many words are in README.md?"`), or type\n'
        "`/words README.md` in `crab chat`.",
        "```toml\n[plugins.${name}]\nmax_bytes = 1000000   # largest file word_count reads, in bytes\n```",
    ),
    "provider": Kind(
        "echo provider",
        "provider",
        "the model provider `${name}`, whose model `echo` answers with the user's last message.",
        '```sh\ncrab run --provider ${name} -m ${name}/echo "hello"\n```',
        _NO_CONFIG,
    ),
    "store": Kind(
        "JSON-file store",
        "store",
        "the session store `${name}`: one JSON file per session, rewritten atomically on each append.",
        '```sh\ncrab run --store ${name} "hello"      # or [crab] store = "${name}"\n```',
        "```toml\n[plugins.${name}]\n"
        'root = "~/.crab/${name}"   # where the session files go (default: $$CRAB_HOME/${name}); trust-only\n```',
    ),
    "channel": Kind(
        "line-input channel",
        "channel",
        "the channel `${name}`: each line of standard input is one turn; each answer is printed.",
        "```sh\nprintf 'hello\\nand again\\n' | crab serve ${name}\n```",
        _NO_CONFIG,
    ),
    "renderer": Kind(
        "one-line renderer",
        "renderer",
        "the renderer `${name}`: the answer as it streams, each tool call as one `[tool name]` line.",
        '```sh\ncrab run --set crab.renderer=${name} "hello"    # or [crab] renderer = "${name}"\n```',
        _NO_CONFIG,
    ),
    "command": Kind(
        "session-stats command",
        "command",
        "the command `/${name}`: how many messages this session holds, by role, and the tools loaded.",
        "Type `/${name}` in `crab chat` (or `crab run /${name}`).",
        _NO_CONFIG,
    ),
}
COMMON = {
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    "LICENSE": "LICENSE.tmpl",
    ".gitignore": "gitignore.tmpl",
}


def check_name(name: str) -> str:
    """The plugin name, or a ``UsageError`` saying what a good one looks like."""
    if name.startswith("crab-"):
        raise UsageError(f"plugin name {name!r}: leave out the crab- prefix (the distribution is crab-NAME)")
    if not NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise UsageError(
            f"plugin name {name!r}: use lower-case letters, digits and single hyphens, starting with a letter"
            f" (at most {MAX_NAME} characters), e.g. word-count"
        )
    return name


HTTP_KINDS = ("provider",)
"""Kinds whose real plugins speak HTTP: they depend on ``crab-core[http]`` (httpx and the provider kit)."""


def core_checkout() -> Path | None:
    """crab-core's source folder when crab runs from a checkout (an editable install), else None."""
    core = TEMPLATES.parents[3]
    pyproject = core / "pyproject.toml"
    try:
        return core if 'name = "crab-core"' in pyproject.read_text(encoding="utf-8") else None
    except OSError:
        return None


def installed_from(distribution: str) -> str | None:
    """Where pip installed ``distribution`` from, as pip takes it again: a local folder or file,
    an archive's URL or ``git+URL@COMMIT#subdirectory=…`` (PEP 610's ``direct_url.json``); None
    when it came from an index or a ``--find-links`` folder (pip records no place then)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        text = metadata.distribution(distribution).read_text("direct_url.json")
        data = json.loads(text or "null")
        url = data["url"]
    except (metadata.PackageNotFoundError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(url, str):
        return None
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        spec = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
        return spec + (f"#subdirectory={data['subdirectory']}" if data.get("subdirectory") else "")
    if url.startswith("file://"):
        return unquote(urlparse(url).path)
    return url


def core_install(folder: Path | None, kind: str = "tool") -> str:
    """What the new plugin's README installs crab from (pip arguments): this checkout's ``core``
    and ``testing`` folders (crab-core and crab-testing, which the test extra names; relative to
    the plugin's ``folder``; the provider kit's too for an HTTP kind), else
    the folder, file or URL pip installed them from, else exactly this crab-core's version (which
    pip finds only where crab came from: ``core_where`` says so), so its test command never
    takes whatever ``crab-core`` an index holds."""
    import os
    import shlex

    from crab._version import __version__

    core = core_checkout()
    if core is None:
        wanted = ["crab-core", "crab-testing", *(["crab-provider-kit"] if kind in HTTP_KINDS else [])]
        sources = [installed_from(name) for name in wanted]
        if all(sources):
            return " ".join(shlex.quote(str(source)) for source in sources)
        core_spec = shlex.quote(f"crab-core{'[http]' if kind in HTTP_KINDS else ''}=={__version__}")
        return f"{core_spec} crab-testing=={__version__}"
    where = (folder or Path.cwd()).resolve()
    folders = [core, core.parent / "testing", *([core.parent / "kits" / "provider-kit"] if kind in HTTP_KINDS else [])]
    shown = []
    for path in folders:
        relative = os.path.relpath(path, where)
        shown.append(shlex.quote(relative if relative.startswith(".") else f"./{relative}"))
    return " ".join(shown)


def core_where(install: str) -> str:
    """The README's words after ``core_install`` when it is a bare version pip must find somewhere."""
    if "==" not in install:
        return ""
    return (
        ", which no public index holds: add `--find-links FOLDER` (the folder of the wheels crab was "
        "installed from) or `--index-url` of your own index to the command"
    )


def values(name: str, kind: str, folder: Path | None = None) -> dict[str, str]:
    """What the templates' ``${...}`` stand for, for plugin ``name`` of ``kind`` written to ``folder``."""
    from crab._host.api_version import compatible_range
    from crab._version import __version__

    spec = KINDS[kind]
    core_major = int(__version__.split(".")[0])
    core = "crab-core[http]" if kind in HTTP_KINDS else "crab-core"
    base = {
        "name": name,
        "package": "crab_" + name.replace("-", "_"),
        "distribution": f"crab-{name}",
        "kind": kind,
        "description": f"{name}: a {kind} plugin for crab, from the {spec.description} example",
        "crab_api": compatible_range(),
        "core_requirement": f"{core}>={__version__},<{core_major + 1}",
        "testing_requirement": f"crab-testing>={__version__},<{compatible_range().rpartition('<')[2]}",
        "core_install": core_install(folder, kind),
    }
    base["core_where"] = core_where(base["core_install"])
    for key in ("what", "usage", "config"):
        base[key] = Template(getattr(spec, key)).substitute(base)
    return base


def render(name: str, kind: str, folder: Path | None = None) -> dict[str, str]:
    """Every file of the new plugin, by path relative to its ``folder`` (default: ./crab-NAME)."""
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}: pick one of {', '.join(KINDS)}")
    target = folder if folder is not None else Path.cwd() / f"crab-{check_name(name)}"
    subs = values(check_name(name), kind, target)
    package = subs["package"]
    sources = {path: TEMPLATES / "common" / template for path, template in COMMON.items()}
    sources[f"src/{package}/__init__.py"] = TEMPLATES / kind / "__init__.py.tmpl"
    sources[f"src/{package}/{KINDS[kind].module}.py"] = TEMPLATES / kind / f"{KINDS[kind].module}.py.tmpl"
    sources[f"tests/test_{package}.py"] = TEMPLATES / kind / "test.py.tmpl"
    files = {path: Template(source.read_text(encoding="utf-8")).substitute(subs) for path, source in sources.items()}
    files[f"src/{package}/py.typed"] = ""
    return files


def write_plugin(name: str, kind: str, folder: Path | None) -> Path:
    """Render into ``folder`` (default ``./crab-NAME``), which must be missing or empty."""
    target = folder if folder is not None else Path.cwd() / f"crab-{check_name(name)}"
    files = render(name, kind, target)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} already exists and is not empty: pick a new folder with --dir PATH")
    for path, text in files.items():
        out = target / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return target


def new_plugin(name: str, kind: str, folder: Path | None) -> None:
    """The command: render, then say what to do next."""
    import shlex
    import sys

    import typer

    target = write_plugin(name, kind, folder)
    typer.echo(f"created crab-{name} ({kind} plugin) in {target}")
    where = shlex.quote(str(target))
    # The [test] extra brings pytest, which crab's own environment need not have.
    extra = shlex.quote(f"{target}[test]")
    typer.echo(f"next: crab plugins install -e {extra} && {shlex.quote(sys.executable)} -m pytest -q {where}")
