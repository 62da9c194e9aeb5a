"""A workspace's own `.gemini/settings.json` and `.env`: what in them would act behind the caller's back, and
whether the CLI reads them at all.

The CLI merges `<cwd>/.gemini/settings.json` into its settings when it trusts the folder: always with folder trust
off (`security.folderTrust.enabled: false`, which a user sets to run yolo), else when `trustedFolders.json` trusts
it. Measured with 0.61 and a hostile repository's file: its `tools.discoveryCommand` ran at `session/new` and its
`mcpServers` were started on both transports, its `hooks` ran over stream-json (`SessionStart`, `BeforeTool`) and
its `context.includeDirectories` let the tools read a folder the run never named, each before or beside anything
unified's policy decides; its `tools.allowed` is now below unified's rules (`_launch.policy_rules`,
`unasked_denials`), its `general.defaultApprovalMode` and `model.name` below the run's explicit mode and model. The
other `UNSAFE_SETTINGS` are taken from the CLI's settings schema (a command, a sandbox image, telemetry's endpoint),
not measured. A file with such a setting in a folder the CLI would trust is refused before the CLI starts
(`workspace_refusal`), and so is an environment file that would move the endpoint (`env_file_refusal`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from unified._files import read_regular

__all__ = ["cli_trusts", "env_file_refusal", "workspace_refusal"]

UNSAFE_SETTINGS = (
    "hooks",
    "mcpServers",
    "mcp.serverCommand",
    "tools.discoveryCommand",
    "tools.callCommand",
    "tools.sandbox",
    "experimental.gemmaModelRouter.enabled",
    "telemetry.enabled",
    "telemetry.otlpEndpoint",
    "telemetry.outfile",
    "context.includeDirectories",
)
"""The settings (set to anything but false or empty) with which the CLI runs a command or a server of the file's
own (hooks, MCP servers, tool discovery and calls, a sandbox image, the Gemma router's binary), sends what the run
does elsewhere (telemetry, prompts included), or lets its tools reach folders the caller never named."""
_MAX_BYTES = 1 << 20


def strip_comments(text: str) -> str:
    """`text` without its `//` and `/* */` comments (outside strings), as the CLI's strip-json-comments reads it."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _settings(path: Path) -> dict[str, Any] | None:
    """The settings file at `path` as the CLI parses it; None when there is none it could use."""
    try:
        data = json.loads(strip_comments(read_regular(path, max_bytes=_MAX_BYTES).decode("utf-8", "replace")))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _get(settings: Mapping[str, Any] | None, dotted: str) -> object:
    value: object = settings
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def cli_trusts(cwd: Path, env: Mapping[str, str], home: Path, system: Path) -> bool:
    """Whether the CLI trusts `cwd` (0.61 `checkPathTrust`): the environment's word, else folder trust off (the
    system's settings, else the user's), else the longest `trustedFolders.json` rule that holds `cwd`. Unsure (an
    unreadable trust file, which the CLI refuses to start over): trusted. In a folder it does not trust the CLI
    ignores the workspace's settings, refuses yolo and starts no stdio MCP server (the run's too, silently)."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return False
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    enabled = _get(_settings(system), "security.folderTrust.enabled")
    if enabled is None:
        enabled = _get(_settings(home / ".gemini" / "settings.json"), "security.folderTrust.enabled")
    if enabled is False:
        return True
    trust_file = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or home / ".gemini" / "trustedFolders.json")
    if not trust_file.exists():
        return False
    rules = _settings(trust_file)
    if rules is None:
        return True
    best, level = -1, None
    for rule, trust in rules.items():
        folder = Path(rule).parent if trust == "TRUST_PARENT" else Path(rule)
        try:
            holds = cwd.is_relative_to(folder.resolve())
        except (OSError, ValueError):
            continue
        if holds and len(rule) > best:
            best, level = len(rule), trust
    return level in ("TRUST_FOLDER", "TRUST_PARENT")


def workspace_refusal(cwd: Path, env: Mapping[str, str], home: Path, system: Path) -> str | None:
    """Why the run must not start in `cwd` (resolved): its `.gemini/settings.json` sets what `UNSAFE_SETTINGS` names
    (or is too large to tell) and the CLI would read it (`cli_trusts`). None when it may: no such file or setting, the
    user's own settings (a home folder), or a folder the CLI does not trust. `home` is the CLI's, `system` its system
    settings file."""
    path = cwd / ".gemini" / "settings.json"
    if cwd == home.resolve():
        return None
    try:
        too_large = path.stat().st_size > _MAX_BYTES
    except OSError:
        return None
    settings = _settings(path)
    found = [key for key in UNSAFE_SETTINGS if _get(settings, key)]
    if not (found or too_large) or not cli_trusts(cwd, env, home, system):
        return None
    return f"{path} is over 1 MiB, too large to read" if too_large else f"{path} sets {', '.join(found)}"


ENDPOINT_VARIABLES = (
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NODE_TLS_REJECT_UNAUTHORIZED",
)
"""What decides where the CLI sends the run's requests and credentials (the endpoint, the auth type, a proxy, TLS
checks), which a workspace's `.env` must not set for the run."""
_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([\w.-]+)\s*[=:]", re.MULTILINE)
"""A variable a dotenv file sets (dotenv's `KEY=value`, `export KEY=value`, `KEY: value`), read over-inclusively."""


def _env_file(cwd: Path, home: Path, trusted: bool) -> Path | None:
    """The one environment file 0.61 loads for `cwd` (`findEnvFile`): up from `cwd`, the first `.gemini/.env` (only in
    a folder it trusts) or `.env`; None when the first is the user's own (at `home` or its `.gemini/`) or none."""
    home = home.resolve()
    for folder in (cwd, *cwd.parents):
        if folder == home:
            return None
        for candidate in ([folder / ".gemini" / ".env"] if trusted else []) + [folder / ".env"]:
            if candidate.exists():
                return candidate
    return None


def env_file_refusal(cwd: Path, env: Mapping[str, str], home: Path, system: Path) -> str | None:
    """Why the run must not start in `cwd` (resolved): the workspace's environment file (`_env_file`) sets one of
    `ENDPOINT_VARIABLES` the run's environment `env` does not, in a folder the CLI trusts. 0.61 loads that file into
    its environment at its start, every variable not set already (in a folder it does not trust only API keys and the
    Google Cloud project and location, none of these), so a repository's `GOOGLE_GEMINI_BASE_URL` would receive the
    run's requests and its key (measured: FakeGemini named there got them). Unsure (a file too large or unreadable):
    refused."""
    path = _env_file(cwd, home, trusted=True)  # the file the CLI loads where it trusts the folder
    if path is None or not cli_trusts(cwd, env, home, system):  # a file system look only when there is one
        return None
    try:
        text = read_regular(path, max_bytes=_MAX_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    found = sorted({m for m in _ASSIGNMENT.findall(text) if m in ENDPOINT_VARIABLES and m not in env})
    return f"{path} sets {', '.join(found)}" if found else None
