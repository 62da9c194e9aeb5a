"""`unified install NAME` (and `unified install-gemini`): a pinned agent binary, with npm, never globally.

A clone has its project-local folder (`scripts/setup`); a `pip install`ed `unified` has none, so the
binary goes into the user's data folder (`$XDG_DATA_HOME/unified/<backend>` on Linux), where the
backend's lookup and `unified doctor` find it. The work is `unified._binary.install.install`; each
installable binary is one `BinarySpec`, named here by its backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from unified._binary.install import BinarySpec, install

__all__ = ["INSTALLABLE", "Installed", "install_binary", "spec_of"]

INSTALLABLE: dict[str, str] = {
    "gemini-cli": "unified._adapters.gemini_cli._launch:GEMINI_CLI",
    "claude-code": "unified._adapters.claude_code._launch:CLAUDE_CODE",
    "codex": "unified._adapters.codex._launch:CODEX",
}
"""Backend → "module:attribute" of its `BinarySpec` (imported only when that one is installed)."""


def spec_of(backend: str) -> BinarySpec:
    module, _, attribute = INSTALLABLE[backend].partition(":")
    spec = getattr(importlib.import_module(module), attribute)
    assert isinstance(spec, BinarySpec)
    return spec


@dataclass(frozen=True, slots=True)
class Installed:
    spec: BinarySpec
    binary: Path
    ran: bool
    """Whether npm ran (False: that version was there already)."""
    default_place: bool
    """Whether it went where the backend looks (else the user points the env var at it)."""


def install_binary(backend: str, prefix: Path | None, env: Mapping[str, str]) -> Installed:
    """Install `backend`'s pinned binary under `prefix` (default: the user data folder).

    Raises `NodeUnavailable` (Node.js missing or too old: bad input, nothing ran), `ConfigurationError` (a folder
    that cannot be made: bad input, nothing ran) or
    `BackendUnavailable` (npm missing or failed).
    """
    spec = spec_of(backend)
    target = (prefix or spec.user_prefix()).expanduser().resolve()
    binary, ran = install(spec, target, env)
    return Installed(spec, binary, ran, prefix is None)
