"""Keep secrets from the environment out of anything `unified` prints or logs.

Error messages from SDKs and subprocesses sometimes quote a request URL or a header with the API
key in it; a model may even echo a key it was shown. Whatever writes text a person or a log will
read (the CLI, diagnostics, bug reports) passes it through `redact()` first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

REDACTED = "[REDACTED]"

KNOWN_SECRET_VARIABLES = frozenset({"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_KEY", "GOOGLE_CLOUD_API_KEY"})
"""Always secret, however short the value."""

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PRIVATE_KEY|ACCESS_KEY|AUTH)$", re.IGNORECASE)
"""Other variables whose names say they hold a secret."""

_NOT_SECRET = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})
"""A path to a credentials file, not a credential: showing it helps diagnose auth problems."""

_MIN_GUESSED_LENGTH = 8
"""Values of guessed secret variables shorter than this are left alone: too likely to be ordinary words."""


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values found in `env` (default: the process environment), longest first.

    Longest first so that a key containing another key is replaced whole.
    """
    source = os.environ if env is None else env
    found: set[str] = set()
    for name, value in source.items():
        value = value.strip()
        if not value or name.upper() in _NOT_SECRET:
            continue
        if name.upper() in KNOWN_SECRET_VARIABLES or (_SECRET_NAME.search(name) and len(value) >= _MIN_GUESSED_LENGTH):
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every secret value of `env` (default: the process environment) replaced by `[REDACTED]`."""
    for value in secret_values(env):
        text = text.replace(value, REDACTED)
    return text


_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization|cookie|credential)", re.IGNORECASE)
"""Mapping keys (option names, header names, environment names) whose values are secrets."""


def redact_mapping(value: object) -> object:
    """`value` with every entry under a secret-looking key replaced, however deep: for reprs and logs."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED if isinstance(key, str) and _SECRET_KEY.search(key) and item else redact_mapping(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact_mapping(item) for item in value)
    return value
