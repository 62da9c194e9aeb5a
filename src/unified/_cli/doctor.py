"""`unified doctor`: what can run here, and if nothing can, why.

Gathers facts as plain data (for `--json` and for tests) without running any backend: the auth
modes found, the agent binaries (found as each backend finds them) and their versions, each
backend's readiness and what `auto` would choose. Values that could be secret never enter the
report (see `unified._auth`).
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from unified import RoutingError, UnifiedError, capabilities
from unified import backends as registry
from unified._auth import AUTH_MODE_TITLES, AuthReport, detect_auth
from unified._routing import select_backend

if TYPE_CHECKING:
    from unified._binary.install import BinarySpec

__all__ = ["DEADLINE_S", "agent_binary", "doctor_report"]

DEADLINE_S = 30.0
"""The one deadline of all of `unified doctor`'s probes, from its start: each had its own 30 s (`PROBE_TIMEOUT_S`
for a binary's `--version`), and what came before one (finding the binary, a file system that does not answer)
had none, so doctor could wait without end and never said which probe it waited on (bad input round 22)."""
_GRACE_S = 2.0
"""How long past `DEADLINE_S` doctor waits for a probe to end: one whose `--version` met the deadline is stopping
its process group (at most a kill and a wait)."""

_SDK_MODULES = {"generate-content": "google.genai", "interactions": "google.genai"}
"""Third-party packages a backend needs besides its own module (checked without importing them)."""

_BINARIES = {"gemini-cli": "gemini", "claude-code": "claude", "codex": "codex"}
"""Backend → the report's key for the agent binary it drives."""


def agent_binary(
    spec: BinarySpec, env: Mapping[str, str], until: float | None = None, info: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The binary of `spec` its backend would run: where (and how it was found, in the backend's own
    order: its variable, the project-local folder, the `unified install` folder, PATH), its version
    (from its npm package when it has one, so no process starts), and what is wrong with it. `until` (a
    `time.monotonic()` instant) is the deadline of its `--version`; `info` is filled as the facts come (what
    `doctor_report` shows of a probe that did not finish)."""
    from unified._binary.install import PROBE_TIMEOUT_S, find_binary, probe_version, require_node

    info = _unknown() if info is None else info
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
    timeout = PROBE_TIMEOUT_S if until is None else min(PROBE_TIMEOUT_S, until - time.monotonic())
    try:
        version = probe_version(spec, path, env, timeout)
    except UnifiedError as exc:
        info["problem"] = f"{exc.message}: {exc.hint}" if exc.hint else exc.message  # what to do, too
        if until is not None and exc.details.get("timeout_s") is not None:
            info["problem"] += f" (doctor gives all its probes one deadline, {DEADLINE_S:g} s)"
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


def _unknown() -> dict[str, Any]:
    return {"path": None, "found_by": None, "version": None, "problem": None}


def _probe(spec: BinarySpec, env: Mapping[str, str], until: float, info: dict[str, Any]) -> None:
    """`agent_binary` in a probe's thread: what it raises (the binary gone between finding and reading it) is its
    problem, not a thread's traceback beside a report that shows nothing wrong."""
    try:
        agent_binary(spec, env, until, info)
    except Exception as exc:  # whatever it is, the report says it and calls the binary not ready
        info["problem"] = f"its probe failed ({type(exc).__name__}: {exc}); run `unified doctor` again"


def _probe_binaries(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Every agent binary's facts (`agent_binary`), probed at once within `DEADLINE_S` in all: probed one after another
    they took three times one probe's deadline (92 s with three hanging binaries, round 20). A probe that has not
    finished by then is reported as such, with what it had found, and left to end in a daemon thread (its `--version`
    is stopped at the deadline, its process group with it; a probe still looking for its binary holds no process)."""
    from unified._cli.install import spec_of

    until = time.monotonic() + DEADLINE_S
    found = {name: _unknown() for name in _BINARIES}
    threads = {
        name: threading.Thread(
            target=_probe,
            args=(spec_of(name), env, until, found[name]),
            name=f"unified-doctor-probe-{name}",
            daemon=True,
        )
        for name in _BINARIES
    }
    for thread in threads.values():
        thread.start()
    for name, thread in threads.items():
        thread.join(max(until + _GRACE_S - time.monotonic(), 0.0))
        if thread.is_alive():
            info = found[name] = dict(found[name])  # the thread may still write to its own
            step = "asking its version" if info["path"] else "finding it"
            info["problem"] = (
                f"its probe did not answer within doctor's deadline ({DEADLINE_S:g} s, for all probes at once): it "
                f"was still {step}; run `unified doctor` again, and if it stops there again, look at "
                f"{info['path'] or 'the folders it is looked for in (its variable, PATH)'}"
            )
    return found


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
    binaries = _probe_binaries(env)
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
