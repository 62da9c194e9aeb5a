"""The settings every API backend (generateContent, Interactions) shares: connection, retries, tools.

Each backend keeps its own `Settings` subclass with its extra options, its own option table
(`API_OPTION_TYPES` plus its extras) and its own rules; what is here is how they all read
credentials, base URL and API version from `backend_options` and the environment. Free of
google-genai so `unsupported_options` (which runs before the stream starts) stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from unified._errors import BackendUnavailable, ConfigurationError
from unified.types import ExecuteParams

GOOGLE_TOOLS = ("google_search", "url_context", "code_execution")
"""Google's server-side tools, each switched on by a boolean option of the same name."""

API_VERSIONS = ("v1", "v1beta", "v1alpha", "v1beta1")

API_OPTION_TYPES: Mapping[str, tuple[type, ...]] = {
    "api_key": (str,),
    "vertexai": (bool,),
    "project": (str,),
    "location": (str,),
    "base_url": (str,),
    "api_version": (str,),
    "timeout_s": (int, float),
    "request_deadline_s": (int, float),
    "loop_threshold": (int,),
    "max_retries": (int,),
    "max_retry_delay_s": (int, float),
    "retry_delay_scale": (int, float),
    "local_tools": (bool,),
    **{name: (bool,) for name in GOOGLE_TOOLS},
}
"""The options every API backend reads, with the types each accepts."""


@dataclass(frozen=True)
class ApiSettings:
    """The fields every API backend's `Settings` starts with."""

    api_key: str | None = None
    vertexai: bool = False
    project: str | None = None
    location: str | None = None
    base_url: str | None = None
    api_version: str = "v1beta"
    timeout_s: float = 90.0
    """Per attempt: the longest wait to connect (at most 30 s), for the response headers, or between
    two chunks of a stream."""
    request_deadline_s: float = 180.0
    """Per model request, over all its attempts: no retry starts after this (the error says what was tried)."""
    max_retries: int = 3
    """Retries of one model request after a retryable failure (not counting the first try)."""
    max_retry_delay_s: float = 60.0
    """A 429 asking to wait longer than this ends the run at once with `rate_limited`."""
    retry_delay_scale: float = 1.0
    """Multiplies every wait; tests set it small so RetryInfo delays of seconds take milliseconds."""
    loop_threshold: int = 4
    """The same call with the same arguments this many turns in a row is a runaway loop."""
    local_tools: bool = True
    google_search: bool = False
    url_context: bool = False
    code_execution: bool = False

    @property
    def google_tools(self) -> tuple[str, ...]:
        """The Google server-side tools switched on, in `GOOGLE_TOOLS` order."""
        return tuple(name for name in GOOGLE_TOOLS if getattr(self, name))


SettingsT = TypeVar("SettingsT", bound=ApiSettings)


def unknown_options(
    options: Mapping[str, object], option_types: Mapping[str, tuple[type, ...]]
) -> list[tuple[str, str]]:
    """(option, why) for each backend option not in `option_types`, or of a type it does not accept."""
    problems: list[tuple[str, str]] = []
    for key, value in options.items():
        kinds = option_types.get(key)
        if kinds is None:
            problems.append((f"backend_options.{key}", f"unknown option; known: {', '.join(sorted(option_types))}"))
        elif not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            problems.append((f"backend_options.{key}", f"expected {'/'.join(k.__name__ for k in kinds)}"))
    return problems


def truthy(value: str | None) -> bool:
    """An environment flag: `1`, `true` or `yes` (any case, spaces ignored)."""
    return (value or "").strip().lower() in ("1", "true", "yes")


def resolve_api_settings(
    params: ExecuteParams,
    env: Mapping[str, str] | None,
    *,
    backend: str,
    settings_type: type[SettingsT],
    option_types: Mapping[str, tuple[type, ...]],
    api_version_hint: str = "use 'v1' or 'v1beta' (default)",
) -> SettingsT:
    """`settings_type` from `params.backend_options` (those in `option_types`) and the environment.

    Options beat the environment; the environment follows google-genai's own names and order.
    Raises BackendUnavailable (naming `backend`) without credentials, ConfigurationError for an
    unknown `api_version`. Values are not type-checked here: `unknown_options` reports those.
    """
    env = os.environ if env is None else env
    options: dict[str, Any] = {k: v for k, v in params.backend_options.items() if k in option_types}
    vertexai = bool(options.pop("vertexai", truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI"))))
    api_key = options.pop("api_key", None) or env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY")
    project = options.pop("project", None) or env.get("GOOGLE_CLOUD_PROJECT")
    location = options.pop("location", None) or env.get("GOOGLE_CLOUD_LOCATION")
    base_env = "GOOGLE_VERTEX_BASE_URL" if vertexai else "GOOGLE_GEMINI_BASE_URL"
    base_url = options.pop("base_url", None) or env.get(base_env) or None
    if not vertexai and not api_key:
        raise BackendUnavailable(
            f"the {backend} backend needs an API key",
            hint="set GEMINI_API_KEY (or GOOGLE_API_KEY), or use Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true",
        )
    if vertexai and not api_key and not project:
        raise BackendUnavailable(
            "Vertex AI mode needs a project",
            hint="set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (credentials come from ADC)",
        )
    if "api_version" in options and options["api_version"] not in API_VERSIONS:
        raise ConfigurationError(f"unknown api_version {options['api_version']!r}", hint=api_version_hint)
    return settings_type(
        api_key=api_key, vertexai=vertexai, project=project, location=location, base_url=base_url, **options
    )
