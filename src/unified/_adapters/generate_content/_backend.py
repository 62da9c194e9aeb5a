"""The Backend object the registry hands to the stream guard: the shared agent loop around `_turns.py`."""

from __future__ import annotations

import sniffio

from unified._adapters.generate_content._options import (
    DEFAULT_MODEL,
    GenerateContentOptions,
    plan_thinking,
)
from unified._adapters.generate_content._sessions import BACKEND
from unified._internal.api_options import ParsedOptions
from unified._internal.images import GEMINI_INLINE_TYPES, images_not_taken
from unified._internal.imports import import_off_loop
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.errors import BackendUnavailable
from unified.types import ExecuteParams

__all__ = ["GenerateContentBackend"]


class GenerateContentBackend:
    """Drives one run over the Gemini API's streamGenerateContent."""

    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self._params = params
        self._options = ParsedOptions(GenerateContentOptions, BACKEND)

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        """A bad option, or tools the API refuses together (`api_tools.toml`), is a ConfigurationError
        (raised before any request); the rest are warnings."""
        options = self._options(params)
        model = params.model or DEFAULT_MODEL
        resumed_model = params.resume is not None and params.model is None  # checked once the session loads
        features = options.tool_features(functions=options.local_tools, invocations=True)
        problems = options.check_tools(BACKEND, None if resumed_model else model, features)
        images = images_not_taken(params.history, "Gemini", GEMINI_INLINE_TYPES)
        if images is not None:
            problems.append(UnsupportedOption("history", images, False))
        plan = plan_thinking(model, params.thinking)
        if plan is not None:
            problems.extend(UnsupportedOption("thinking", note, False) for note in plan.notes)
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        options = self._options.resolved(ctx.params)
        if options.vertexai and not options.api_key and sniffio.current_async_library() != "asyncio":
            raise BackendUnavailable(
                "Vertex AI with Application Default Credentials cannot run on trio: google-genai refreshes "
                "the token with asyncio",
                hint="run under asyncio, use Vertex AI express mode with an API key, or the interactions backend",
            )
        turns = await import_off_loop("unified._adapters.generate_content._turns")  # with the agent loop and the tools
        from unified._agent_loop import AgentLoop

        return await AgentLoop(ctx, turns.GenerateContentTurns(ctx.params, options)).run()
