"""A site folder for end-to-end tests: on ``PYTHONPATH`` it makes test plugins look pip-installed to
the real ``crab`` command: a scripted provider that replays a script file and logs every request,
and any plugin module a test adds (``ScriptedSite``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crab.testing.scripted import Reply, validate_script

MODULE = "crab_testing_site_provider"
"""The provider plugin's module in the site (one per site: each subprocess has its own path)."""

_PROVIDER = '''"""A provider plugin written by crab.testing.ScriptedSite: crab.testing's ScriptedProvider
replaying {script} (or the script file a model id names); every request is appended to {log} as
one JSON line (model, system, messages)."""

import json
import os
from pathlib import Path

import crab
from crab.testing import ScriptedProvider, load_script

SCRIPT = Path({script!r})
LOG = Path({log!r})
MODELS = {models!r}


class SiteScripted:
    name = {name!r}

    def __init__(self):
        self.engines = {{}}

    def models(self):
        return [crab.ModelInfo(provider=self.name, **model) for model in MODELS]

    def _script(self, model):
        # a model id that is a script file's absolute path replays that file: one process, one script
        return Path(model) if os.path.isabs(model) else SCRIPT

    def check(self, model):
        script = self._script(model)
        if not script.is_file():
            raise crab.ConfigError(f"{{self.name}}: no script at {{script}}; call ScriptedSite.script(replies)")

    def stream(self, request):
        script = self._script(request.model)
        if script not in self.engines:
            replies, loop = load_script(str(script))
            self.engines[script] = ScriptedProvider(replies, loop=loop, name=self.name)
        record = {{
            "model": request.model,
            "system": request.system,
            "messages": [crab.messages.message_to_dict(m) for m in request.messages],
        }}
        with LOG.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\\n")
        return self.engines[script].stream(request)


@crab.hookimpl
def crab_providers(config):
    return [SiteScripted()]
'''


class ScriptedSite:
    """Test plugins for a ``crab`` subprocess, in ``root/site``: a provider ``provider`` listing
    ``models``, under the entry point ``plugin`` (``provider`` unless given), that replays what
    ``script`` wrote and logs what it was sent (``requests``). ``env`` is the environment of a
    subprocess that loads the plugins you name and nothing else of the developer's.

    A model is an id or a mapping of ``crab.ModelInfo`` fields (``{"id": "big", "input_price":
    3.0}``). A model id that is an absolute path (``-m fake//tmp/…/script2.json``) replays that
    script file instead, so processes of one test can each have their own (``script(file=…)``).

    ``ScriptedSite(tmp_path).script([[{"text": "hi"}]])``, then
    ``subprocess.run([sys.executable, "-m", "crab", "run", "--provider", "fake", "-m", "script",
    "hello"], env=site.env("fake"))``. The ``crab_site`` fixture makes one in ``tmp_path``.
    """

    def __init__(
        self,
        root: Path,
        *,
        provider: str = "fake",
        models: Sequence[str | Mapping[str, Any]] = ("script",),
        plugin: str | None = None,
        context_window: int = 200_000,
    ) -> None:
        self.root = root
        self.path = root / "site"
        self.provider = provider
        self.models = tuple(model if isinstance(model, str) else str(model["id"]) for model in models)
        self.plugin = plugin or provider
        self.script_file = root / "script.json"
        self.log = root / "requests.jsonl"
        source = _PROVIDER.format(
            name=provider,
            models=[
                {"context_window": context_window, **({"id": model} if isinstance(model, str) else model)}
                for model in models
            ],
            script=str(self.script_file),
            log=str(self.log),
        )
        self.add_plugin(self.plugin, MODULE, source)

    def add_plugin(self, entry_point: str, module: str, source: str) -> Path:
        """Write ``source`` as the module ``module`` of the site, installed as the crab plugin
        ``entry_point`` (a ``*.dist-info`` folder, as pip leaves one). Returns the module's file."""
        self.path.mkdir(parents=True, exist_ok=True)
        file = self.path / f"{module}.py"
        file.write_text(source, encoding="utf-8")
        dist = self.path / f"{module}-0.0.1.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.1\n", encoding="utf-8")
        (dist / "entry_points.txt").write_text(f"[crab]\n{entry_point} = {module}\n", encoding="utf-8")
        return file

    def script(self, replies: Sequence[Reply], *, loop: bool = False, file: Path | None = None) -> Path:
        """Write the replies the provider gives, in order (crab.testing's script format, checked
        here so a typo fails the test, not the subprocess); ``loop`` starts over when they run out.
        Written to ``file`` instead of the site's script, it is replayed for the model id
        ``str(file)`` (absolute). Returns the file."""
        validate_script(replies)
        target = file or self.script_file
        target.write_text(json.dumps({"replies": list(replies), "loop": loop}), encoding="utf-8")
        return target

    def requests(self) -> list[dict[str, Any]]:
        """Every request the provider was sent so far: ``{"model", "system", "messages"}``, the
        messages as ``crab.messages.message_to_dict`` gives them."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line]

    def env(
        self, plugins: str | None = None, *, home: Path | None = None, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """This process's environment without crab's variables (and tmux's, so a screen test is not
        taken for a nested tmux), with the site on ``PYTHONPATH``, ``CRAB_HOME`` at ``home``
        (``root/home`` unless given), ``CRAB_PLUGINS`` set to ``plugins`` (the provider's entry
        point unless given) and ``extra`` on top."""
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TMUX"))}
        crab_home = home or self.root / "home"
        crab_home.mkdir(parents=True, exist_ok=True)
        environment.update(
            PYTHONPATH=str(self.path), CRAB_HOME=str(crab_home), CRAB_PLUGINS=plugins or self.plugin, **(extra or {})
        )
        return environment
