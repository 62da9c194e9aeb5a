"""The backends `unified` knows (public: how other packages add one). Where each lives, as import
paths: nothing is imported until a run needs it.

`execute()` must not pay for google-genai or the ACP SDK unless their backend runs, so the
registry maps names to "module:attribute" strings and imports on demand.

`BACKENDS` names the production backends only. Others join from outside, so nothing here depends
on them: `register_backend()` at import time (the testing package registers its scripted backend
so), or an entry point in the `unified.backends` group (how an installed unified finds `scripted`
without importing the testing package first, e.g. `unified run --backend scripted`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, cast

from unified._errors import BackendUnavailable, ConfigurationError

if TYPE_CHECKING:
    from unified._internal.backend import Backend
    from unified.sessions import SessionLocator, SessionStore
    from unified.types import ExecuteParams

BackendFactory = Callable[["ExecuteParams"], "Backend"]
LocatorFactory = Callable[["SessionStore | None"], "SessionLocator"]

BACKENDS: dict[str, str] = {
    "gemini-cli": "unified.adapters.gemini_cli:create_backend",
    "generate-content": "unified.adapters.generate_content:create_backend",
    "interactions": "unified.adapters.interactions:create_backend",
}
ENTRY_POINT_GROUP = "unified.backends"
_registered: dict[str, str] = {}

SESSION_LOCATORS: dict[str, str] = {
    "gemini-cli": "unified.adapters.gemini_cli._sessions:create_session_locator",
    "generate-content": "unified.adapters.generate_content:create_session_locator",
    "interactions": "unified.adapters.interactions:create_session_locator",
}


def _load(table: dict[str, str], name: str, what: str) -> object:
    try:
        target = table[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown backend {name!r}", hint=f"choose one of: {', '.join(sorted(table))}"
        ) from None
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(
            f"the {name} backend cannot load its {what}: {exc}",
            hint="reinstall unified with its dependencies (pip install unified)",
        ) from exc
    return getattr(module, attribute)


def register_backend(name: str, factory: str) -> None:
    """Make `name` loadable by `execute(backend=name)`; `factory` is "module:attribute" of a
    `(ExecuteParams) -> Backend`. A production backend's name cannot be taken over."""
    if name in BACKENDS and BACKENDS[name] != factory:
        raise ConfigurationError(f"backend {name!r} is built in", hint="register the backend under another name")
    _registered[name] = factory


@cache
def _entry_point_backends() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_backends() -> dict[str, str]:
    """Every loadable backend: entry points, then registered ones, then the built-in ones (which win)."""
    return {**_entry_point_backends(), **_registered, **BACKENDS}


def load_backend_factory(name: str) -> BackendFactory:
    return cast("BackendFactory", _load(known_backends(), name, "adapter"))


def load_session_locator(name: str, store: SessionStore | None = None) -> SessionLocator:
    """The SessionLocator of backend `name`; the API backends' read `store` (None: the default file store)."""
    factory = cast("LocatorFactory", _load(SESSION_LOCATORS, name, "session locator"))
    return factory(store)
