"""The codex backend: one run = one thread (new or resumed) and one turn in a (warm or cold) `codex app-server`
process, which serves one run at a time.

The options are `CodexOptions` (`_options.py`); how the process is started is `Launch` (`_launch.py`);
the process is leased from the pool (`_pool.py`); the run itself is `_run.CodexRun`, over the
`AgentProcess` seam (the real subprocess, or an in-process fake in tests). Resume references are
resolved here, before any process starts (`_rollouts.py`): one that matches nothing is
`session_not_found`, never a new thread. A conversation to continue (`ExecuteParams.history`) becomes a
rollout file of a new thread in our CODEX_HOME, then resumed (`_conversation.py`). See
docs/backends/codex.md.
"""

from __future__ import annotations

import anyio

from unified._adapters.codex._launch import Launch
from unified._adapters.codex._options import BACKEND, codex_options
from unified._adapters.codex._pool import CodexPool, default_pool
from unified._adapters.codex._rollouts import Rollouts
from unified._adapters.codex._run import CodexRun, Opening
from unified._adapters.codex._shared_sessions import shared_files
from unified._adapters.codex._thread_config import refused_per_call
from unified._binary.shared import run_binary, session_lease
from unified._internal.images import images_not_taken
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.types import ExecuteParams, SseMcpServer

__all__ = ["CodexBackend"]


class CodexBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self.options = codex_options(params.backend_options)
        self.launch = Launch.of(params, self.options)
        self.pool: CodexPool = default_pool.for_run(
            self.options.pool, self.options.pool_size, lambda: CodexPool(size=0)
        )

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        problems: list[UnsupportedOption] = []
        images = images_not_taken(params.history, "OpenAI")
        if images is not None:
            problems.append(UnsupportedOption("history", images, False))
        if params.thinking is not None and params.thinking.budget is not None:
            problems.append(
                UnsupportedOption(
                    "thinking.budget",
                    "OpenAI models take a reasoning effort (thinking.level), not a token budget; it is ignored",
                    False,
                )
            )
        offered = refused_per_call(params)
        if offered:
            problems.append(
                UnsupportedOption(
                    "excluded_tools",
                    f"Codex 0.171 has no setting that stops offering {', '.join(offered)} (its apply_patch tool, "
                    "an MCP server's tools): the model is still offered them, and unified refuses each of their "
                    "calls; the other excluded tools are not offered",
                    False,
                )
            )
        if any(isinstance(server, SseMcpServer) for server in params.mcp_servers):
            problems.append(
                UnsupportedOption("mcp_servers", "Codex speaks stdio and streamable HTTP MCP servers, not SSE", True)
            )
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        return await run_binary(ctx, self._run, lambda: shared_files(self.launch.home), self.launch.env)

    async def _run(self, ctx: RunContext) -> RunOutcome:
        params = ctx.params
        rollouts = Rollouts(self.launch.home)
        if params.history is not None:
            from unified._adapters.codex._conversation import open_history

            opening = await anyio.to_thread.run_sync(open_history, rollouts, params, self.launch.provider_id)
        elif params.resume:
            info = await anyio.to_thread.run_sync(rollouts.resolve, params.resume)
            if params.retry:
                from unified._adapters.codex._conversation import open_retry

                opening = await anyio.to_thread.run_sync(open_retry, rollouts, info.session_id)
            else:
                opening = Opening(info.session_id, resumed=True)
            # The caller's thread: one run at a time continues it (else `session_in_use`).
            async with session_lease(BACKEND, self.launch.home, info.session_id):
                return await CodexRun(self.launch, self.options, ctx, opening, self.pool).run()
        else:
            opening = Opening()
        return await CodexRun(self.launch, self.options, ctx, opening, self.pool).run()
