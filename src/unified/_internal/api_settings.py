"""The options every API backend (generateContent, Interactions) shares: connection, retries, tools.

Each backend's typed options (`GenerateContentOptions`, `InteractionsOptions`) subclass `ApiOptions`
with their extras; what is here is how they are parsed (`unified._internal.options.parse_options`:
an unknown key or a bad value is the same ConfigurationError on every backend) and how credentials,
base URL and location are resolved (`unified.auth.resolve_api_auth`). Free of google-genai so the
options can be checked before the stream starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import ConfigDict, Field

from unified._errors import AuthError, ConfigurationError
from unified._internal.models import builtin_tool_problems
from unified._internal.options import parse_options
from unified.auth import ApiAuth, resolve_api_auth
from unified.types import BackendOptions, ExecuteParams

GOOGLE_TOOLS = ("google_search", "url_context", "code_execution")
"""Google's server-side tools, each switched on by a boolean option of the same name."""

ApiVersion = Literal["v1", "v1beta", "v1alpha", "v1beta1"]


class ApiOptions(BackendOptions):
    """The options every API backend takes (each backend's own model adds its extras).

    As passed, credentials and endpoints may be unset (None); `resolve_api_settings` fills them
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
    """Set by `resolve_api_settings`, never by the caller: what the client is built from."""
    api_version: ApiVersion | None = None
    """None: v1beta on the Gemini API, v1beta1 on Vertex AI."""
    timeout_s: float = Field(default=90.0, gt=0)
    """Per attempt: the longest wait to connect (at most 30 s), for the response headers, or between
    two chunks of a stream."""
    request_deadline_s: float = Field(default=180.0, gt=0)
    """Per model request, over all its attempts: no retry starts after this (the error says what was tried)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries of one model request after a retryable failure (not counting the first try)."""
    max_retry_delay_s: float = Field(default=60.0, ge=0)
    """A 429 asking to wait longer than this ends the run at once with `rate_limited`."""
    retry_delay_scale: float = Field(default=1.0, ge=0)
    """Multiplies every wait; tests set it small so RetryInfo delays of seconds take milliseconds."""
    loop_threshold: int = Field(default=4, ge=2)
    """The same call with the same arguments this many turns in a row is a runaway loop."""
    local_tools: bool = True
    google_search: bool = False
    url_context: bool = False
    code_execution: bool = False

    @property
    def google_tools(self) -> tuple[str, ...]:
        """The Google server-side tools switched on, in `GOOGLE_TOOLS` order."""
        return tuple(name for name in GOOGLE_TOOLS if getattr(self, name))

    def model_warnings(self, model: str) -> list[tuple[str, str, bool]]:
        """`Backend.unsupported_options` rows for the built-in tools `model` may refuse (never fatal)."""
        return [
            (option, why, False) for option, why in builtin_tool_problems(model, self.google_tools, self.local_tools)
        ]


OptionsT = TypeVar("OptionsT", bound=ApiOptions)


def resolve_api_settings(
    params: ExecuteParams, env: Mapping[str, str] | None, *, backend: str, options_type: type[OptionsT]
) -> OptionsT:
    """`options_type` parsed from `params.backend_options`, its auth resolved by `unified.auth.resolve_api_auth`.

    Options beat the environment; the environment follows google-genai's own names and order
    (docs/auth.md). Raises ConfigurationError for a bad option (`parse_options`), AuthError
    (`auth_error`, naming `backend` and the variable to set) when google-genai would refuse the
    credentials before sending anything.
    """
    env = os.environ if env is None else env
    options = parse_options(options_type, params.backend_options, backend)
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
