"""``crab plugins list|enable|disable|install|uninstall``: statuses, and edits to ``[plugins]`` that keep
comments; ``list`` runs before typer loads and calls no hook, so it stays cheap (``bench/startup.py``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from crab._contracts.errors import CrabError, PluginError

if TYPE_CHECKING:
    from crab._assembly.last_run import Remembered
    from crab._host.plugin_host import PluginRecord

BUILTINS = ("core", "loop-guard", "tool-view", "permissions")
"""Core's own plugins (``crab._builtin.core_plugin.register_builtins``), always on: listed by name,
since importing them would load the loop's contracts (``test_plugins_list.py`` keeps the two in step)."""

NOT_CALLED = (
    "hooks are not called here, but a plugin the last run saw fail is shown failed: `crab doctor` calls "
    "each one, crab_startup included, and shows any that fails"
)


def _echo(text: str, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


def list_arguments(args: Sequence[str]) -> tuple[str | None, bool] | None:
    """``--plugins X`` and ``--json`` of ``crab plugins list ARGS``; None for anything else (``--help``,
    a typo), which the typer app then answers as for any command."""
    plugins: str | None = None
    as_json = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            as_json = True
        elif arg == "--plugins" and rest:
            plugins = rest.pop(0)
        elif arg.startswith("--plugins="):
            plugins = arg.removeprefix("--plugins=")
        else:
            return None
    return plugins, as_json


def plugin_records(plugins: str | None) -> tuple[list[PluginRecord], list[str], str | None]:
    """Every plugin's status as loading computes it for any command (``PluginHost.load_entry_points``:
    found, chosen, imported, ``CRAB_API`` checked, every hook known), no hook called; then the
    failure lines, and the config error if the config could not be read."""
    from dataclasses import replace

    from crab._assembly.last_run import applied
    from crab._assembly.plugin_choice import choose_plugins, parse_plugin_list
    from crab._config.layers import load_config
    from crab._config.paths import user_config_path
    from crab._contracts.config import Config
    from crab._host.plugin_host import PluginHost
    from crab._version import __version__

    try:
        config = load_config()
        config_error = None
    except CrabError as exc:  # still list plugins with a broken config
        config, config_error = Config(data={}, user_path=user_config_path(), project_path=None), str(exc)
    host = PluginHost(config, strict=False)
    for name in BUILTINS:  # stand-ins holding the names, so a plugin taking one fails here as in a run
        host.add_builtin(name, _BuiltinName())
    host.load_entry_points(choose_plugins(config, None if plugins is None else parse_plugin_list(plugins)))
    remembered = _last_run()
    records = [
        replace(r, version=__version__) if r.name in BUILTINS and r.status == "builtin" else applied(r, remembered)
        for r in host.records.values()
    ]
    return records, [f.line for f in host.failures], config_error


def _last_run() -> dict[str, Remembered]:
    """What the last run saw fail (``crab._assembly.last_run``): no hook is called here, so a plugin that
    loads fine but failed when its hooks ran is shown as the run saw it."""
    from crab._assembly.last_run import failures_file, read
    from crab._config import environ

    try:
        return read(failures_file(environ.crab_home()))
    except CrabError:  # no home folder: nothing was remembered
        return {}


class _BuiltinName:
    """Stands for one of core's built-in plugins in the listing (no hooks: the real one is not imported)."""


def status_lines(records: Sequence[PluginRecord], indent: str = "") -> list[str]:
    """Each plugin's name, status and distribution, then why it is not loaded or its hooks: the one
    way ``crab plugins list`` and ``crab doctor`` show the statuses a host computed."""
    width = max((len(r.name) for r in records), default=0)
    lines = []
    for record in records:
        dist = f"{record.distribution or '-'} {record.version or ''}".strip()
        lines.append(f"{indent}{record.name:<{width}}  {record.status:<8}  {dist}")
        if record.reason:
            lines.append(f"{indent}{'':<{width}}  ↳ {record.reason}")
        elif record.hooks:
            lines.append(f"{indent}{'':<{width}}  hooks: {', '.join(record.hooks)}")
    return lines


def list_plugins(plugins: str | None, as_json: bool) -> int:
    """Show each plugin's status; returns the exit code (2 under ``CRAB_STRICT_PLUGINS=1`` when one
    failed, with the first failure's line, as it ends every command)."""
    from crab._config import environ

    records, failures, config_error = plugin_records(plugins)
    if as_json:
        import json

        _echo(json.dumps([r.to_dict() for r in records], indent=2))
    else:
        for line in status_lines(records):
            _echo(line)
        if any(r.hooks for r in records):
            _echo(f"({NOT_CALLED})")
    if config_error:
        _error(config_error)
    if environ.strict_plugins() and failures:
        return _error(failures[0], PluginError.exit_code)
    return 0


def _error(text: str, code: int = 0) -> int:
    """One ``crab: …`` line on stderr, secrets masked, as ``run_app`` prints a ``CrabError``."""
    from crab._cli.errors import error_line

    _echo(error_line(f"crab: {text}"), err=True)
    return code


def run_list(args: Sequence[str]) -> int | None:
    """``crab plugins list ARGS`` before typer loads; None when ARGS are for typer to answer."""
    parsed = list_arguments(args)
    if parsed is None:
        return None
    try:
        return list_plugins(*parsed)
    except CrabError as exc:
        return _error(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader stopped early (``| head``): point stdout at /dev/null so the interpreter's
        # last flush does not complain, as the Python docs advise.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def set_enabled(name: str, enable: bool, project: bool, user: bool) -> None:
    """Enable or disable ``name`` in a config file. A project's ``disabled`` applies untrusted
    (narrowing); its ``enabled`` only once trusted. A trusted project edited here stays trusted
    (the user's own word), as ``crab config set`` keeps it."""
    from crab._cli.config_files import target_file, update_plugin_lists
    from crab._config import trust
    from crab._config.layers import load_config
    from crab._contracts.errors import UsageError

    if project and user:
        raise UsageError("--project and --user: pick one")
    config = load_config()
    path = target_file("project" if project else "user" if user else None, config.project_path)
    in_project = path != config.user_path
    was_trusted = in_project and config.trust is not None and config.trust.trusted and path == config.project_path
    update_plugin_lists(path, name, enable)
    if was_trusted:
        trust.trust(path)
    done = f"{'enabled' if enable else 'disabled'} {name} in {path}"
    if enable and in_project and not was_trusted:
        done += f"; a project's enabled list applies once you trust it (`{trust.trust_command(path)}`)"
    _echo(done)


# --- crab plugins install / uninstall ---------------------------------------------------------
# pip runs in crab's own environment (sys.executable), so what it installs is what crab finds.
# No plugin is imported here: the names come from the installed entry points (crab/_host/entry_points.py),
# so both commands work while another installed plugin is broken.


def _installed() -> dict[str, tuple[str, str]]:
    """Every installed plugin: name → (distribution, version), read from metadata only."""
    from crab._host.entry_points import entry_points

    return {ep.name: (ep.dist.name, ep.dist.version) if ep.dist else ("", "") for ep in entry_points("crab")}


def _normalized(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _pip(args: list[str]) -> int:
    """Run ``python -m pip ARGS`` in crab's environment, its output shown (redacted) as it comes."""
    import subprocess
    import sys

    from crab._secrets.keys import known_secrets
    from crab._secrets.redaction import Redactor

    redactor = Redactor(known_secrets())
    command = [sys.executable, "-m", "pip", *args]
    _echo(f"$ python -m pip {' '.join(args)}", err=True)
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, errors="replace"
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            _echo(redactor.text(line.rstrip("\n")), err=True)
    return process.returncode


def pip_spec(spec: str) -> str:
    """What pip is given for ``spec``: a bare plugin name means its distribution (``tools-basic`` →
    ``crab-tools-basic``), so a plugin's name never installs an unrelated package of that name."""
    import re
    from pathlib import Path

    bare = re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", spec) is not None
    return f"crab-{spec}" if bare and not spec.startswith("crab-") and not Path(spec).exists() else spec


def spec_distribution(spec: str) -> str:
    """The distribution a pip ``spec`` names, as far as crab can tell without pip: a wheel's file
    name, a folder's ``[project] name``, else the requirement's name (extras and versions cut off),
    so installing a plugin that is already installed (an author reinstalling a folder) still
    counts as installing it."""
    import re
    import tomllib
    from pathlib import Path

    bare = re.sub(r"\[[^\]]*\]$", "", spec.strip())
    path = Path(bare)
    if path.suffix == ".whl":
        return _normalized(path.name.split("-")[0])
    if path.is_dir():
        try:
            name = tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
        except (OSError, ValueError, KeyError, TypeError):
            return ""
        return _normalized(str(name))
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", bare)
    return _normalized(match.group(0)) if match else ""


def install_plugins(specs: list[str], editable: bool, upgrade: bool) -> None:
    """pip-install ``specs`` (names, paths, wheels) and enable the crab plugins they add in the user config."""
    from crab._cli.config_files import update_plugin_lists
    from crab._config.layers import read_toml
    from crab._config.paths import user_config_path
    from crab._contracts.errors import UsageError

    specs = [pip_spec(spec) for spec in specs]
    path = user_config_path()
    read_toml(path)  # a malformed config fails now, before pip changes anything
    before = _installed()
    args = ["install", *(["--upgrade"] if upgrade else [])]
    for spec in specs:
        args.extend(["--editable", spec] if editable else [spec])
    code = _pip(args)
    if code != 0:
        raise CrabError(f"pip install failed (exit {code}); nothing was recorded in {path}")
    after = _installed()
    wanted = {spec_distribution(spec) for spec in specs} - {""}
    added = sorted(name for name, (dist, _) in after.items() if name not in before or _normalized(dist) in wanted)
    if not added:
        raise UsageError(f"pip installed {' '.join(specs)}, but it adds no crab plugin (no entry point in group crab)")
    enabled = read_toml(path).get("plugins", {}).get("enabled")
    for name in added:
        dist, version = after[name]
        update_plugin_lists(path, name, True)
        where = (
            f"enabled in {path}"
            if enabled is not None
            else "it loads, as every installed plugin does while [plugins] enabled is not set"
        )
        _echo(f"installed plugin {name} ({dist} {version}); {where}")


def uninstall_plugins(names: list[str]) -> None:
    """pip-uninstall the distributions of the named plugins (or distributions); forget them in the user config."""
    from crab._cli.config_files import forget_plugin
    from crab._config.paths import user_config_path
    from crab._contracts.errors import UsageError

    installed = _installed()
    dists: dict[str, list[str]] = {}
    for name in names:
        matches = [p for p, (dist, _) in installed.items() if p == name or _normalized(dist) == _normalized(name)]
        if _normalized(name) == "crab-core":
            raise UsageError("crab-core is crab itself: uninstall it with pip")
        if not matches:
            raise UsageError(f"no installed plugin or distribution {name!r}; `crab plugins list` shows the names")
        for plugin in matches:
            dists.setdefault(installed[plugin][0], []).append(plugin)
    code = _pip(["uninstall", "--yes", *dists])
    if code != 0:
        raise CrabError(f"pip uninstall failed (exit {code})")
    path = user_config_path()
    for dist, plugins in dists.items():
        for plugin in sorted(set(plugins) | {p for p, (d, _) in installed.items() if d == dist}):
            forgot = forget_plugin(path, plugin)
            _echo(f"uninstalled plugin {plugin} ({dist})" + (f"; removed from {path}" if forgot else ""))
