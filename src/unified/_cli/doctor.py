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
from typing import Any

from unified import RoutingError, UnifiedError, capabilities
from unified import backends as registry
from unified._auth import AUTH_MODE_TITLES, AuthReport, detect_auth
from unified._routing import select_backend

__all__ = [
    "PROJECT_LOCAL_GEMINI",
    "VERSION_TIMEOUT_S",
    "claude_binary",
    "codex_binary",
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


def claude_binary(env: Mapping[str, str]) -> dict[str, Any]:
    """The `claude` binary the claude-code backend would run, and its version (from its npm package:
    no process is started), found in the backend's order (UNIFIED_CLAUDE_BIN, `.claude-code/`, the
    `unified install-claude-code` folder, PATH)."""
    from unified._adapters.claude_code._launch import CLAUDE_CODE
    from unified._binary.install import find_binary, probe_version

    info: dict[str, Any] = {"path": None, "found_by": None, "version": None, "problem": None}
    try:
        path = find_binary(CLAUDE_CODE, None, env)
    except UnifiedError as exc:
        info["problem"] = f"{exc.message}: run `unified install-claude-code`"
        return info
    info["path"] = str(path)
    if env.get(CLAUDE_CODE.env_var, "").strip():
        info["found_by"] = CLAUDE_CODE.env_var
    elif CLAUDE_CODE.local_dir in path.parts:
        info["found_by"] = f"project-local {CLAUDE_CODE.local_dir}"
    elif path == CLAUDE_CODE.user_installed():
        info["found_by"] = "unified install-claude-code"
    else:
        info["found_by"] = "PATH"
    try:
        version = probe_version(CLAUDE_CODE, path, env)
    except UnifiedError as exc:
        info["problem"] = exc.message
        return info
    info["version"] = ".".join(map(str, version))
    low, high = CLAUDE_CODE.supported
    if not low <= version < high:
        info["problem"] = (
            f"version {info['version']} is not the pinned {CLAUDE_CODE.version}: {CLAUDE_CODE.install_hint}"
        )
    return info


def codex_binary(env: Mapping[str, str], cwd: Path) -> dict[str, Any]:
    """The `codex` binary the codex backend would run, how it was found, its version: the backend's own
    lookup (`unified._binary.install`, the spec in `unified._adapters.codex._launch`), run from `cwd`."""
    from unified._adapters.codex._launch import CODEX, native_binary
    from unified._binary.install import find_binary, probe_version
    from unified.errors import BackendUnavailable

    explicit: Path | None = None
    found_by = "PATH"
    if env.get(CODEX.env_var, "").strip():
        found_by = CODEX.env_var
    else:
        for base in (cwd, *cwd.parents):
            if CODEX.binary_in(base / CODEX.local_dir).exists():
                explicit, found_by = CODEX.binary_in(base / CODEX.local_dir), f"project-local {base / CODEX.local_dir}"
                break
        else:
            if CODEX.user_installed() is not None:
                found_by = CODEX.install_command
    try:
        path = find_binary(CODEX, explicit, env)
        version = ".".join(map(str, probe_version(CODEX, path, env)))
        native = native_binary(path)
    except BackendUnavailable as exc:
        return {"path": None, "found_by": exc.message, "version": None, "problem": exc.hint, "native": None}
    low, high = CODEX.supported
    problem = None
    if not low <= tuple(int(x) for x in version.split(".")) < high:
        problem = f"unified supports {'.'.join(map(str, low))} up to (not including) {'.'.join(map(str, high))}"
    return {"path": str(path), "found_by": found_by, "version": version, "problem": problem, "native": str(native)}


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
    claude = (binaries or {}).get("claude-code")
    if name == "claude-code" and claude is not None and (claude["path"] is None or claude["problem"]):
        problems.append(f"the claude binary: {claude['problem'] or 'not found'}")
    codex = (binaries or {}).get("codex")
    if name == "codex" and codex is not None:
        if codex["path"] is None:
            problems.append(f"the codex binary was not found: {codex['found_by']} ({codex['problem']})")
        elif codex["problem"]:
            problems.append(f"codex {codex['version']} at {codex['path']}: {codex['problem']}")
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
    claude = claude_binary(env)
    codex = codex_binary(env, cwd or Path.cwd())
    binaries = {"claude-code": claude, "codex": codex}
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
