"""`unified install-gemini`: the pinned gemini CLI for an installed package, with npm, never globally.

Node.js 20 or newer is checked first, so a missing or old Node is one clear message rather than
an npm failure. npm's own output goes to stderr: stdout stays for what the command reports.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from unified import BackendUnavailable, ConfigurationError

MIN_NODE = (20, 0, 0)
NODE_HINT = "install Node.js 20 or newer (https://nodejs.org or your package manager), then run this again"
NPM_TIMEOUT_S = 900.0
"""A hang guard for `npm install`: a first install downloads tens of MB."""


def node_version(env: Mapping[str, str]) -> tuple[int, int, int]:
    """Node's version; raises ConfigurationError when Node is missing, broken or older than 20."""
    node = shutil.which("node", path=env.get("PATH"))
    if node is None:
        raise ConfigurationError("Node.js was not found on PATH; the gemini CLI needs Node.js 20+", hint=NODE_HINT)
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, env=dict(env), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigurationError(f"{node} --version failed: {exc}", hint=NODE_HINT) from exc
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", done.stdout)
    if done.returncode != 0 or match is None:
        raise ConfigurationError(f"{node} did not report a version ({done.stdout.strip()!r})", hint=NODE_HINT)
    version = (int(match[1]), int(match[2]), int(match[3]))
    if version < MIN_NODE:
        found = ".".join(map(str, version))
        raise ConfigurationError(f"Node.js {found} at {node} is too old; the gemini CLI needs 20+", hint=NODE_HINT)
    return version


def installed_version(prefix: Path) -> str | None:
    """The @google/gemini-cli version under `prefix`, if one is installed there."""
    manifest = prefix / "node_modules" / "@google" / "gemini-cli" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def install_gemini(prefix: Path, version: str, env: Mapping[str, str]) -> tuple[Path, bool]:
    """Install @google/gemini-cli@`version` under `prefix` (idempotent): (the binary, whether npm ran)."""
    binary = prefix / "node_modules" / ".bin" / "gemini"
    if installed_version(prefix) == version and binary.exists():
        return binary, False
    node_version(env)
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise ConfigurationError("npm was not found on PATH (it comes with Node.js)", hint=NODE_HINT)
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"@google/gemini-cli@{version}"]
    try:
        done = subprocess.run(
            command, stdout=sys.stderr, stderr=sys.stderr, env=dict(env), timeout=NPM_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendUnavailable(
            f"npm install did not finish within {NPM_TIMEOUT_S:g} s", hint="check the network and run this again"
        ) from exc
    if done.returncode != 0 or not binary.exists():
        raise BackendUnavailable(
            f"`{' '.join(command)}` failed (exit {done.returncode})", hint="see npm's output above; run this again"
        )
    return binary, True
