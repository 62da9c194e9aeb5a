"""The interactions backend's typed options.

The connection, retry and tool options shared with the generate-content backend (same names, same
meaning), and how credentials are read, live in `unified._internal.api_options`; this module adds
this backend's own options and rules. Free of google-genai so options are checked before the
stream starts, cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from unified._adapters.interactions._sessions import BACKEND
from unified._exports import publish
from unified._internal import api_options
from unified._internal.api_options import ApiOptions
from unified.types import ExecuteParams

__all__ = ["DEFAULT_MODEL", "InteractionsOptions", "resolve_options"]

DEFAULT_MODEL = "gemini-3-flash-preview"


class InteractionsOptions(ApiOptions):
    """`backend_options` of the interactions backend (docs/backends/interactions.md).

    `max_retries` counts retries of one request after a 408, 429, 5xx or connection error.
    """

    max_stream_resumes: int = Field(default=5, ge=0)
    """Reconnections (`get(id, stream=True, last_event_id=...)`) allowed per interaction."""
    agent: str | None = None
    """An agent (e.g. `deep-research-pro-preview-12-2025`) instead of a model."""
    agent_config: dict[str, Any] | None = None
    background: bool = False
    stream: bool = True
    """Background runs: stream the progress (`get(stream=True)`) or, when false, poll."""
    store: bool = True
    """False: the server keeps nothing; each request resends the whole conversation."""
    poll_interval_s: float = Field(default=2.0, gt=0)

    @model_validator(mode="after")
    def _background_needs_store(self) -> InteractionsOptions:
        if self.background and not self.store:
            raise ValueError("background interactions need store=true (drop store=false or background)")
        return self


def resolve_options(params: ExecuteParams, env: Mapping[str, str] | None = None) -> InteractionsOptions:
    """Options beat the environment; the environment follows google-genai's own names and order."""
    return api_options.resolve_api_options(params, env, backend=BACKEND, options_type=InteractionsOptions)


publish("unified", ["InteractionsOptions"], globals())
