"""``crab --version``: core's version, then each installed plugin's distribution and version, read from
metadata (never importing a plugin, so a broken one cannot break it)."""

from __future__ import annotations


def version_lines() -> list[str]:
    """``crab X.Y.Z`` then one ``distribution version  (plugin names)`` line per installed plugin."""
    from crab._host.entry_points import entry_points
    from crab._version import __version__

    plugins: dict[tuple[str, str], list[str]] = {}
    for point in entry_points("crab"):
        dist = (point.dist.name, point.dist.version) if point.dist else ("(unknown distribution)", "")
        plugins.setdefault(dist, []).append(point.name)
    lines = [f"crab {__version__}"]
    for (name, version), names in sorted(plugins.items()):
        lines.append(f"  {name} {version}  ({', '.join(sorted(names))})")
    return lines
