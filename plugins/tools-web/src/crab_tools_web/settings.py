"""The plugin's ``[plugins.tools-web]`` config table: its declaration, and the typed object read from it.

Core checks the table against ``TABLE`` and drops its trust-only keys when an untrusted project
config sets them (and a ``total_timeout`` longer than the user's: ``trust_filter``);
``load_settings`` turns checked values into ``WebSettings`` (and parses ``allow_hosts`` once, so
a bad entry is one config error, not a failure at fetch time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crab import ConfigTable, InvalidValue, Setting
from crab.config import validate_table

from crab_tools_web.seatbelt import AllowList, parse_allow_hosts

PLUGIN = "tools-web"
DEFAULT_BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
MAX_CHARS_CEILING = 100_000
"""The most characters one web_fetch call may return, whatever the config says."""
DEFAULT_TOTAL_TIMEOUT = 30.0


def _check(values: Mapping[str, Any]) -> None:
    try:
        parse_allow_hosts(values["allow_hosts"])
    except ValueError as exc:
        raise InvalidValue(
            ("plugins", PLUGIN, "allow_hosts"), f"host names, IP addresses or networks ({exc})", values["allow_hosts"]
        ) from None
    if values["default_max_chars"] > values["max_chars"]:
        raise InvalidValue(
            ("plugins", PLUGIN, "default_max_chars"),
            f"a number <= max_chars ({values['max_chars']})",
            values["default_max_chars"],
        )
    for key in ("searxng_url", "brave_url"):
        url = values.get(key)
        if url is not None and not url.lower().startswith(("http://", "https://")):
            raise InvalidValue(("plugins", PLUGIN, key), "an http:// or https:// URL", url)


def trust_filter(project: Mapping[str, Any], trusted: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """An untrusted project may shorten ``total_timeout``, never lengthen it past what the user's
    own layers give (the default when they give none): how long a page may keep a call busy,
    downloading, is the user's word."""
    asked, bound = project.get("total_timeout"), trusted.get("total_timeout", DEFAULT_TOTAL_TIMEOUT)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (asked, bound))
    # a value that is no number is left for validation to report, naming the file it came from
    return [("total_timeout",)] if numbers and asked > bound else []


TABLE = ConfigTable(
    name=PLUGIN,
    doc="web_fetch and web_search",
    settings=(
        Setting(
            "allow_hosts",
            "list[str]",
            [],
            "host names, IPs or networks (CIDR) web_fetch may reach although they are private/loopback",
            trust_only=True,
        ),
        Setting(
            "max_bytes",
            "int",
            3_000_000,
            "the most bytes of a page web_fetch downloads",
            minimum=1024,
            maximum=100_000_000,
        ),
        Setting(
            "max_chars",
            "int",
            50_000,
            "the most characters one web_fetch call returns",
            minimum=100,
            maximum=MAX_CHARS_CEILING,
        ),
        Setting(
            "default_max_chars", "int", 20_000, "characters web_fetch returns when the model names none", minimum=100
        ),
        Setting("max_redirects", "int", 5, "redirects web_fetch follows (each one re-checked)", minimum=0, maximum=20),
        Setting("connect_timeout", "float", 10.0, "seconds to open a connection", above=0, maximum=600),
        Setting(
            "read_timeout", "float", 20.0, "seconds to wait for the next bytes from a server", above=0, maximum=600
        ),
        Setting(
            "total_timeout",
            "float",
            DEFAULT_TOTAL_TIMEOUT,
            "seconds one web_fetch or web_search call may take in all (an untrusted project may only shorten it)",
            above=0,
            maximum=600,
        ),
        Setting(
            "search_backend",
            "str",
            "auto",
            "which search back-end web_search uses",
            choices=("auto", "searxng", "brave"),
        ),
        Setting(
            "searxng_url",
            "str",
            doc="a SearXNG instance (its JSON API must be enabled); reached even on a private address",
            trust_only=True,
        ),
        Setting(
            "brave_api_key_env",
            "str",
            "BRAVE_SEARCH_API_KEY",
            "environment variable holding a Brave Search API key",
            trust_only=True,
        ),
        Setting(
            "brave_url", "str", DEFAULT_BRAVE_URL, "the Brave Search API endpoint the key is sent to", trust_only=True
        ),
        Setting("max_results", "int", 10, "the most results one web_search call returns", minimum=1, maximum=50),
    ),
    check=_check,
    trust_filter=trust_filter,
)


@dataclass(frozen=True, slots=True)
class WebSettings:
    """What an operator may configure; every field has a safe default."""

    allow: AllowList = field(default_factory=AllowList)
    max_bytes: int = 3_000_000
    max_chars: int = 50_000
    default_max_chars: int = 20_000
    max_redirects: int = 5
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT
    search_backend: str = "auto"
    searxng_url: str | None = None
    brave_api_key_env: str = "BRAVE_SEARCH_API_KEY"
    brave_url: str = DEFAULT_BRAVE_URL
    max_results: int = 10


def load_settings(table: Mapping[str, Any] | None) -> WebSettings:
    """The table as ``WebSettings``; checked against ``TABLE`` again (tests hand raw tables)."""
    values = validate_table(TABLE, table)
    return WebSettings(
        allow=parse_allow_hosts(values["allow_hosts"]),
        max_bytes=values["max_bytes"],
        max_chars=values["max_chars"],
        default_max_chars=values["default_max_chars"],
        max_redirects=values["max_redirects"],
        connect_timeout=values["connect_timeout"],
        read_timeout=values["read_timeout"],
        total_timeout=values["total_timeout"],
        search_backend=values["search_backend"],
        searxng_url=values.get("searxng_url"),
        brave_api_key_env=values["brave_api_key_env"],
        brave_url=values["brave_url"],
        max_results=values["max_results"],
    )
