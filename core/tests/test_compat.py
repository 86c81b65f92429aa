"""API 1.x compatibility: every module path and name that moved (into core's subpackages or a kit) still imports."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest
from crab import _compat


@pytest.mark.parametrize(("old", "new"), sorted(_compat.MOVED.items()))
def test_an_old_module_path_is_the_module_that_moved_with_a_warning(old: str, new: str) -> None:
    target = importlib.import_module(new)
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    if old == "crab.render":  # was a package, is a module now: a package stands for it
        assert module.Renderer is target.Renderer
    else:
        assert module is target


def test_importing_from_an_old_path_gives_the_same_objects() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from crab.loop.agent import Agent as OldAgent  # type: ignore[import-not-found]
        from crab.tools import Tool as OldTool  # type: ignore[import-not-found]
    from crab._contracts.tools import Tool
    from crab._loop.agent import Agent

    assert OldTool is Tool
    assert OldAgent is Agent


def test_a_module_under_an_old_package_path_is_not_loaded_twice() -> None:
    # `crab.loop` names the package crab._loop; without the finder first on sys.meta_path the
    # path finder would load crab/_loop/turn.py again as a second module `crab.loop.turn`.
    code = (
        "import warnings; warnings.simplefilter('ignore');"
        "import crab.loop.turn as old, crab._loop.turn as new; print(old is new)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "True"


def test_an_unknown_crab_module_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("crab.no_such_module")


@pytest.mark.parametrize(("name", "kit"), sorted(_compat.MOVED_NAMES.items()))
def test_a_crab_name_that_moved_to_a_kit_is_the_kits_with_a_warning(name: str, kit: str) -> None:
    import crab

    crab.__dict__.pop(name, None)
    with pytest.warns(DeprecationWarning, match=f"crab.{name} moved to {kit}"):
        value = getattr(crab, name)
    assert value is getattr(importlib.import_module(kit), name)
    assert name not in crab.__all__  # moved names are not re-exported by `from crab import *`


def test_a_moved_module_whose_kit_is_missing_says_which_kit_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "crab.jobs", raising=False)
    monkeypatch.setitem(sys.modules, "crab_jobs_kit", None)  # as if crab-jobs-kit were not installed
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module("crab.jobs")
    assert str(info.value) == (
        "crab.jobs moved to the kit crab-jobs-kit (import crab_jobs_kit), which is not installed: "
        "pip install crab-jobs-kit"
    )


def test_a_moved_name_whose_kit_is_missing_says_which_kit_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import crab

    monkeypatch.delitem(crab.__dict__, "store_payload", raising=False)
    monkeypatch.setitem(sys.modules, "crab_sql_kit", None)
    with pytest.raises(
        ModuleNotFoundError, match=r"^crab\.store_payload moved to the kit crab-sql-kit .*: pip install crab-sql-kit$"
    ):
        crab.store_payload  # noqa: B018


def test_postgres_dsn_still_reads_the_variable_with_a_warning() -> None:
    import crab

    crab.__dict__.pop("postgres_dsn", None)
    with pytest.warns(DeprecationWarning, match="crab-store-postgres reads CRAB_POSTGRES_DSN itself"):
        read = crab.postgres_dsn
    assert read({"CRAB_POSTGRES_DSN": " postgresql://h/db "}) == "postgresql://h/db"
    assert read({"CRAB_POSTGRES_DSN": " "}) is None


def test_an_unknown_crab_name_is_still_an_attribute_error() -> None:
    import crab

    with pytest.raises(AttributeError, match="module 'crab' has no attribute 'no_such_name'"):
        crab.no_such_name  # noqa: B018


def test_a_plugin_written_for_api_1_2_offering_a_hook_core_used_to_declare_still_works() -> None:
    # Before 1.3 core declared crab_job_stores and crab_skill_dirs; now crab-schedule and crab-skills
    # do. A 1.2 plugin implementing them loads with or without the declaring plugin, unchanged.
    import types

    import crab
    from crab.testing import build_host

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from crab.jobs import JobStore  # what a 1.2 plugin imported

    @crab.hookimpl
    def crab_job_stores(config: crab.Config) -> list[object]:
        return ["a job store"]

    offering = types.SimpleNamespace(CRAB_API=">=1.2,<2", crab_job_stores=crab_job_stores)
    alone = build_host({"offering": offering})
    assert alone.records["offering"].status == "loaded" and alone.failures == []

    class Declares:
        @crab.hookspec
        def crab_job_stores(self, config: crab.Config) -> list[JobStore] | None:
            """Job stores."""

    declarer = types.SimpleNamespace(CRAB_API=">=1.3,<2", CRAB_HOOKSPECS=Declares)
    both = build_host({"offering": offering, "schedule": declarer})
    assert both.dispatch.collect("crab_job_stores", config=both.config) == [("offering", ["a job store"])]


@pytest.mark.parametrize(("old", "new"), sorted(_compat.MOVED.items()))
def test_an_old_path_leaves_the_module_its_own_spec(old: str, new: str) -> None:
    # importlib sets the old path's spec on whatever the loader hands back: crab._cli then had
    # the spec `crab.cli`, no search locations, and importlib.resources said it was no package.
    target = importlib.import_module(new)
    spec = target.__spec__
    sys.modules.pop(old, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module(old)
    assert target.__spec__ is spec
    assert target.__spec__.name == new


def test_a_package_imported_by_its_old_path_is_still_a_package_to_importlib_resources() -> None:
    import importlib.resources

    sys.modules.pop("crab.cli", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module("crab.cli")
    assert importlib.resources.files("crab._cli").joinpath("app.py").is_file()


def _unlisted_submodules() -> list[tuple[str, str]]:
    import pkgutil

    pairs = []
    for old in sorted(_compat._OLD_PACKAGES):
        new = _compat.MOVED[old]
        package = importlib.import_module(new)
        for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
            if f"{old}.{info.name}" not in _compat.MOVED:
                pairs.append((f"{old}.{info.name}", f"{new}.{info.name}"))
    return pairs


@pytest.mark.parametrize(("old", "new"), _unlisted_submodules())
def test_a_module_under_an_old_package_not_listed_is_still_not_loaded_twice(old: str, new: str) -> None:
    # crab.cli.app, crab.loop.model_call: the path finder found the file again through the moved
    # package's __path__ and ran it a second time as a module of its own (two of every class).
    target = importlib.import_module(new)
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is target
