"""The secrets crab knows and how a plugin keeps them out of what it prints or writes: every
known secret, the keys' lookup and the one-line message for a missing one, and the ``Redactor``."""

from crab._secrets.keys import REDACTED, dsn_password, known_secrets, lookup_key, missing_key_message
from crab._secrets.redaction import Redactor

__all__ = ["REDACTED", "Redactor", "dsn_password", "known_secrets", "lookup_key", "missing_key_message"]
