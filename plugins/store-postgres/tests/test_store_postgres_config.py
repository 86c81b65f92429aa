"""Where the DSN comes from, how the server is named, and one clear line when it cannot be reached."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from crab import StoreError
from crab.secrets import Redactor, known_secrets
from crab_store_postgres import PostgresStore
from crab_store_postgres.dsn import find_dsn, redact_dsn, server_name

PASSWORD = "pelican-s3cret-pw"
CRAB = Path(sys.executable).with_name("crab")


def test_dsn_comes_from_the_environment_then_the_auth_file_then_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))
    configured = {"dsn": "postgresql://config@db/crab"}
    assert find_dsn(configured, env={}).setting == "[plugins.store-postgres] dsn"
    (tmp_path / "auth.json").write_text(json.dumps({"postgres": "postgresql://auth@db/crab"}), encoding="utf-8")
    found = find_dsn(configured, env={})
    assert (found.dsn, found.setting) == (
        "postgresql://auth@db/crab",
        f'the "postgres" entry of {tmp_path / "auth.json"}',
    )
    found = find_dsn(configured, env={"CRAB_POSTGRES_DSN": "postgresql://env@db/crab"})
    assert (found.dsn, found.setting) == ("postgresql://env@db/crab", "CRAB_POSTGRES_DSN")
    (tmp_path / "auth.json").unlink()
    missing = find_dsn({}, env={})
    assert missing.dsn is None
    assert "CRAB_POSTGRES_DSN" in missing.setting and "[plugins.store-postgres] dsn" in missing.setting


def test_passwords_are_redacted_in_both_dsn_forms() -> None:
    url = f"postgresql://crab:{PASSWORD}@db.example:6543/crab?sslmode=require"
    assert PASSWORD not in redact_dsn(url) and "db.example:6543" in redact_dsn(url)
    keywords = f"host=db.example port=6543 password='{PASSWORD}' dbname=crab"
    assert PASSWORD not in redact_dsn(keywords)
    assert server_name(url) == "db.example:6543, database crab"
    assert server_name(keywords) == "db.example:6543, database crab"
    assert server_name("host=/run/postgresql dbname=x") == "/run/postgresql port 5432, database x"
    # crab's own redaction knows DSNs too: the whole string, and the password alone.
    secrets = known_secrets(env={"CRAB_POSTGRES_DSN": url})
    assert Redactor(secrets).text(f"{url} and {PASSWORD}").count(PASSWORD) == 0
    assert Redactor(known_secrets(env={"X_DSN": keywords})).text(f"pw {PASSWORD}") == "pw [redacted]"


def test_an_unreachable_server_is_one_line_naming_host_and_setting() -> None:
    store = PostgresStore(
        f"postgresql://crab:{PASSWORD}@127.0.0.1:1/crab", setting="CRAB_POSTGRES_DSN", connect_timeout=5
    )
    with pytest.raises(StoreError) as caught:
        asyncio.run(store.open())
    message = str(caught.value)
    assert "127.0.0.1:1" in message and "CRAB_POSTGRES_DSN" in message
    assert PASSWORD not in message
    assert "\n" not in message


def test_no_dsn_at_all_says_where_to_set_one() -> None:
    store = PostgresStore(None, setting="CRAB_POSTGRES_DSN, … or [plugins.store-postgres] dsn")
    with pytest.raises(StoreError, match="no database to connect to: set CRAB_POSTGRES_DSN"):
        asyncio.run(store.open())


def test_a_store_that_is_not_open_says_so() -> None:
    with pytest.raises(StoreError, match="not open"):
        asyncio.run(PostgresStore("postgresql://x@127.0.0.1/db").get_session("x"))


def _crab(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    environ.update({"CRAB_HOME": str(home), "CRAB_PLUGINS": "store-postgres", "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [str(CRAB), *args], cwd=home, env=environ, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.skipif(not CRAB.exists(), reason="no crab command beside this Python")
def test_crab_with_an_unreachable_server_exits_2_with_one_line(tmp_path: Path) -> None:
    url = f"postgresql://crab:{PASSWORD}@127.0.0.1:1/crab"
    done = _crab(tmp_path, "sessions", "list", "--store", "postgres", env={"CRAB_POSTGRES_DSN": url})
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "127.0.0.1:1" in done.stderr and "CRAB_POSTGRES_DSN" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not CRAB.exists(), reason="no crab command beside this Python")
def test_a_projects_config_cannot_choose_the_database(tmp_path: Path, pg_dsn: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".crab").mkdir()
    # An untrusted project asks for another server: trust-only, so ignored, and no DSN is left.
    (home / ".crab" / "config.toml").write_text(
        '[plugins.store-postgres]\ndsn = "postgresql://evil@127.0.0.1:2/x"\nschema = "evil"\n', encoding="utf-8"
    )
    done = _crab(home, "sessions", "list", "--store", "postgres")
    assert done.returncode == 2
    assert "no database to connect to" in done.stderr and "127.0.0.1:2" not in done.stderr
    # The user's own config is trusted: it works.
    (home / "config.toml").write_text(
        f'[plugins.store-postgres]\ndsn = "{pg_dsn}"\nschema = "mine"\n', encoding="utf-8"
    )
    done = _crab(home, "sessions", "list", "--store", "postgres", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.skipif(not CRAB.exists(), reason="no crab command beside this Python")
def test_installed_but_not_named_it_is_not_the_default_store(tmp_path: Path) -> None:
    done = _crab(tmp_path, "sessions", "list", "--json")
    assert done.returncode == 0, done.stderr  # core's memory store, not a server nobody configured
    assert json.loads(done.stdout) == []


@pytest.mark.skipif(not CRAB.exists(), reason="no crab command beside this Python")
def test_crab_schedule_with_an_unreachable_server_exits_2_as_core_commands_do(tmp_path: Path) -> None:
    pytest.importorskip("crab_schedule", reason="crab-schedule is not installed")
    (tmp_path / "config.toml").write_text('[plugins.schedule]\nstore = "postgres"\n', encoding="utf-8")
    url = f"postgresql://crab:{PASSWORD}@127.0.0.1:1/crab"
    env = {"CRAB_POSTGRES_DSN": url, "CRAB_PLUGINS": "store-postgres,schedule"}
    for command in (["sessions", "list", "--store", "postgres"], ["schedule", "list"], ["schedule", "log"]):
        done = _crab(tmp_path, *command, env=env)
        assert done.returncode == 2, (command, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "127.0.0.1:1" in done.stderr, done.stderr
        assert PASSWORD not in done.stderr + done.stdout and "Traceback" not in done.stderr
