"""Image blobs beside the tapes: ``<root>/blobs/<sha256>``, one file per distinct image.

A blob is written once (temp file + rename, so a reader never sees half of one) and read back
only when its bytes still hash to its name; the name is checked before it touches the disk.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from crab import StoreError
from crab.tools import write_atomic

FOLDER = "blobs"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def blob_path(root: Path, sha256: str) -> Path | None:
    """Where the blob ``sha256`` lives; None for a name that is no sha256 (it cannot exist)."""
    return root / FOLDER / sha256 if _SHA256.match(sha256) else None


def put_blob(root: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    path = root / FOLDER / digest
    if not path.exists():
        try:
            write_atomic(path, bytes(data))
        except OSError as exc:
            raise StoreError(f"cannot write image blob {path}: {exc}") from None
    return digest


def get_blob(root: Path, sha256: str) -> bytes | None:
    path = blob_path(root, sha256)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read image blob {path}: {exc}") from None
    return data if hashlib.sha256(data).hexdigest() == sha256 else None
