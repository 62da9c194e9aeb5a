"""The process environment as a cache key: what the per-run work derived from `os.environ` (its secrets,
a child's admitted variables, unified's folders) is cached on, worked out again only when it changed; and the
`PATH` a child runs with (`absolute_search_path`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerEnvironment", "absolute_search_path", "environ_key"]

T = TypeVar("T")


@functools.lru_cache(maxsize=16)
def absolute_search_path(value: str) -> str:
    """`value` (a `PATH`) without its relative entries (empty, `.`, `bin`, `node_modules/.bin`), for every process
    a model's command may run in: such an entry names a directory relative to wherever a command runs, so a file
    the model or a repository wrote in the workspace (`./cat`, `bin/gzip`, which `rg -z` and `file -z` run to
    decompress) ran in place of the program a later, allowed command names, and no check of a write can tell
    which directory that is (`_protected.program_directory` judges the absolute entries). With none left,
    `os.defpath`: an empty `PATH` is itself the current directory. Kept per `PATH` (a function of the text
    alone): every run's child and every shell command asks it of the same few, ~8 us each time."""
    return os.pathsep.join(entry for entry in value.split(os.pathsep) if os.path.isabs(entry)) or os.defpath


def environ_key() -> object:
    """A value equal to an earlier one exactly when the environment is unchanged since.

    Built from the environment's raw names and values (`os.environ._data`, a plain dict of bytes):
    about a microsecond, where decoding every variable (`os.environ.items()`) costs tens.
    """
    raw = getattr(os.environ, "_data", None)
    return (tuple(raw), tuple(raw.values())) if isinstance(raw, dict) else tuple(os.environ.items())


class PerEnvironment(Generic[T]):
    """`compute()`'s answer, worked out again only when the environment changed since the last one
    (`environ_key`): for what every run asks of the environment and that costs tens of microseconds
    (platformdirs' folders, the secrets among its variables)."""

    __slots__ = ("_compute", "_last")

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute = compute
        self._last: tuple[object, T] | None = None
        """(key, answer), replaced whole (one assignment): a thread never sees one key with another's answer."""

    def __call__(self) -> T:
        key = environ_key()
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        value = self._compute()
        self._last = (key, value)
        return value
