"""The Backend object the registry hands to the stream guard: the shared agent loop around `_turns.py`."""

from __future__ import annotations

from unified._internal.api_settings import GOOGLE_TOOLS
from unified._internal.backend import RunContext, RunOutcome
from unified._internal.models import builtin_tool_problems, plan_level
from unified.adapters.interactions._options import DEFAULT_MODEL, resolve_settings, unknown_options
from unified.adapters.interactions._sessions import BACKEND
from unified.types import ExecuteParams


class InteractionsBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params

    def unsupported_options(self, params: ExecuteParams) -> list[tuple[str, str, bool]]:
        problems = [(option, why, False) for option, why in unknown_options(params.backend_options)]
        agent = params.backend_options.get("agent")
        model = params.model or DEFAULT_MODEL
        if not agent:
            enabled = tuple(name for name in GOOGLE_TOOLS if params.backend_options.get(name))
            local = bool(params.backend_options.get("local_tools", True))
            problems.extend((option, why, False) for option, why in builtin_tool_problems(model, enabled, local))
        if params.thinking is not None and not agent:
            notes = plan_level(model, params.thinking.level, params.thinking.budget)[1]
            problems.extend(("thinking", note, False) for note in notes)
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
