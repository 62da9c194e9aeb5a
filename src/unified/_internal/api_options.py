"""The options every API backend (generateContent, Interactions) shares: connection, retries, tools.

Each backend's typed options (`GenerateContentOptions`, `InteractionsOptions`) subclass `ApiOptions`
with their extras; what is here is how they are parsed (`unified._internal.options.parse_options`:
an unknown key or a bad value is the same ConfigurationError on every backend) and how credentials,
base URL and location are resolved (`unified._auth.resolve_api_auth`). Free of google-genai so the
options can be checked before the stream starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from unified._auth import ApiAuth, resolve_api_auth, vertex_from_env
from unified._exports import publish
from unified._internal.api_tools import BUILTIN_TOOLS, ToolProblem, tool_problems
from unified._internal.options import PolicyOption, parse_options
from unified.backends import UnsupportedOption
from unified.errors import AuthError, ConfigurationError
from unified.types import BackendOptions, ExecuteParams

__all__ = [
    "ApiOptions",
    "ApiVersion",
    "FileSearchTool",
    "FunctionCalling",
    "FunctionCallingMode",
    "GoogleMapsTool",
    "LatLng",
    "OptionsT",
    "ParsedOptions",
    "resolve_api_options",
]

ApiVersion = Literal["v1", "v1beta", "v1alpha", "v1beta1"]
FunctionCallingMode = Literal["auto", "any", "none", "validated"]


class _ToolSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoogleMapsTool(_ToolSetting):
    """Grounding with Google Maps (`google_maps=GoogleMapsTool(...)`, or `google_maps=True` for the defaults).

    The user's location, which Maps grounding uses, is the separate `user_location` option.
    """

    enable_widget: bool = False
    """Ask for a `googleMapsWidgetContextToken` (a Places widget) in the grounding metadata."""


class FileSearchTool(_ToolSetting):
    """Retrieval from File Search stores (Gemini Developer API only); docs/api-tools.md."""

    store_names: tuple[str, ...] = Field(min_length=1)
    """The stores to search, as the API names them: `fileSearchStores/<id>`."""
    metadata_filter: str | None = None
    """A filter over the documents' custom metadata (AIP-160 syntax, e.g. `author = "Ada"`)."""
    top_k: int | None = Field(default=None, ge=1)
    """How many chunks to retrieve."""


class LatLng(_ToolSetting):
    """A point in WGS84 degrees: the user's location for Google Maps (and Search) grounding."""

    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)


class FunctionCalling(_ToolSetting):
    """How the model may call functions (`toolConfig.functionCallingConfig`; Interactions: `tool_choice`).

    auto: call or answer; any: must call; none: never call; validated: call or answer, calls checked
    against their schema (the only mode when built-in tools are combined with functions).
    """

    mode: FunctionCallingMode
    allowed_function_names: tuple[str, ...] = ()
    """Restricts the callable functions (tool names as the model sees them); only with any or validated."""

    @model_validator(mode="after")
    def _names_need_a_forcing_mode(self) -> FunctionCalling:
        if self.allowed_function_names and self.mode not in ("any", "validated"):
            raise ValueError(
                f"allowed_function_names works only with mode 'any' or 'validated', not {self.mode!r} "
                "(drop the names or change the mode)"
            )
        return self


class ApiOptions(BackendOptions):
    """The options every API backend takes (each backend's own model adds its extras).

    As passed, credentials and endpoints may be unset (None); `resolve_api_options` fills them
    from the environment, so inside a run they are resolved.
    """

    model_config = ConfigDict(strict=True)

    api_key: str | None = Field(default=None, repr=False)
    vertexai: bool | None = None
    """None: from GOOGLE_GENAI_USE_VERTEXAI."""
    project: str | None = None
    location: str | None = None
    base_url: str | None = None
    credentials: Any = Field(default=None, repr=False, exclude=True)
    """google-auth credentials for Vertex AI (instead of Application Default Credentials)."""
    auth: ApiAuth | None = Field(default=None, exclude=True)
    """Set by `resolve_api_options`, never by the caller: what the client is built from."""
    api_version: ApiVersion | None = None
    """None: v1beta on the Gemini API, v1beta1 on Vertex AI."""
    timeout_s: float = Field(default=90.0, ge=0.001, allow_inf_nan=False)
    """Per attempt: the longest wait to connect (at most 30 s), for the response headers, or between
    two chunks of a stream. Finite: the SDK takes it in whole milliseconds (infinity ended a run in
    `internal_error`, OverflowError), so at least one: under 1 ms it became 0, which the SDK sends as no
    timeout at all (generate-content waited for ever) while Interactions' client gave up before connecting."""
    request_deadline_s: float = Field(default=180.0, gt=0)
    """Per model request, over all its attempts: no retry starts after this (the error says what was tried)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries of one model request after a retryable failure (not counting the first try)."""
    max_retry_delay_s: float = Field(default=60.0, ge=0)
    """A 429 asking to wait longer than this ends the run at once with `rate_limited`."""
    retry_delay_scale: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    """Multiplies every wait; tests set it small so RetryInfo delays of seconds take milliseconds. Finite: infinity
    times a RetryInfo of "0s" is NaN, which the sleep refused (ValueError: `internal_error` on a retry)."""
    loop_threshold: int = Field(default=4, ge=2)
    """The same call with the same arguments this many turns in a row is a runaway loop."""
    local_tools: bool = True
    hide_host_environment: bool = True
    """Before the local tools' first shell command or stdio MCP server, make this process undumpable (Linux), so no
    command can read its environment's keys in `/proc/<pid>/environ` (docs/tools.md, "The host's own environment":
    process-wide, no core dump, no same-user debugger). False: leave it dumpable."""
    policy: PolicyOption = None
    """The permission policy deciding every local tool call, `delegate` included (a `unified.tools.Policy`, as
    the claude-code backend takes; None: the shipped one, `Policy.default()`). A user's deny rule for `delegate`
    is how a caller forbids subagents by policy (`excluded_tools` does it by not offering the tool)."""
    subagents: bool = True
    """With `local_tools`, offer the model a `delegate` tool that hands a self-contained task to a subagent: a
    new conversation of the same model with the same tools and policy, whose events carry its task's id and
    whose final answer is the call's result (docs/backends/api-loop.md, "Subagents"), as the agent binaries
    offer theirs. False: one declaration less in every request."""
    max_subagents: int = Field(default=16, ge=0)
    """Subagents one run may start (`delegate` calls that ran); a later call is answered "not run". Each may make
    up to `max_turns` (50 when unset) model requests, so this bounds what delegation can multiply."""
    max_requests: int | None = Field(default=None, ge=1)
    """The run's model requests in all, its subagents' included (None: no bound on the total; `max_turns` bounds
    the run's own requests and each subagent's, as it counts the main agent's turns on every backend, and
    `max_subagents` how many subagents there are). Reached, the run ends `max_turns` saying so; a subagent that
    reaches it ends `max_turns`, and its run with it."""
    google_search: bool = False
    url_context: bool = False
    code_execution: bool = False
    google_maps: bool | GoogleMapsTool = False
    file_search: FileSearchTool | None = None
    user_location: LatLng | None = None
    """Where the user is, for Google Maps (and Search) grounding."""
    function_calling: FunctionCalling | None = None
    """None: the API's default (auto; validated when built-in tools are combined with functions)."""
    server_side_tool_invocations: bool | None = None
    """generateContent on Gemini 3: return the built-in tools' calls and results as `toolCall` /
    `toolResponse` parts (echoed back in the history). None: on exactly when the API requires it
    (built-in tools combined with function calling)."""
    tool_checks: Literal["error", "warn"] = "error"
    """`warn`: a tool combination `api_tools.toml` says the API refuses is sent anyway, with a warning
    (for when the documentation lags behind the models)."""

    @property
    def google_tools(self) -> tuple[str, ...]:
        """The Google built-in tools switched on, in `BUILTIN_TOOLS` order."""
        return tuple(name for name in BUILTIN_TOOLS if getattr(self, name) not in (False, None))

    def tool_features(self, *, functions: bool, invocations: bool) -> list[str]:
        """This request's features as `api_tools.toml` names them. `functions`: function declarations
        are sent (the local tools, MCP servers among them); `invocations`: the backend sends
        `server_side_tool_invocations` (generateContent does, the Interactions API has no such setting)."""
        features = list(self.google_tools)
        if functions:
            features.append("functions")
        if self.function_calling is not None and self.function_calling.mode != "validated":
            features.append(f"mode_{self.function_calling.mode}")
        if invocations and self.server_side_tool_invocations is not None:
            features.append("invocations_on" if self.server_side_tool_invocations else "invocations_off")
        if self.vertex():
            features.append("vertexai")
        return features

    def check_tools(self, backend: str, model: str | None, features: list[str]) -> list[UnsupportedOption]:
        """`Backend.unsupported_options` rows for what `api_tools.toml` says of these tools on `model`
        (None: not known yet, a resume that takes the session's model: the model-free rules only).

        Raises ConfigurationError naming every rule the request breaks, before anything is sent
        (with `tool_checks="warn"` those become warnings too).
        """
        problems = tool_problems(model, features)
        refused = [p for p in problems if p.fatal and self.tool_checks == "error"]
        if refused:
            raise ConfigurationError(
                f"the {backend} backend will not send this request: "
                + "; ".join(f"{p.message} [rule {p.rule}]" for p in refused),
                hint="; ".join(_unique(p.hint for p in refused))
                + " (docs/api-tools.md; tool_checks='warn' sends it anyway)",
                details={"rules": [p.rule for p in refused], "model": model},
            )
        return [UnsupportedOption(p.option, _warning(p), False) for p in problems]

    def check_allowed_names(self, backend: str, declarations: list[dict[str, Any]]) -> None:
        """Raise ConfigurationError when `function_calling.allowed_function_names` names a function the
        run does not offer (the API would answer 400); checked once the tools are known, before sending."""
        if self.function_calling is None:
            return
        offered = [str(d.get("name")) for d in declarations]
        missing = [name for name in self.function_calling.allowed_function_names if name not in offered]
        if missing:
            raise ConfigurationError(
                f"the {backend} backend offers no function named {', '.join(map(repr, missing))} "
                "(backend_options.function_calling.allowed_function_names)",
                hint="name offered tools only: " + (", ".join(offered) or "none are offered (local_tools is off)"),
            )

    def vertex(self) -> bool:
        """Whether the run goes to Vertex AI (the option, else google-genai's environment flags): the
        flag `resolve_api_auth` decides first, read alone (resolving the whole auth for it cost more than
        the rest of the options check, in front of every run's first request)."""
        return self.vertexai if self.vertexai is not None else vertex_from_env(os.environ)


def _warning(problem: ToolProblem) -> str:
    return f"{problem.message}: {problem.hint} [rule {problem.rule}]"


def _unique(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(texts))


OptionsT = TypeVar("OptionsT", bound=ApiOptions)


class ParsedOptions(Generic[OptionsT]):
    """A backend's `backend_options`, parsed once per value: the options check before the run and the run
    itself read the same ones (parsing and validating them cost ~0.1 ms, twice in front of every run's
    first request). A run continued by failover brings its own `backend_options`: parsed anew."""

    __slots__ = ("_backend", "_last", "_type")

    def __init__(self, options_type: type[OptionsT], backend: str) -> None:
        self._type = options_type
        self._backend = backend
        self._last: tuple[object, OptionsT] | None = None

    def __call__(self, params: ExecuteParams) -> OptionsT:
        raw = params.backend_options
        last = self._last
        if last is None or last[0] is not raw:
            last = self._last = (raw, parse_options(self._type, raw, self._backend))
        return last[1]

    def resolved(self, params: ExecuteParams) -> OptionsT:
        """The run's options, their auth resolved (`resolve_api_options`), from the same parse."""
        return resolve_api_options(params, None, backend=self._backend, options_type=self._type, parsed=self(params))


def resolve_api_options(
    params: ExecuteParams,
    env: Mapping[str, str] | None,
    *,
    backend: str,
    options_type: type[OptionsT],
    parsed: OptionsT | None = None,
) -> OptionsT:
    """`options_type` parsed from `params.backend_options`, its auth resolved by `unified._auth.resolve_api_auth`.

    Options beat the environment; the environment follows google-genai's own names and order
    (docs/auth.md). Raises ConfigurationError for a bad option (`parse_options`) or a base URL no request can be
    sent to (`unified._urls.base_url_refusal`), AuthError
    (`auth_error`, naming `backend` and the variable to set) when google-genai would refuse the
    credentials before sending anything. `parsed`: the options already parsed from
    `params.backend_options` (`ParsedOptions`), used as they are.
    """
    env = os.environ if env is None else env
    options = parsed if parsed is not None else parse_options(options_type, params.backend_options, backend)
    if options.auth is not None:
        raise ConfigurationError(
            f"the {backend} backend's option 'auth' is not an input",
            hint="pass api_key, vertexai, project, location, base_url or credentials",
        )
    auth = resolve_api_auth(
        env,
        api_key=options.api_key,
        vertexai=options.vertexai,
        project=options.project,
        location=options.location,
        base_url=options.base_url,
        credentials=options.credentials is not None,
    )
    if auth.base_url_refused:  # no credential would help: the binary backends' error, in their words
        raise ConfigurationError(auth.problems[0], hint=auth.hint)
    if auth.problems:
        raise AuthError(f"the {backend} backend cannot authenticate: {'; '.join(auth.problems)}", hint=auth.hint)
    return options.model_copy(
        update={
            "auth": auth,
            "api_key": auth.api_key,
            "vertexai": auth.vertexai,
            "project": auth.project,
            "location": auth.location,
            "base_url": auth.base_url,
        }
    )


publish("unified", ["FileSearchTool", "FunctionCalling", "GoogleMapsTool", "LatLng"], globals())
