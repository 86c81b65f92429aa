"""``crab._host.entry_points`` lists what ``importlib.metadata`` lists, from the same files."""

from __future__ import annotations

from importlib.metadata import entry_points as importlib_entry_points
from pathlib import Path

from crab._host.entry_points import entry_points, parse_entry_points


def dist_info(site: Path, folder: str, name: str, version: str, entry_points_txt: str | None) -> None:
    path = site / folder
    path.mkdir(parents=True)
    (path / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-this\n")
    if entry_points_txt is not None:
        (path / "entry_points.txt").write_text(entry_points_txt)


def as_tuples(eps) -> list[tuple[str, str, str, str]]:
    return sorted((ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in eps)


def test_folders_in_path_order_first_copy_of_a_distribution_wins(tmp_path: Path):
    first, second = tmp_path / "first", tmp_path / "second"
    dist_info(first, "crab_one-1.0.dist-info", "crab-one", "1.0", "[crab]\none = crab_one\n\n[other]\nx = y\n")
    dist_info(first, "crab_two-2.0.dist-info", "crab-two", "2.0", "# comment\n[crab]\ntwo = crab_two:plugin [extra]\n")
    dist_info(first, "plain-3.0.dist-info", "plain", "3.0", None)
    dist_info(second, "crab_one-0.9.dist-info", "crab-one", "0.9", "[crab]\none = old_one\n")  # shadowed
    dist_info(second, "Crab.Egg-1.0.egg-info", "Crab.Egg", "1.0", "[crab]\negg = crab_egg\n")
    (tmp_path / "a-file").write_text("")
    paths = [str(first), str(second), str(tmp_path / "missing"), str(tmp_path / "a-file")]
    assert as_tuples(entry_points("crab", paths)) == [
        ("egg", "crab_egg", "Crab.Egg", "1.0"),
        ("one", "crab_one", "crab-one", "1.0"),
        ("two", "crab_two:plugin [extra]", "crab-two", "2.0"),
    ]


def test_the_installed_plugins_are_what_importlib_metadata_lists():
    assert as_tuples(entry_points("crab")) == as_tuples(importlib_entry_points(group="crab"))


def test_load_imports_the_target_and_walks_attributes(tmp_path: Path, monkeypatch):
    (tmp_path / "crab_fake_target.py").write_text("class plugin:\n    inner = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    (ep,) = parse_entry_points("[crab]\nx = crab_fake_target:plugin.inner [extra]\n", "crab")
    assert ep.load() == 42


def test_malformed_lines_are_skipped():
    text = "[crab]\nno equals sign\n = nothing\nname =\n[crab\nok = module\n"
    assert [(ep.name, ep.value) for ep in parse_entry_points(text, "crab")] == [("ok", "module")]
