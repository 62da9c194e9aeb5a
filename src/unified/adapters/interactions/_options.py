"""The interactions backend's settings: `backend_options` and the environment, read once per run.

Free of google-genai so `unsupported_options` (which runs before the stream starts) stays cheap.
Option names match the generate-content backend's where they mean the same thing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from unified._errors import BackendUnavailable, ConfigurationError
from unified.types import ExecuteParams

DEFAULT_MODEL = "gemini-3-flash-preview"
SERVER_TOOLS = ("google_search", "url_context", "code_execution")

_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "api_key": (str,),
    "vertexai": (bool,),
    "project": (str,),
    "location": (str,),
    "base_url": (str,),
    "api_version": (str,),
    "timeout_s": (int, float),
    "max_retries": (int,),
    "max_retry_delay_s": (int, float),
    "retry_delay_scale": (int, float),
    "max_stream_resumes": (int,),
    "agent": (str,),
    "agent_config": (dict,),
    "background": (bool,),
    "stream": (bool,),
    "store": (bool,),
    "poll_interval_s": (int, float),
    "local_tools": (bool,),
    **{name: (bool,) for name in SERVER_TOOLS},
}


@dataclass(frozen=True)
class Settings:
    """Everything the client and the loop need."""

    api_key: str | None = None
    vertexai: bool = False
    project: str | None = None
    location: str | None = None
    base_url: str | None = None
    api_version: str = "v1beta"
    timeout_s: float = 300.0
    max_retries: int = 3
    """Retries of one request after a 408, 429, 5xx or connection error (not counting the first try)."""
    max_retry_delay_s: float = 60.0
    """A 429 asking to wait longer than this ends the run at once with `rate_limited`."""
    retry_delay_scale: float = 1.0
    """Multiplies every wait; tests set it small so RetryInfo delays of seconds take milliseconds."""
    max_stream_resumes: int = 5
    """Reconnections (`get(id, stream=True, last_event_id=...)`) allowed per interaction."""
    agent: str | None = None
    """An agent (e.g. `deep-research-pro-preview-12-2025`) instead of a model."""
    agent_config: dict[str, Any] | None = None
    background: bool = False
    stream: bool = True
    """Background runs: stream the progress (`get(stream=True)`) or, when false, poll."""
    store: bool = True
    """False: the server keeps nothing; each request resends the whole conversation."""
    poll_interval_s: float = 2.0
    local_tools: bool = True
    google_search: bool = False
    url_context: bool = False
    code_execution: bool = False

    @property
    def server_tools(self) -> tuple[str, ...]:
        return tuple(name for name in SERVER_TOOLS if getattr(self, name))


def unknown_options(options: Mapping[str, object]) -> list[tuple[str, str]]:
    """(option, why) for each backend option this backend does not know or cannot read."""
    problems: list[tuple[str, str]] = []
    for key, value in options.items():
        kinds = _OPTION_TYPES.get(key)
        if kinds is None:
            problems.append((f"backend_options.{key}", f"unknown option; known: {', '.join(sorted(_OPTION_TYPES))}"))
        elif not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            problems.append((f"backend_options.{key}", f"expected {'/'.join(k.__name__ for k in kinds)}"))
    return problems


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


def resolve_settings(params: ExecuteParams, env: Mapping[str, str] | None = None) -> Settings:
    """Options beat the environment; the environment follows google-genai's own names and order."""
    env = os.environ if env is None else env
    options: dict[str, Any] = {k: v for k, v in params.backend_options.items() if k in _OPTION_TYPES}
    vertexai = bool(options.pop("vertexai", _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI"))))
    api_key = options.pop("api_key", None) or env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY")
    project = options.pop("project", None) or env.get("GOOGLE_CLOUD_PROJECT")
    location = options.pop("location", None) or env.get("GOOGLE_CLOUD_LOCATION")
    base_env = "GOOGLE_VERTEX_BASE_URL" if vertexai else "GOOGLE_GEMINI_BASE_URL"
    base_url = options.pop("base_url", None) or env.get(base_env) or None
    if not vertexai and not api_key:
        raise BackendUnavailable(
            "the interactions backend needs an API key",
            hint="set GEMINI_API_KEY (or GOOGLE_API_KEY), or use Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true",
        )
    if vertexai and not api_key and not project:
        raise BackendUnavailable(
            "Vertex AI mode needs a project",
            hint="set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (credentials come from ADC)",
        )
    if options.get("api_version", "v1beta") not in ("v1", "v1beta", "v1alpha", "v1beta1"):
        raise ConfigurationError(f"unknown api_version {options['api_version']!r}", hint="use 'v1' or 'v1beta'")
    settings = Settings(
        api_key=api_key, vertexai=vertexai, project=project, location=location, base_url=base_url, **options
    )
    if settings.background and not settings.store:
        raise ConfigurationError("background interactions need store=true", hint="drop store=false or background")
    return settings
