"""The Backend object the registry hands to the stream guard: the shared agent loop around `_turns.py`."""

from __future__ import annotations

from unified._adapters.interactions._options import DEFAULT_MODEL, InteractionsOptions
from unified._adapters.interactions._sessions import BACKEND
from unified._internal.api_options import ParsedOptions
from unified._internal.images import GEMINI_IMAGE_TYPES, images_not_taken
from unified._internal.imports import import_off_loop
from unified._internal.models import plan_level
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.types import ExecuteParams

__all__ = ["InteractionsBackend"]


class InteractionsBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self._options = ParsedOptions(InteractionsOptions, BACKEND)

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        """A bad option, or tools the API refuses together (`api_tools.toml`), is a ConfigurationError
        (raised before any request); the rest are warnings."""
        options = self._options(params)
        agent = options.agent
        model = params.model or DEFAULT_MODEL
        resumed_model = params.resume is not None and params.model is None  # checked once the session loads
        features = options.tool_features(functions=not agent and options.local_tools, invocations=False)
        problems = options.check_tools(BACKEND, agent or (None if resumed_model else model), features)
        images = images_not_taken(params.history, "the Interactions API", GEMINI_IMAGE_TYPES)
        if images is not None:
            problems.append(UnsupportedOption("history", images, False))
        if options.server_side_tool_invocations is not None:
            why = "the Interactions API always streams the built-in tools' steps; the option is ignored"
            problems.append(UnsupportedOption("backend_options.server_side_tool_invocations", why, False))
        if options.user_location is not None and not options.google_maps:
            why = "the Interactions API takes the user's location on the google_maps tool only; it is ignored"
            problems.append(UnsupportedOption("backend_options.user_location", why, False))
        if agent and options.function_calling is not None:
            problems.append(
                UnsupportedOption(
                    "backend_options.function_calling", "agents take no generation config; it is ignored", False
                )
            )
        if params.thinking is not None and not agent:
            notes = plan_level(model, params.thinking.level, params.thinking.budget)[1]
            problems.extend(UnsupportedOption("thinking", note, False) for note in notes)
        if agent:
            if params.model:
                problems.append(
                    UnsupportedOption("model", f"an agent run ({agent}) uses no model; it is ignored", False)
                )
            if params.thinking is not None:
                problems.append(UnsupportedOption("thinking", "agents take no generation config; it is ignored", False))
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        options = self._options.resolved(ctx.params)
        turns = await import_off_loop("unified._adapters.interactions._turns")  # with the agent loop and the tools
        from unified._agent_loop import AgentLoop

        return await AgentLoop(ctx, turns.InteractionsTurns(ctx.params, options)).run()
