"""Auth: env var before auth file, 0600 file creation, secret discovery and redaction."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from crab._contracts.config import Config
from crab._contracts.errors import ConfigError
from crab._secrets.keys import (
    REDACTED,
    auth_path,
    known_secrets,
    lookup_key,
    missing_key_message,
    read_auth,
    redact,
    save_key,
)

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))
    return tmp_path


def test_env_var_wins_over_auth_file(home: Path) -> None:
    save_key("openai", "from-the-file-123")
    assert lookup_key("openai", "OPENAI_API_KEY", env={"OPENAI_API_KEY": KEY}) == KEY
    assert lookup_key("openai", "OPENAI_API_KEY", env={}) == "from-the-file-123"
    assert lookup_key("openai", "OPENAI_API_KEY", env={"OPENAI_API_KEY": "  "}) == "from-the-file-123"
    assert lookup_key("anthropic", "ANTHROPIC_API_KEY", env={}) is None


def test_save_key_creates_the_file_with_mode_0600(home: Path) -> None:
    path = save_key("openai", KEY)
    assert path == auth_path() == home / "auth.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    save_key("anthropic", "another-key-456")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"openai": KEY, "anthropic": "another-key-456"}
    assert not list(home.glob(".auth.json.*"))


def test_malformed_auth_file_is_reported_without_quoting_it(home: Path) -> None:
    (home / "auth.json").write_text('{"openai": "' + KEY)
    with pytest.raises(ConfigError) as info:
        read_auth()
    assert KEY not in str(info.value)
    assert "auth.json" in str(info.value)
    (home / "auth.json").write_text(json.dumps({"openai": 5}))
    with pytest.raises(ConfigError, match="provider name to key"):
        read_auth()


def test_missing_key_message_names_the_variable(home: Path) -> None:
    message = missing_key_message("openai", "OPENAI_API_KEY")
    assert "set OPENAI_API_KEY" in message
    assert "\n" not in message


def test_known_secrets_from_config_env_names_patterns_and_auth_file(home: Path) -> None:
    save_key("anthropic", "stored-anthropic-key")
    config = Config(
        data={"plugins": {"provider-openai": {"api_key_env": "MY_LLM_CRED"}}},
        user_path=home / "config.toml",
        project_path=None,
    )
    env = {"MY_LLM_CRED": "configured-secret-1", "OPENAI_API_KEY": KEY, "HOME": "/home/someone", "BOT_TOKEN": "x"}
    secrets = known_secrets(config, env=env)
    assert set(secrets) == {"configured-secret-1", KEY, "stored-anthropic-key"}
    assert secrets == sorted(secrets, key=len, reverse=True)


def test_known_secrets_survives_a_broken_auth_file(home: Path) -> None:
    (home / "auth.json").write_text("not json")
    assert known_secrets(env={"OPENAI_API_KEY": KEY}) == [KEY]


def test_redact_replaces_every_occurrence_and_skips_short_values() -> None:
    text = f"key {KEY} again {KEY}; short abc"
    assert redact(text, [KEY, "abc"]) == f"key {REDACTED} again {REDACTED}; short abc"
    assert redact("nothing here", [KEY]) == "nothing here"


def test_database_connection_strings_and_their_passwords_are_secrets(home: Path) -> None:
    from crab._secrets.keys import dsn_password

    url = "postgresql://crab:p%40ss-w0rd-long@db.internal:5432/crab"
    keywords = "host=db port=5432 password='it''s a \\'secret\\' pw' dbname=crab"
    assert dsn_password(url) == "p@ss-w0rd-long"
    assert dsn_password("host=db password=plain-secret-1 dbname=x") == "plain-secret-1"
    assert dsn_password("postgresql://crab@db/crab") is None
    assert dsn_password("host=db dbname=x") is None
    assert dsn_password(keywords) is not None
    config = Config(
        data={"plugins": {"store-postgres": {"dsn": "postgresql://crab:config-pw-123@db/crab"}}},
        user_path=home / "config.toml",
        project_path=None,
    )
    secrets = known_secrets(config, env={"CRAB_POSTGRES_DSN": url})
    assert url in secrets and "p@ss-w0rd-long" in secrets
    assert "config-pw-123" in secrets and "postgresql://crab:config-pw-123@db/crab" in secrets
