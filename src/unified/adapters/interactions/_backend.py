"""The Backend object the registry hands to the stream guard: the shared agent loop around `_turns.py`."""

from __future__ import annotations

from unified._internal.backend import RunContext, RunOutcome
from unified.adapters.interactions._options import resolve_settings, thinking_level, unknown_options
from unified.adapters.interactions._sessions import BACKEND
from unified.types import ExecuteParams


class InteractionsBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params

    def unsupported_options(self, params: ExecuteParams) -> list[tuple[str, str, bool]]:
        problems = [(option, why, False) for option, why in unknown_options(params.backend_options)]
        agent = params.backend_options.get("agent")
        if params.thinking is not None and params.thinking.budget is not None:
            level = thinking_level(params.thinking) or "the model's default"
            problems.append(("thinking.budget", f"the Interactions API takes a level; sent as {level}", False))
        if agent:
            if params.model:
                problems.append(("model", f"an agent run ({agent}) uses no model; it is ignored", False))
            if params.thinking is not None:
                problems.append(("thinking", "agents take no generation config; it is ignored", False))
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        settings = resolve_settings(ctx.params)
        from unified._internal.agent_loop import AgentLoop
        from unified.adapters.interactions._turns import InteractionsTurns  # google-genai loads only now

        return await AgentLoop(ctx, InteractionsTurns(ctx.params, settings)).run()
