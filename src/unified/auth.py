"""Which Google credentials are present, found from the environment and well-known files.

Routing needs to know which backends *can* authenticate before it picks one, and `unified doctor`
needs to tell a person why nothing works. Both need where a credential came from, never what it
is: a report names variables and files and holds no secret value, so it is safe to print, log
and dump as JSON. Nothing here contacts a server; a credential found may still be refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, computed_field

AuthModeName = Literal["api_key", "vertex", "code_assist", "gateway"]
AUTH_MODES: tuple[AuthModeName, ...] = ("api_key", "vertex", "code_assist", "gateway")

AUTH_MODE_TITLES: dict[AuthModeName, str] = {
    "api_key": "Gemini API key",
    "vertex": "Vertex AI",
    "code_assist": "Code Assist login (Gemini CLI OAuth)",
    "gateway": "Gateway (custom GOOGLE_GEMINI_BASE_URL)",
}

_TRUE = frozenset({"1", "true", "yes", "on"})


class AuthMode(BaseModel):
    """One way to authenticate that is present here.

    `source` is the variable name or file path it came from. `problems` say what is missing for it
    to work: routing skips a mode with problems, `doctor` explains them. `notes` are caveats.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: AuthModeName
    source: str
    detail: str | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usable(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """One line: what, from where, and the first problem if any."""
        text = f"{AUTH_MODE_TITLES[self.mode]} from {self.source}"
        if self.detail:
            text += f" ({self.detail})"
        if self.problems:
            text += f": incomplete, {self.problems[0]}"
        return text


class AuthReport(BaseModel):
    """Every auth mode found, in no particular order, plus the Gemini CLI's own auth setting."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    modes: tuple[AuthMode, ...] = ()
    cli_selected_type: str | None = None
    """`security.auth.selectedType` of the Gemini CLI's settings: it wins over the environment for the CLI."""
    notes: tuple[str, ...] = ()

    def get(self, mode: AuthModeName) -> AuthMode | None:
        return next((m for m in self.modes if m.mode == mode), None)

    def has(self, mode: AuthModeName) -> bool:
        """Whether `mode` is present and complete."""
        found = self.get(mode)
        return found is not None and found.usable

    @property
    def usable_modes(self) -> tuple[AuthModeName, ...]:
        return tuple(m for m in AUTH_MODES if self.has(m))

    def describe(self) -> str:
        """One line for error messages: every mode found, or that there is none."""
        return "; ".join(m.summary() for m in self.modes) or "no credentials found"


def detect_auth(env: Mapping[str, str] | None = None, home: Path | None = None) -> AuthReport:
    """Find the auth modes present in `env` (default: the process environment) and under `home`.

    `home` stands for both the Gemini CLI's home (default `GEMINI_CLI_HOME`, then `HOME`) and the
    user's home where gcloud keeps Application Default Credentials (default `HOME`).
    """
    env = dict(os.environ if env is None else env)
    user_home = home or Path(env.get("HOME") or Path.home())
    cli_home = home or Path(env.get("GEMINI_CLI_HOME") or user_home)
    found = [
        mode
        for mode in (
            _api_key(env),
            _vertex(env, user_home),
            _code_assist(env, cli_home),
            _gateway(env),
        )
        if mode is not None
    ]
    selected = _cli_selected_type(cli_home / ".gemini" / "settings.json")
    notes = []
    if selected is not None:
        notes.append(f"the Gemini CLI's settings select auth type {selected!r}; the gemini-cli backend follows them")
    return AuthReport(modes=tuple(found), cli_selected_type=selected, notes=tuple(notes))


def _set(env: Mapping[str, str], name: str) -> bool:
    return bool(env.get(name, "").strip())


def _api_key(env: Mapping[str, str]) -> AuthMode | None:
    present = [name for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY") if _set(env, name)]
    if not present:
        return None
    notes = []
    if len(present) == 2:
        notes.append("GOOGLE_API_KEY and GEMINI_API_KEY are both set: google-genai uses GOOGLE_API_KEY")
    elif present == ["GOOGLE_API_KEY"]:
        notes.append("the Gemini CLI itself reads GEMINI_API_KEY, not GOOGLE_API_KEY")
    return AuthMode(mode="api_key", source=present[0], notes=tuple(notes))


def _adc_file(env: Mapping[str, str], user_home: Path) -> Path | None:
    """The Application Default Credentials file: GOOGLE_APPLICATION_CREDENTIALS, else gcloud's."""
    explicit = env.get("GOOGLE_APPLICATION_CREDENTIALS", "").strip()
    if explicit:
        return Path(explicit)
    gcloud_dir = Path(env["CLOUDSDK_CONFIG"]) if _set(env, "CLOUDSDK_CONFIG") else user_home / ".config" / "gcloud"
    candidate = gcloud_dir / "application_default_credentials.json"
    return candidate if candidate.is_file() else None


def _read_json_object(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _vertex(env: Mapping[str, str], user_home: Path) -> AuthMode | None:
    flag = env.get("GOOGLE_GENAI_USE_VERTEXAI", "").strip().lower() in _TRUE
    adc = _adc_file(env, user_home)
    if not flag and adc is None:
        return None
    problems: list[str] = []
    notes: list[str] = []
    credentials: str | None = None
    adc_project: str | None = None
    if adc is not None:
        content = _read_json_object(adc)
        if content is None:
            problems.append(f"the credentials file {adc} is missing or not JSON")
        else:
            credentials = str(adc)
            # Only the project is read: the file's tokens and keys never leave it.
            project_field = content.get("quota_project_id") or content.get("project_id")
            adc_project = project_field if isinstance(project_field, str) else None
    express = flag and _set(env, "GOOGLE_API_KEY")
    if express and credentials is None:
        problems.clear()
        credentials = "GOOGLE_API_KEY (Vertex express mode)"

    project = env.get("GOOGLE_CLOUD_PROJECT", "").strip() or None
    project_source = "GOOGLE_CLOUD_PROJECT" if project else "credentials file"
    project = project or adc_project
    location = env.get("GOOGLE_CLOUD_LOCATION", "").strip() or None
    if project is None and not express:
        problems.append("no project: set GOOGLE_CLOUD_PROJECT")
    if location is None and not express:
        notes.append("GOOGLE_CLOUD_LOCATION is not set (the Gemini CLI requires it for Vertex AI)")
    if credentials is None and not problems and not express:
        notes.append(
            "no Application Default Credentials found (run `gcloud auth application-default login` or set "
            "GOOGLE_APPLICATION_CREDENTIALS); on Google Cloud the metadata server may still provide them"
        )
    if not flag:
        notes.append("GOOGLE_GENAI_USE_VERTEXAI is not set: Vertex AI is used only when a backend is told to")
    if _set(env, "GOOGLE_VERTEX_BASE_URL"):
        notes.append(f"GOOGLE_VERTEX_BASE_URL moves the Vertex host to {_origin(env['GOOGLE_VERTEX_BASE_URL'])}")

    parts = []
    if project:
        parts.append(f"project {project} from {project_source}")
    if location:
        parts.append(f"location {location}")
    if credentials:
        parts.append(f"credentials {credentials}")
    return AuthMode(
        mode="vertex",
        source="GOOGLE_GENAI_USE_VERTEXAI" if flag else str(adc),
        detail=", ".join(parts) or None,
        problems=tuple(problems),
        notes=tuple(notes),
    )


def _code_assist(env: Mapping[str, str], cli_home: Path) -> AuthMode | None:
    creds = cli_home / ".gemini" / "oauth_creds.json"
    flag = env.get("GOOGLE_GENAI_USE_GCA", "").strip().lower() in _TRUE
    if not creds.exists() and not flag:
        return None
    problems = []
    if _read_json_object(creds) is None:
        problems.append(
            f"{creds} is missing or unreadable: run `gemini` once and log in "
            "(credentials kept in the system keychain are not detected)"
        )
    notes = [
        "only the gemini-cli backend can use it; Google stopped serving Code Assist to individual and "
        "AI Pro/Ultra accounts in the CLI after 2026-06-18 (Standard and Enterprise still work)"
    ]
    if _set(env, "CODE_ASSIST_ENDPOINT"):
        notes.append(f"CODE_ASSIST_ENDPOINT moves the Code Assist host to {_origin(env['CODE_ASSIST_ENDPOINT'])}")
    return AuthMode(
        mode="code_assist",
        source=str(creds) if creds.exists() else "GOOGLE_GENAI_USE_GCA",
        problems=tuple(problems),
        notes=tuple(notes),
    )


def _origin(url: str) -> str:
    """scheme://host[:port] of a URL: user info, path and query may carry tokens and are dropped."""
    parts = urlsplit(url.strip())
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    if not parts.scheme or not parts.hostname:
        return "(not a URL)"
    return f"{parts.scheme}://{parts.hostname}{port}"


def _gateway(env: Mapping[str, str]) -> AuthMode | None:
    if not _set(env, "GOOGLE_GEMINI_BASE_URL"):
        return None
    return AuthMode(
        mode="gateway",
        source="GOOGLE_GEMINI_BASE_URL",
        detail=_origin(env["GOOGLE_GEMINI_BASE_URL"]),
        notes=(
            "requests go to this host instead of Google's; the Gemini CLI needs "
            "security.auth.selectedType = 'gemini-api-key' to send an API key there",
        ),
    )


def _cli_selected_type(settings: Path) -> str | None:
    content = _read_json_object(settings)
    if content is None:
        return None
    security = content.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    selected = auth.get("selectedType") if isinstance(auth, dict) else content.get("selectedAuthType")
    return selected if isinstance(selected, str) else None
