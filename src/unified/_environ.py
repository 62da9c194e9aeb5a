"""The process environment as a cache key: what the per-run work derived from `os.environ` (its secrets,
a child's admitted variables) is cached on, recomputed only when the environment changed."""

from __future__ import annotations

import os

__all__ = ["environ_key"]


def environ_key() -> object:
    """A value equal to an earlier one exactly when the environment is unchanged since.

    Built from the environment's raw names and values (`os.environ._data`, a plain dict of bytes):
    about a microsecond, where decoding every variable (`os.environ.items()`) costs tens.
    """
    raw = getattr(os.environ, "_data", None)
    return (tuple(raw), tuple(raw.values())) if isinstance(raw, dict) else tuple(os.environ.items())
