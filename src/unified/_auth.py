"""Which Google credentials are present, found from the environment and well-known files.

Routing needs to know which backends *can* authenticate before it picks one, and `unified doctor`
needs to tell a person why nothing works. Both need where a credential came from, never what it
is: a report names variables and files and holds no secret value, so it is safe to print, log
and dump as JSON. Nothing here contacts a server; a credential found may still be refused.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, computed_field

from unified._files import read_regular
from unified._urls import base_url_refusal

__all__ = [
    "ANTHROPIC_MODES",
    "API_AUTH_TITLES",
    "AUTH_MODES",
    "AUTH_MODE_TITLES",
    "GEMINI_API_URL",
    "VERTEX_GLOBAL_URL",
    "ApiAuth",
    "ApiAuthKind",
    "AuthMode",
    "AuthModeName",
    "AuthReport",
    "api_modes",
    "claude_code_home",
    "claude_code_modes",
    "cli_api_key",
    "detect_auth",
    "detect_cli_auth",
    "on_google_cloud",
    "openai_modes",
    "resolve_api_auth",
    "vertex_from_env",
]

AuthModeName = Literal[
    "api_key",
    "vertex",
    "code_assist",
    "gateway",
    "anthropic_api_key",
    "anthropic_gateway",
    "bedrock",
    "claude_vertex",
    "claude_login",
    "openai_api_key",
    "openai_base_url",
    "chatgpt_login",
]
AUTH_MODES: tuple[AuthModeName, ...] = get_args(AuthModeName)
"""Every auth mode, in the order the Literal names them (one list: the Literal is the source)."""

AUTH_MODE_TITLES: dict[AuthModeName, str] = {
    "api_key": "Gemini API key",
    "vertex": "Vertex AI",
    "code_assist": "Code Assist login (Gemini CLI OAuth)",
    "gateway": "Gateway (custom GOOGLE_GEMINI_BASE_URL)",
    "anthropic_api_key": "Anthropic API key",
    "anthropic_gateway": "Anthropic gateway (custom ANTHROPIC_BASE_URL)",
    "bedrock": "Claude on Amazon Bedrock",
    "claude_vertex": "Claude on Google Vertex AI",
    "claude_login": "Claude login (Claude Code OAuth)",
    "openai_api_key": "OpenAI API key",
    "openai_base_url": "OpenAI-compatible server (custom OPENAI_BASE_URL)",
    "chatgpt_login": "ChatGPT login (Codex CLI)",
}

_TRUE = frozenset({"1", "true", "yes", "on"})

ApiAuthKind = Literal["api_key", "vertex_adc", "vertex_express", "gateway"]
API_AUTH_TITLES: dict[ApiAuthKind, str] = {
    "api_key": "Gemini API key",
    "vertex_adc": "Vertex AI with Application Default Credentials",
    "vertex_express": "Vertex AI express mode (API key, no project)",
    "gateway": "Gateway (custom GOOGLE_GEMINI_BASE_URL)",
}
GEMINI_API_URL = "https://generativelanguage.googleapis.com/"
VERTEX_GLOBAL_URL = "https://aiplatform.googleapis.com/"
_VERTEX_VARIANT: dict[ApiAuthKind, str] = {"vertex_adc": "with ADC", "vertex_express": "express mode"}
_VERTEX_MULTI_REGIONS = frozenset({"us", "eu"})
"""google-genai sends these locations to `aiplatform.<location>.rep.googleapis.com`."""


NO_ADC = (
    "no Application Default Credentials (run `gcloud auth application-default login` or set "
    "GOOGLE_APPLICATION_CREDENTIALS; on Google Cloud the metadata server gives them)"
)
_GOOGLE_CLOUD_VARIABLES = (
    "GCE_METADATA_HOST",
    "GCE_METADATA_IP",
    "K_SERVICE",
    "CLOUD_RUN_JOB",
    "FUNCTION_TARGET",
    "GAE_ENV",
    "CLOUD_SHELL",
)
_DMI_PRODUCT = Path("/sys/class/dmi/id/product_name")


def on_google_cloud(env: Mapping[str, str]) -> bool:
    """Whether a metadata server likely gives credentials here (Compute Engine, Cloud Run, Functions, App
    Engine, Cloud Shell), told without contacting it: the runtime's variables or the machine's DMI name,
    google-auth's own test. `NO_GCE_CHECK=true` says no, as it tells google-auth not to probe."""
    if env.get("NO_GCE_CHECK", "").lower() in ("true", "1"):
        return False
    if any(env.get(name) for name in _GOOGLE_CLOUD_VARIABLES):
        return True
    try:
        return _DMI_PRODUCT.read_text(encoding="utf-8").strip().startswith("Google")
    except OSError:
        return False


def _sdk_flag(value: str | None) -> bool | None:
    """google-genai's reading of a boolean variable: unset is None, only `true`/`1` (any case) are true."""
    return None if value is None else value.lower() in ("true", "1")


def vertex_from_env(env: Mapping[str, str]) -> bool:
    """Whether google-genai goes to Vertex AI by the environment alone: GOOGLE_GENAI_USE_ENTERPRISE,
    else GOOGLE_GENAI_USE_VERTEXAI (what `resolve_api_auth` decides when no `vertexai` is given)."""
    enterprise = _sdk_flag(env.get("GOOGLE_GENAI_USE_ENTERPRISE"))
    return enterprise if enterprise is not None else bool(_sdk_flag(env.get("GOOGLE_GENAI_USE_VERTEXAI")))


class ApiAuth(BaseModel):
    """How the API backends (generate-content, interactions) authenticate here, as google-genai will.

    The one resolution behind `detect_auth` (routing, `doctor`) and the client builder
    (`unified._internal.genai_client`), so what is said is what is sent. The key and the full base
    URL (a gateway's may carry a token) are excluded from `repr` and from dumps; `endpoint` shows
    the base URL's origin only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ApiAuthKind
    vertexai: bool
    base_url: str = Field(repr=False, exclude=True)
    endpoint: str
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    key_source: str | None = None
    project: str | None = None
    project_source: str | None = None
    location: str | None = None
    credentials: str | None = None
    """Vertex with ADC: where the credentials come from (never their content)."""
    problems: tuple[str, ...] = ()
    hint: str | None = None
    notes: tuple[str, ...] = ()
    base_url_refused: bool = Field(default=False, exclude=True)
    """`problems[0]` and `hint` say the base URL is none a request can be sent to (`_urls.base_url_refusal`): a run
    fails `configuration_error`, as the binary backends' do, not `auth_error` (no credential would help)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usable(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        """One line, secret-free: the mode, where each setting came from, where requests go, the first problem."""
        text = f"{API_AUTH_TITLES[self.kind]}, {self.settings()}"
        if self.problems:
            text += f": not usable, {self.problems[0]}"
        return text

    def settings(self) -> str:
        """Where each setting came from and where requests go (secret-free)."""
        parts = [_VERTEX_VARIANT[self.kind]] if self.kind in _VERTEX_VARIANT else []
        if self.key_source:
            parts.append(f"key from {self.key_source}")
        if self.project:
            parts.append(f"project {self.project} from {self.project_source}")
        if self.location:
            parts.append(f"location {self.location}")
        if self.credentials:
            parts.append(f"credentials {self.credentials}")
        parts.append(f"to {self.endpoint}")
        return ", ".join(parts)


def resolve_api_auth(
    env: Mapping[str, str] | None = None,
    *,
    home: Path | None = None,
    api_key: str | None = None,
    vertexai: bool | None = None,
    project: str | None = None,
    location: str | None = None,
    base_url: str | None = None,
    credentials: bool = False,
) -> ApiAuth:
    """The API backends' auth from explicit settings (the backend options) and `env`, in google-genai's order.

    Explicit values beat the environment. Vertex AI is on when `vertexai` is True, else when
    GOOGLE_GENAI_USE_ENTERPRISE (then GOOGLE_GENAI_USE_VERTEXAI) is `true` or `1`. On Vertex, a
    project or location (GOOGLE_CLOUD_PROJECT/LOCATION) beats an API key from the environment:
    the run uses ADC and the key is ignored; express mode needs the key and no project or location.
    `credentials` says the caller supplies google-auth credentials (they beat any key from the
    environment). Nothing is contacted; `problems` say what google-genai would refuse up front.
    """
    env = os.environ if env is None else env
    if vertexai is None:
        vertexai = vertex_from_env(env)
    env_key_source = next((n for n in ("GOOGLE_API_KEY", "GEMINI_API_KEY") if env.get(n)), None)
    env_key = env[env_key_source] if env_key_source else None
    key, key_source = (api_key, "the api_key option") if api_key else (env_key, env_key_source)
    if not vertexai:
        return _gemini_api_auth(env, key, key_source, base_url)

    notes: list[str] = []
    problems: list[str] = []
    env_project = env.get("GOOGLE_CLOUD_PROJECT") or None
    env_location = env.get("GOOGLE_CLOUD_LOCATION") or None
    if credentials and api_key:
        problems.append("credentials and an API key were both given: google-genai takes one or the other")
    elif credentials or ((project or location) and not api_key):
        key = key_source = None
    elif api_key and not (project or location):
        env_project = env_location = None  # an explicit key beats a project/location from the environment
    elif env_key and (env_project or env_location) and not (project or location):
        notes.append(
            f"{env_key_source} is ignored: GOOGLE_CLOUD_PROJECT/LOCATION win over a key from the environment "
            "(unset them for Vertex AI express mode)"
        )
        key = key_source = None
    chosen_project, project_source = (
        (project, "the project option") if project else (env_project, "GOOGLE_CLOUD_PROJECT")
    )
    chosen_location = location or env_location
    custom = base_url or env.get("GOOGLE_VERTEX_BASE_URL") or None
    unsendable = _unsendable(key, key_source, custom, "the base_url option" if base_url else "GOOGLE_VERTEX_BASE_URL")
    if unsendable is not None:
        problems.insert(0, unsendable[0])  # first: a refused base URL is what a run says (`base_url_refused`)
    if key and (chosen_project or chosen_location):
        problems.append("an API key and a project/location were both given: pass one (key: express mode)")
    if key:
        url = custom or VERTEX_GLOBAL_URL
        return ApiAuth(
            kind="vertex_express",
            vertexai=True,
            base_url=url,
            endpoint=_origin(url),
            api_key=key,
            key_source=key_source,
            problems=tuple(problems),
            base_url_refused=unsendable is not None and unsendable[2],
            hint=unsendable[1]
            if unsendable is not None
            else "give an API key alone (express mode: unset GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION) "
            "or a project with credentials (ADC), not both"
            if problems
            else None,
            notes=tuple(notes),
        )
    adc = _adc_file(env, home or Path(env.get("HOME") or Path.home()))
    source = "supplied in the credentials option" if credentials else None
    if adc is not None and source is None:
        content = _read_json_object(adc)
        if content is None:
            problems.append(f"the credentials file {adc} is missing or not JSON")
        else:
            source = str(adc)
            if chosen_project is None:
                # Only the project is read: the file's tokens and keys never leave it.
                field = content.get("quota_project_id") or content.get("project_id")
                chosen_project, project_source = (
                    (field, "the credentials file") if isinstance(field, str) else (None, "")
                )
    if chosen_project is None:
        problems.append("Vertex AI with ADC needs a project: set GOOGLE_CLOUD_PROJECT")
    elif source is None and not problems:
        if on_google_cloud(env):
            notes.append("no Application Default Credentials file; on Google Cloud the metadata server provides them")
        else:  # google-auth would fail at the first request: say so now, as doctor and routing do
            problems.append(NO_ADC)
    chosen_location = chosen_location or "global"
    if custom:
        url = custom
    elif chosen_location == "global":
        url = VERTEX_GLOBAL_URL
    elif chosen_location in _VERTEX_MULTI_REGIONS:
        url = f"https://aiplatform.{chosen_location}.rep.googleapis.com/"
    else:
        url = f"https://{chosen_location}-aiplatform.googleapis.com/"
    return ApiAuth(
        kind="vertex_adc",
        vertexai=True,
        base_url=url,
        endpoint=_origin(url),
        project=chosen_project,
        project_source=project_source if chosen_project else None,
        location=chosen_location,
        credentials=source,
        problems=tuple(problems),
        base_url_refused=unsendable is not None and unsendable[2],
        hint=unsendable[1]
        if unsendable is not None
        else (
            "set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION and run `gcloud auth application-default login`, "
            "or set GOOGLE_API_KEY alone for express mode"
        )
        if problems
        else None,
        notes=tuple(notes),
    )


def _gemini_api_auth(env: Mapping[str, str], key: str | None, key_source: str | None, base_url: str | None) -> ApiAuth:
    url_source = "the base_url option" if base_url else "GOOGLE_GEMINI_BASE_URL"
    return _gemini_api_auth_of(key, key_source, base_url or env.get("GOOGLE_GEMINI_BASE_URL") or None, url_source)


def _unsendable(
    key: str | None, key_source: str | None, url: str | None, url_source: str
) -> tuple[str, str, bool] | None:
    """What google-genai could not send, what to do, and whether it is the base URL: one it cannot parse or connect
    to (an unclosed `[`, a port of letters or past 65535, a scheme but http/https), in the words every backend uses
    (`base_url_refusal`), or a key an HTTP header cannot carry (a line break, a character that is not ASCII). Each
    failed only at the first request, as `internal_error` ("a bug in unified") or a `stream_interrupted` that said
    to run again. Neither the URL (a gateway's may carry a token) nor the key is repeated."""
    refusal = base_url_refusal(url, url_source, "google-genai") if url is not None else None
    if refusal is not None:
        return (*refusal, True)
    if key:
        at = next((i for i, ch in enumerate(key) if not " " <= ch <= "~"), None)
        if at is not None:
            what = "a line break" if key[at] in "\r\n" else f"the character U+{ord(key[at]):04X}"
            return (
                f"the API key from {key_source} holds {what} (at character {at}), which no HTTP header can carry",
                f"copy the key into {key_source} again, without it",
                False,
            )
    return None


@functools.lru_cache(maxsize=32)
def _gemini_api_auth_of(key: str | None, key_source: str | None, custom: str | None, url_source: str) -> ApiAuth:
    """The Gemini API's auth, a pure function of these (ApiAuth is frozen): built once per set, as
    every run of an API backend resolves it before its first request."""
    url = custom or GEMINI_API_URL
    problems: tuple[str, ...] = ()
    hint = None
    unsendable = _unsendable(key, key_source, custom, url_source)
    if unsendable is not None:
        problems, hint = (unsendable[0],), unsendable[1]
    elif key is None and custom:
        problems = (
            "a gateway without an API key: google-genai sends every Gemini API request with a key and "
            "will not start without one",
        )
        hint = "set GEMINI_API_KEY to the key your gateway expects (any value if it ignores the x-goog-api-key header)"
    elif key is None:
        problems = ("no API key",)
        hint = "set GEMINI_API_KEY (or GOOGLE_API_KEY), or use Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true"
    return ApiAuth(
        kind="gateway" if custom else "api_key",
        vertexai=False,
        base_url=url,
        endpoint=_origin(url),
        api_key=key,
        key_source=key_source,
        problems=problems,
        hint=hint,
        base_url_refused=unsendable is not None and unsendable[2],
    )


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
    backend_modes: dict[str, tuple[AuthMode, ...]] = Field(default_factory=dict)
    """Backends that authenticate their own way: backend -> the modes it will use here, in place of `modes`
    (gemini-cli: what the CLI itself reads, `detect_cli_auth`; credentials given in code, `with_backend`)."""
    api: ApiAuth | None = None
    """What the API backends will do here (`resolve_api_auth`); routing and `doctor` print it."""
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

    def modes_for(self, backend: str) -> tuple[AuthMode, ...]:
        """The modes `backend` will use here (its own, when it authenticates its own way)."""
        return self.backend_modes.get(backend, self.modes)

    def get_for(self, backend: str, mode: AuthModeName) -> AuthMode | None:
        return next((m for m in self.modes_for(backend) if m.mode == mode), None)

    def usable_modes_for(self, backend: str) -> tuple[AuthModeName, ...]:
        usable = {m.mode for m in self.modes_for(backend) if m.usable}
        return tuple(m for m in AUTH_MODES if m in usable)

    def with_backend(self, backend: str, modes: tuple[AuthMode, ...]) -> AuthReport:
        """This report, with `backend`'s modes replaced (credentials given in code for that backend)."""
        return self.model_copy(update={"backend_modes": {**self.backend_modes, backend: modes}})


def detect_auth(
    env: Mapping[str, str] | None = None, home: Path | None = None, claude_home: Path | None = None
) -> AuthReport:
    """Find the auth modes present in `env` (default: the process environment) and under `home`.

    `home` stands for both the Gemini CLI's home (default `GEMINI_CLI_HOME`, then `HOME`) and the
    user's home where gcloud keeps Application Default Credentials (default `HOME`). The API
    backends' mode comes from `resolve_api_auth`, the same resolution their client is built from.
    `claude_home` is the claude-code backend's own CLI home (default: the one in unified's data
    folder), where its Claude login lives; Claude Code's modes come from `claude_code_modes`.
    """
    env = dict(os.environ if env is None else env)
    user_home = home or Path(env.get("HOME") or Path.home())
    cli_home = home or Path(env.get("GEMINI_CLI_HOME") or user_home)
    api = resolve_api_auth(env, home=user_home)
    found = [
        *api_modes(api, env, user_home),
        *filter(None, [_code_assist(env, cli_home)]),
        *claude_code_modes(env, claude_home or claude_code_home(env), user_home),
        *openai_modes(env, home or user_home),
    ]
    selected = _cli_selected_type(cli_home / ".gemini" / "settings.json")
    notes = []
    if selected is not None:
        notes.append(f"the Gemini CLI's settings select auth type {selected!r}; the gemini-cli backend follows them")
    return AuthReport(
        modes=tuple(found),
        backend_modes={"gemini-cli": detect_cli_auth(env, cli_home, user_home)},
        api=api,
        cli_selected_type=selected,
        notes=tuple(notes),
    )


CLI_BACKEND = "gemini-cli"
_CLI_TYPE_MODES: dict[str, AuthModeName] = {
    "gemini-api-key": "api_key",
    "gateway": "gateway",
    "vertex-ai": "vertex",
    "compute-default-credentials": "vertex",
    "oauth-personal": "code_assist",
}


def cli_api_key(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the key the Gemini CLI sends, where it is from): GEMINI_API_KEY, else GOOGLE_API_KEY, which the
    gemini-cli backend hands the CLI as GEMINI_API_KEY (the CLI itself reads only GEMINI_API_KEY)."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        if env.get(name, "").strip():
            return env[name], name
    return None, None


def detect_cli_auth(
    env: Mapping[str, str], cli_home: Path | None = None, user_home: Path | None = None
) -> tuple[AuthMode, ...]:
    """How the Gemini CLI 0.61 authenticates over ACP here, as its `session/new` decides, and what is missing.

    Its settings' `security.auth.selectedType` decides; without one, a `GOOGLE_GEMINI_BASE_URL` means its
    `gateway` type and anything else its API key type. Over ACP it reads no GOOGLE_GENAI_USE_VERTEXAI or
    GOOGLE_GENAI_USE_GCA (only its headless mode does): Vertex AI and a Google login need that setting.
    `env` is what the CLI is started with (`backend_options.env` included).
    """
    user_home = user_home or Path(env.get("HOME") or Path.home())
    cli_home = cli_home or Path(env.get("GEMINI_CLI_HOME") or user_home)
    settings = cli_home / ".gemini" / "settings.json"
    selected = _cli_selected_type(settings)
    base_url = env.get("GOOGLE_GEMINI_BASE_URL", "").strip()
    chosen = selected or ("gateway" if base_url else "gemini-api-key")
    source = f"{settings} (security.auth.selectedType = {selected!r})" if selected else "the environment"
    notes: list[str] = []
    for flag in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"):
        if _sdk_flag(env.get(flag)) and chosen not in ("vertex-ai", "oauth-personal"):
            notes.append(
                f"the Gemini CLI does not read {flag} over ACP; select the auth type in `gemini` (/auth) to use it"
            )
    mode = _CLI_TYPE_MODES.get(chosen)
    if mode is None:
        problem = f"the Gemini CLI's settings select auth type {chosen!r}, which unified does not know"
        return (AuthMode(mode="api_key", source=source, problems=(problem,), notes=tuple(notes)),)
    key, key_source = cli_api_key(env)
    problems: list[str] = []
    detail = None
    if chosen == "gemini-api-key":
        mode = "gateway" if base_url else "api_key"
        if key is None:
            problems.append("the Gemini CLI has no API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        detail = f"key from {key_source}, to {_origin(base_url) if base_url else GEMINI_API_URL}" if key else None
    elif chosen == "gateway":
        detail = f"to {_origin(base_url) if base_url else '(no GOOGLE_GEMINI_BASE_URL)'}"
        if key is None:
            notes.append("no API key: the CLI sends its gateway requests without one")
    elif chosen == "vertex-ai":
        project = env.get("GOOGLE_CLOUD_PROJECT") or env.get("GOOGLE_CLOUD_PROJECT_ID")
        location = env.get("GOOGLE_CLOUD_LOCATION")
        if env.get("GOOGLE_API_KEY", "").strip():
            detail = "express mode, key from GOOGLE_API_KEY"
        elif project and location:
            detail = f"project {project}, location {location}"
            if _adc_file(env, user_home) is None and not on_google_cloud(env):
                problems.append(NO_ADC)
        else:
            problems.append(
                "the Gemini CLI's Vertex AI needs GOOGLE_API_KEY, or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"
            )
    elif chosen == "compute-default-credentials":
        if not on_google_cloud(env):
            problems.append("the CLI's compute credentials come from a metadata server, and there is none here")
    else:  # oauth-personal
        found = _code_assist({**env, "GOOGLE_GENAI_USE_GCA": "true"}, cli_home)
        assert found is not None
        problems += found.problems
        notes += found.notes
        source = found.source if found.source != "GOOGLE_GENAI_USE_GCA" else source
    return (AuthMode(mode=mode, source=source, detail=detail, problems=tuple(problems), notes=tuple(notes)),)


_API_MODE: dict[ApiAuthKind, AuthModeName] = {
    "api_key": "api_key",
    "gateway": "gateway",
    "vertex_adc": "vertex",
    "vertex_express": "vertex",
}


def api_modes(api: ApiAuth, env: Mapping[str, str], user_home: Path) -> list[AuthMode]:
    """The mode the API backends will use (if anything points at one), plus ADC left unused."""
    modes = []
    flag = next((n for n in ("GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GENAI_USE_VERTEXAI") if _set(env, n)), None)
    if api.vertexai:
        source = flag or "the vertexai option"
    else:
        source = api.key_source or ("GOOGLE_GEMINI_BASE_URL" if api.kind == "gateway" else "")
    if source:
        notes = list(api.notes)
        if _set(env, "GOOGLE_API_KEY") and not _set(env, "GEMINI_API_KEY") and api.key_source == "GOOGLE_API_KEY":
            notes.append("the Gemini CLI itself reads GEMINI_API_KEY, not GOOGLE_API_KEY")
        if _set(env, "GOOGLE_API_KEY") and _set(env, "GEMINI_API_KEY"):
            notes.append("GOOGLE_API_KEY and GEMINI_API_KEY are both set: google-genai uses GOOGLE_API_KEY")
        if api.kind == "gateway":
            notes.append(
                "the Gemini CLI needs security.auth.selectedType = 'gemini-api-key' to send an API key to a gateway"
            )
        problems = tuple(f"{p}; {api.hint}" if api.hint and i == 0 else p for i, p in enumerate(api.problems))
        modes.append(
            AuthMode(
                mode=_API_MODE[api.kind],
                source=source,
                detail=api.settings(),
                problems=problems,
                notes=tuple(notes),
            )
        )
    adc = _adc_file(env, user_home)
    if adc is not None and not api.vertexai:
        modes.append(
            AuthMode(
                mode="vertex",
                source=str(adc),
                problems=("GOOGLE_GENAI_USE_VERTEXAI is not set: set it to true to use these credentials",),
            )
        )
    return modes


def _set(env: Mapping[str, str], name: str) -> bool:
    return bool(env.get(name, "").strip())


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
        data = json.loads(read_regular(path))  # a FIFO or a device there: refused, never waited on
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


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
    try:
        parts = urlsplit(url.strip())  # an unclosed `[` raises here
    except ValueError:
        return "(not a URL)"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    if not parts.scheme or not parts.hostname:
        return "(not a URL)"
    return f"{parts.scheme}://{parts.hostname}{port}"


def _cli_selected_type(settings: Path) -> str | None:
    content = _read_json_object(settings)
    if content is None:
        return None
    security = content.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    selected = auth.get("selectedType") if isinstance(auth, dict) else content.get("selectedAuthType")
    return selected if isinstance(selected, str) else None


# --- Claude Code (the claude-code backend) ----------------------------------------------------------

ANTHROPIC_MODES: frozenset[AuthModeName] = frozenset(
    {"anthropic_api_key", "anthropic_gateway", "bedrock", "claude_vertex", "claude_login"}
)


def claude_code_home(env: Mapping[str, str] | None = None) -> Path:
    """The claude-code backend's own CLI home (HOME of the child; its CLAUDE_CONFIG_DIR is `.claude` in it):
    `<unified's data folder>/claude-code/home`, as `unified._adapters.claude_code._launch.default_home` says
    (`XDG_DATA_HOME` of `env` when it names one)."""
    if env is not None and env.get("XDG_DATA_HOME", "").strip():
        return Path(env["XDG_DATA_HOME"]) / "unified" / "claude-code" / "home"
    import platformdirs

    return Path(platformdirs.user_data_dir("unified", appauthor=False)) / "claude-code" / "home"


def _claude_login(claude_home: Path, user_home: Path) -> AuthMode | None:
    """A Claude login in the backend's home; one in the user's own `~/.claude` is named, never used."""
    creds = claude_home / ".claude" / ".credentials.json"
    content = _read_json_object(creds) if creds.exists() else None
    oauth = content.get("claudeAiOauth") if content else None
    if isinstance(oauth, dict) and isinstance(oauth.get("accessToken"), str) and oauth["accessToken"]:
        notes: list[str] = []
        expires = oauth.get("expiresAt")
        if isinstance(expires, int | float):
            import time

            if expires / 1000 < time.time():
                notes.append("the login's access token has expired; the CLI refreshes it with the refresh token")
        detail = f"subscription {oauth['subscriptionType']}" if isinstance(oauth.get("subscriptionType"), str) else None
        return AuthMode(mode="claude_login", source=str(creds), detail=detail, notes=tuple(notes))
    if creds.exists():
        return AuthMode(
            mode="claude_login",
            source=str(creds),
            problems=(f"{creds} holds no claudeAiOauth access token: log in again",),
        )
    own = user_home / ".claude" / ".credentials.json"
    if own.exists():
        return AuthMode(
            mode="claude_login",
            source=str(own),
            problems=(
                "this is your own Claude Code login: unified never reads or writes ~/.claude; log in once in the "
                f"backend's home: CLAUDE_CONFIG_DIR={claude_home / '.claude'} claude, then /login",
            ),
        )
    return None


def claude_code_modes(env: Mapping[str, str], claude_home: Path, user_home: Path) -> list[AuthMode]:
    """The ways Claude Code can authenticate here, as the CLI picks them: Bedrock or Vertex when their
    flag is set, else a key or token (sent to ANTHROPIC_BASE_URL when set: a gateway), else a Claude login."""
    modes: list[AuthMode] = []
    bedrock, vertex = _set(env, "CLAUDE_CODE_USE_BEDROCK"), _set(env, "CLAUDE_CODE_USE_VERTEX")
    if bedrock:
        problems = []
        region = next((n for n in ("AWS_REGION", "AWS_DEFAULT_REGION") if _set(env, n)), None)
        if region is None:
            problems.append("Bedrock needs a region: set AWS_REGION")
        skip = _set(env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH")
        creds = next(
            (n for n in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_PROFILE") if _set(env, n)), None
        )
        aws_file = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or user_home / ".aws" / "credentials")
        source = creds or (str(aws_file) if aws_file.is_file() else None)
        if source is None and not skip:
            problems.append(
                "no AWS credentials found (AWS_ACCESS_KEY_ID, AWS_PROFILE, AWS_BEARER_TOKEN_BEDROCK or "
                "~/.aws/credentials); CLAUDE_CODE_SKIP_BEDROCK_AUTH=1 for a gateway that signs requests itself"
            )
        url = env.get("ANTHROPIC_BEDROCK_BASE_URL")
        parts = [f"region {env[region]}" if region else None, f"credentials {source}" if source else None]
        if skip:
            parts.append("no request signing (CLAUDE_CODE_SKIP_BEDROCK_AUTH)")
        parts.append(f"to {_origin(url)}" if url else "to Amazon Bedrock")
        modes.append(
            AuthMode(
                mode="bedrock",
                source="CLAUDE_CODE_USE_BEDROCK",
                detail=", ".join(p for p in parts if p),
                problems=tuple(problems),
            )
        )
    if vertex:
        problems = []
        if not _set(env, "CLOUD_ML_REGION"):
            problems.append("Claude on Vertex AI needs a region: set CLOUD_ML_REGION")
        if not _set(env, "ANTHROPIC_VERTEX_PROJECT_ID"):
            problems.append("Claude on Vertex AI needs a project: set ANTHROPIC_VERTEX_PROJECT_ID")
        skip = _set(env, "CLAUDE_CODE_SKIP_VERTEX_AUTH")
        adc = _adc_file(env, user_home)
        if adc is None and not skip:
            problems.append(
                "no Google credentials found (gcloud auth application-default login, or "
                "GOOGLE_APPLICATION_CREDENTIALS); CLAUDE_CODE_SKIP_VERTEX_AUTH=1 for a gateway that "
                "authenticates itself"
            )
        url = env.get("ANTHROPIC_VERTEX_BASE_URL")
        parts = [
            f"project {env['ANTHROPIC_VERTEX_PROJECT_ID']}" if _set(env, "ANTHROPIC_VERTEX_PROJECT_ID") else None,
            f"region {env['CLOUD_ML_REGION']}" if _set(env, "CLOUD_ML_REGION") else None,
            f"credentials {adc}" if adc else ("no credentials (CLAUDE_CODE_SKIP_VERTEX_AUTH)" if skip else None),
            f"to {_origin(url)}" if url else "to Vertex AI",
        ]
        modes.append(
            AuthMode(
                mode="claude_vertex",
                source="CLAUDE_CODE_USE_VERTEX",
                detail=", ".join(p for p in parts if p),
                problems=tuple(problems),
            )
        )
    key = next((n for n in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if _set(env, n)), None)
    base = env.get("ANTHROPIC_BASE_URL", "").strip()
    notes: list[str] = []
    if bedrock or vertex:
        notes.append("CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX is set: the CLI uses that instead")
    if key and _set(env, "ANTHROPIC_API_KEY") and _set(env, "ANTHROPIC_AUTH_TOKEN"):
        notes.append("ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are both set: the CLI sends both headers")
    if base:
        modes.append(
            AuthMode(
                mode="anthropic_gateway",
                source=key or "ANTHROPIC_BASE_URL",
                detail=f"{'key from ' + key + ', ' if key else ''}to {_origin(base)}",
                problems=()
                if key
                else ("a gateway without a key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to what it expects",),
                notes=tuple(notes),
            )
        )
    elif key:
        modes.append(
            AuthMode(
                mode="anthropic_api_key",
                source=key,
                detail=f"key from {key}, to https://api.anthropic.com",
                notes=tuple(notes),
            )
        )
    login = _claude_login(claude_home, user_home)
    if login is not None:
        if key or bedrock or vertex:
            login = login.model_copy(
                update={"notes": (*login.notes, "an API key, Bedrock or Vertex setting wins over the login in the CLI")}
            )
        modes.append(login)
    return modes


# --- OpenAI (the codex backend) --------------------------------------------------------------------


def openai_modes(env: Mapping[str, str], user_home: Path) -> list[AuthMode]:
    """What the codex backend authenticates with, in its own order (`unified._adapters.codex._launch`):
    an API key (`OPENAI_API_KEY`; with `OPENAI_BASE_URL`, a server of the caller's), else a ChatGPT login
    in the user's Codex home (`$CODEX_HOME/auth.json`, default `~/.codex`), which is only read."""
    modes: list[AuthMode] = []
    key = _set(env, "OPENAI_API_KEY")
    base_url = env.get("OPENAI_BASE_URL", "").strip()
    if base_url:
        missing = () if key else ("OPENAI_BASE_URL without OPENAI_API_KEY: set the key that server expects",)
        modes.append(
            AuthMode(
                mode="openai_base_url",
                source="OPENAI_BASE_URL",
                detail=f"to {_origin(base_url)}" + (", key from OPENAI_API_KEY" if key else ""),
                problems=missing,
                notes=("Codex's own openai provider ignores OPENAI_BASE_URL: unified gives Codex a provider for it",),
            )
        )
    elif key:
        modes.append(AuthMode(mode="openai_api_key", source="OPENAI_API_KEY", detail="to https://api.openai.com"))
    codex_home = Path(env["CODEX_HOME"]).expanduser() if _set(env, "CODEX_HOME") else user_home / ".codex"
    login = codex_home / "auth.json"
    if login.exists():
        content = _read_json_object(login)
        problems: tuple[str, ...] = ()
        detail = None
        if content is None:
            problems = (f"{login} is unreadable or not JSON: run `codex login` again",)
        elif content.get("auth_mode") == "chatgpt":
            tokens = content.get("tokens")
            if not isinstance(tokens, dict) or not tokens.get("refresh_token"):
                problems = (f"{login} holds a ChatGPT login without tokens: run `codex login` again",)
            detail = "auth_mode chatgpt"
        elif content.get("auth_mode") == "apikey":
            problems = (f"{login} holds an API key login: unified reads keys from OPENAI_API_KEY, not from auth.json",)
        else:
            problems = (f"{login} names no ChatGPT login (auth_mode {content.get('auth_mode')!r})",)
        notes = ("used only when OPENAI_API_KEY is not set",) if key else ()
        modes.append(AuthMode(mode="chatgpt_login", source=str(login), detail=detail, problems=problems, notes=notes))
    return modes
