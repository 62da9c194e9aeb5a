"""The interactions backend's settings: `backend_options` and the environment, read once per run.

The connection, retry and tool options shared with the generate-content backend (same names, same
meaning), and how credentials are read, live in `unified._internal.api_settings`; this module adds
this backend's own options and rules. Free of google-genai so `unsupported_options` (which runs
before the stream starts) stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from unified._errors import ConfigurationError
from unified._internal import api_settings
from unified._internal.api_settings import API_OPTION_TYPES, GOOGLE_TOOLS, ApiSettings
from unified.adapters.interactions._sessions import BACKEND
from unified.types import ExecuteParams

DEFAULT_MODEL = "gemini-3-flash-preview"
SERVER_TOOLS = GOOGLE_TOOLS

_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    **API_OPTION_TYPES,
    "max_stream_resumes": (int,),
    "agent": (str,),
    "agent_config": (dict,),
    "background": (bool,),
    "stream": (bool,),
    "store": (bool,),
    "poll_interval_s": (int, float),
}


@dataclass(frozen=True)
class Settings(ApiSettings):
    """Everything the client and the loop need.

    `max_retries` counts retries of one request after a 408, 429, 5xx or connection error.
    """

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

    @property
    def server_tools(self) -> tuple[str, ...]:
        return self.google_tools


def unknown_options(options: Mapping[str, object]) -> list[tuple[str, str]]:
    """(option, why) for each backend option this backend does not know or cannot read."""
    return api_settings.unknown_options(options, _OPTION_TYPES)


def resolve_settings(params: ExecuteParams, env: Mapping[str, str] | None = None) -> Settings:
    """Options beat the environment; the environment follows google-genai's own names and order."""
    settings = api_settings.resolve_api_settings(
        params,
        env,
        backend=BACKEND,
        settings_type=Settings,
        option_types=_OPTION_TYPES,
        api_version_hint="use 'v1' or 'v1beta'",
    )
    if settings.background and not settings.store:
        raise ConfigurationError("background interactions need store=true", hint="drop store=false or background")
    return settings
