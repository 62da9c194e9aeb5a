"""`unified doctor`: what can run here, and if nothing can, why.

Gathers facts as plain data (for `--json` and for tests) without running any backend: the auth
modes found, the agent binaries (found as each backend finds them) and their versions, each
backend's readiness and what `auto` would choose. Values that could be secret never enter the
report (see `unified._auth`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from unified import RoutingError, UnifiedError, capabilities
from unified import backends as registry
from unified._auth import AUTH_MODE_TITLES, AuthReport, detect_auth
from unified._routing import select_backend

if TYPE_CHECKING:
    from unified._binary.install import BinarySpec

__all__ = ["agent_binary", "doctor_report"]

_SDK_MODULES = {"generate-content": "google.genai", "interactions": "google.genai"}
"""Third-party packages a backend needs besides its own module (checked without importing them)."""

_BINARIES = {"gemini-cli": "gemini", "claude-code": "claude", "codex": "codex"}
"""Backend → the report's key for the agent binary it drives."""


def agent_binary(spec: BinarySpec, env: Mapping[str, str]) -> dict[str, Any]:
    """The binary of `spec` its backend would run: where (and how it was found, in the backend's own
    order: its variable, the project-local folder, the `unified install` folder, PATH), its version
    (from its npm package when it has one, so no process starts), and what is wrong with it."""
    from unified._binary.install import find_binary, probe_version, require_node

    info: dict[str, Any] = {"path": None, "found_by": None, "version": None, "problem": None}
    try:
        path = find_binary(spec, None, env)
    except UnifiedError as exc:
        info["problem"] = f"{exc.message}: run `{spec.install_command}`"
        return info
    info["path"] = str(path)
    if env.get(spec.env_var, "").strip():
        info["found_by"] = spec.env_var
    elif spec.local_dir in path.parts:
        info["found_by"] = f"project-local {spec.local_dir}"
    elif path == spec.user_installed():
        info["found_by"] = spec.install_command
    else:
        info["found_by"] = "PATH"
    try:
        version = probe_version(spec, path, env)
    except UnifiedError as exc:
        info["problem"] = f"{exc.message}: {exc.hint}" if exc.hint else exc.message  # what to do, too
        return info
    info["version"] = ".".join(map(str, version))
    low, high = spec.supported
    if not low <= version < high:
        info["problem"] = f"version {info['version']} is not the pinned {spec.version}: {spec.install_hint}"
    elif spec.runs_on_node:
        try:
            require_node(spec, path, env)  # what a run checks first: the version came from its npm package
        except UnifiedError as exc:
            info["problem"] = f"{exc.message}: {exc.hint}"
    return info


def _module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _backend_status(name: str, auth: AuthReport, binaries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    column = capabilities.column(name)
    problems = []
    factory = registry.built_in_backends()[name].backend
    module = factory.partition(":")[0] if isinstance(factory, str) else factory.__module__
    if not _module_present(module):
        problems.append(f"its adapter module {module} is not installed")
    sdk = _SDK_MODULES.get(name)
    if sdk and not _module_present(sdk):
        problems.append(f"the {sdk} package is missing")
    usable = auth.usable_modes_for(name)  # a backend that authenticates its own way (gemini-cli) says how
    modes = [m for m in column.auth if m in usable]
    if column.auth and not modes:
        problems.append(f"needs credentials: {' or '.join(AUTH_MODE_TITLES[m] for m in column.auth)}")
        found = [m for m in (auth.get_for(name, mode) for mode in column.auth) if m is not None and m.problems]
        problems += [f"{m.summary()}" for m in found]
    binary = binaries.get(name)
    if binary is not None and (binary["path"] is None or binary["problem"]):
        problems.append(f"its binary: {binary['problem'] or 'not found'}")
    levels = {level: [c for c, cell in column.cells.items() if cell.level == level] for level in capabilities.LEVELS}
    return {
        "backend": name,
        "title": column.title,
        "ready": not problems,
        "auth": modes,
        "auth_detail": [m.summary() for m in (auth.get_for(name, mode) for mode in modes) if m is not None],
        "problems": problems,
        "capabilities": levels,
    }


def doctor_report(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything `unified doctor` shows, as JSON-ready data."""
    env = dict(os.environ if env is None else env)
    auth = detect_auth(env)
    from unified._cli.install import spec_of

    with ThreadPoolExecutor(len(_BINARIES), thread_name_prefix="unified-doctor-probe") as pool:
        # at once: each probe may take up to its deadline (a binary that hangs on `--version`), one after another
        # they took three times that (92 s with three hanging binaries)
        probes = {name: pool.submit(agent_binary, spec_of(name), env) for name in _BINARIES}
        binaries = {name: probe.result() for name, probe in probes.items()}
    auto: dict[str, Any]
    try:
        selection = select_backend(auth)
        auto = {"backend": selection.backend, "reason": selection.reason, "alternatives": list(selection.alternatives)}
    except RoutingError as exc:
        auto = {"backend": None, "reason": str(exc), "alternatives": []}
    return {
        "auth": auth.model_dump(mode="json"),
        **{key: binaries[name] for name, key in _BINARIES.items()},
        "backends": [_backend_status(name, auth, binaries) for name in registry.built_in_backends()],
        "auto": auto,
    }
