"""`unified doctor`: what can run here, and if nothing can, why.

Gathers facts as plain data (for `--json` and for tests) without importing any backend: the auth
modes found, the `gemini` and `claude` binaries and their versions, each backend's readiness and
what `auto` would choose. Values that could be secret never enter the report (see `unified._auth`).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unified import RoutingError, UnifiedError, capabilities
from unified import backends as registry
from unified._auth import AUTH_MODE_TITLES, AuthReport, detect_auth
from unified._routing import select_backend

if TYPE_CHECKING:
    from unified._binary.install import BinarySpec

__all__ = [
    "PROJECT_LOCAL_GEMINI",
    "VERSION_TIMEOUT_S",
    "agent_binary",
    "doctor_report",
    "find_gemini",
    "gemini_version",
]

VERSION_TIMEOUT_S = 60.0
"""A hang guard: Node starts the CLI in a few seconds, over ten on a busy machine."""
PROJECT_LOCAL_GEMINI = Path(".gemini-cli") / "node_modules" / ".bin" / "gemini"

_SDK_MODULES = {"generate-content": "google.genai", "interactions": "google.genai"}
"""Third-party packages a backend needs besides its own module (checked without importing them)."""


def find_gemini(env: Mapping[str, str], cwd: Path) -> tuple[Path | None, str]:
    """The `gemini` binary and how it was found, in the adapter's order (see its `find_binary`)."""
    explicit = env.get("UNIFIED_GEMINI_BIN", "").strip()
    if explicit:
        path = Path(explicit).expanduser()
        if not path.exists():
            return None, f"UNIFIED_GEMINI_BIN points at {path}, which does not exist"
        return path, "UNIFIED_GEMINI_BIN"
    for base in (cwd, *cwd.parents):
        if (base / PROJECT_LOCAL_GEMINI).exists():
            return base / PROJECT_LOCAL_GEMINI, f"project-local {base / '.gemini-cli'}"
    from unified._adapters.gemini_cli import user_installed_binary

    installed = user_installed_binary()
    if installed is not None:
        return installed, "unified install-gemini"
    found = shutil.which("gemini", path=env.get("PATH"))
    if found:
        return Path(found), "PATH"
    return (
        None,
        "not found (UNIFIED_GEMINI_BIN, .gemini-cli, unified install-gemini, PATH): run `unified install-gemini`",
    )


def gemini_version(binary: Path, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(version, problem): runs `gemini --version` with a short timeout.

    The CLI writes into its home even for `--version` (a `projects.json` temp file), so it runs
    with a throwaway HOME and GEMINI_CLI_HOME: asking for a version never touches `~/.gemini`.
    """
    try:
        with tempfile.TemporaryDirectory(prefix="unified-gemini-version-") as home:
            done = subprocess.run(
                [str(binary), "--version"],
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT_S,
                env={**env, "HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_CLI_NO_RELAUNCH": "true"},
                stdin=subprocess.DEVNULL,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return None, f"`gemini --version` did not answer within {VERSION_TIMEOUT_S:g} s"
    except OSError as exc:
        return None, f"`gemini --version` could not start: {exc.strerror or exc}"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None, f"`gemini --version` exited {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}"
    return lines[-1].strip(), None


def agent_binary(spec: BinarySpec, env: Mapping[str, str]) -> dict[str, Any]:
    """The binary of `spec` its backend would run: where (and how it was found, in the backend's own
    order: its variable, the project-local folder, the `unified install` folder, PATH), its version
    (from its npm package when it has one, so no process starts), and what is wrong with it."""
    from unified._binary.install import find_binary, probe_version

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
        info["problem"] = exc.message
        return info
    info["version"] = ".".join(map(str, version))
    low, high = spec.supported
    if not low <= version < high:
        info["problem"] = f"version {info['version']} is not the pinned {spec.version}: {spec.install_hint}"
    return info


def _module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _backend_status(
    name: str, auth: AuthReport, gemini: dict[str, Any], binaries: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
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
    if name == "gemini-cli" and gemini["path"] is None:
        problems.append("the gemini binary was not found")
    binary = (binaries or {}).get(name)
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


def doctor_report(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """Everything `unified doctor` shows, as JSON-ready data."""
    env = dict(os.environ if env is None else env)
    auth = detect_auth(env)
    path, found_by = find_gemini(env, cwd or Path.cwd())
    version, version_problem = gemini_version(path, env) if path is not None else (None, None)
    gemini = {"path": str(path) if path else None, "found_by": found_by, "version": version, "problem": version_problem}
    from unified._cli.install import spec_of

    binaries = {name: agent_binary(spec_of(name), env) for name in ("claude-code", "codex")}
    claude, codex = binaries["claude-code"], binaries["codex"]
    auto: dict[str, Any]
    try:
        selection = select_backend(auth)
        auto = {"backend": selection.backend, "reason": selection.reason, "alternatives": list(selection.alternatives)}
    except RoutingError as exc:
        auto = {"backend": None, "reason": str(exc), "alternatives": []}
    return {
        "auth": auth.model_dump(mode="json"),
        "gemini": gemini,
        "claude": claude,
        "codex": codex,
        "backends": [_backend_status(name, auth, gemini, binaries) for name in registry.built_in_backends()],
        "auto": auto,
    }
