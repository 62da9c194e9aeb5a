"""Public names report their public home: `unified.sessions.SessionInfo.__module__ == "unified.sessions"`.

Definitions live in private modules, re-exported by a public one. The defining module names that
public home once, at its end (`publish("unified.sessions", __all__, globals())`), so the answer does
not depend on which module was imported first, and reprs, docs and error messages name the module a
user imports from, never a private one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["publish"]


def publish(public_module: str, names: Iterable[str], namespace: Mapping[str, Any]) -> None:
    """Set `__module__` of each class and function among `names` (found in `namespace`) that a
    private module defined to `public_module`.

    A pydantic model whose schema is still deferred resolves its annotations in the module its
    `__module__` names; it keeps its defining module's namespace as its parent namespace, so a
    forward reference still resolves after the move.
    """
    for name in names:
        obj = namespace[name]
        home = getattr(obj, "__module__", None)
        if not isinstance(obj, type) and not callable(obj):
            continue
        if home is None or home == public_module or not _is_private(home):
            continue
        if isinstance(obj, type) and getattr(obj, "__pydantic_complete__", True) is False:
            defining = vars(sys.modules[home])
            own = getattr(obj, "__pydantic_parent_namespace__", None) or {}
            obj.__pydantic_parent_namespace__ = {**defining, **own}  # type: ignore[attr-defined]
        try:
            obj.__module__ = public_module
        except (AttributeError, TypeError):  # a builtin or a C type: nothing to say
            continue


def _is_private(module: str) -> bool:
    return module.startswith("unified.") and any(part.startswith("_") for part in module.split("."))
