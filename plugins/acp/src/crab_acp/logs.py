"""Where ``crab acp`` logs: ``$CRAB_HOME/logs/acp.log``, masked, never stdout (the protocol's).

Every record of the process (the SDK's, crab-acp's, any library's) goes to that file through the
root logger, secrets masked with ``crab.secrets.Redactor``; Python's last-resort handler, which would
print on stderr, is never reached. The file is cut to its last half when it passes ``MAX_BYTES``.
"""

from __future__ import annotations

import logging
from pathlib import Path

import crab

MAX_BYTES = 5_000_000


class _Masked(logging.Formatter):
    def __init__(self, redactor: crab.secrets.Redactor) -> None:
        super().__init__("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor.text(super().format(record))


def log_path() -> Path:
    return crab.config.crab_home() / "logs" / "acp.log"


def _trim(path: Path) -> None:
    try:
        if path.stat().st_size > MAX_BYTES:
            data = path.read_bytes()[-MAX_BYTES // 2 :]
            path.write_bytes(data[data.find(b"\n") + 1 :])
    except OSError:
        pass


def install() -> logging.Logger:
    """Send every log record to the masked file; returns crab-acp's logger."""
    path = log_path()
    root = logging.getLogger()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _trim(path)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()  # no writable home: lose the log, never the protocol
    handler.setFormatter(_Masked(crab.secrets.Redactor(crab.secrets.known_secrets())))
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return logging.getLogger("crab_acp")
