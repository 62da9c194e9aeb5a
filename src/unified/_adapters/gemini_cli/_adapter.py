"""The Gemini CLI backend: one run = one ACP session in a (warm or cold) `gemini --acp` process.

The options are `GeminiCliOptions` (`options.py`); how the process is started is `Launch`
(`launch.py`); the run itself is `run.AcpRun`, over the `AgentProcess` seam of `transport.py`
(the real subprocess, or an in-process fake agent in tests). See docs/backends/gemini-cli.md.

Tool calls: ACP sends neither the model's arguments nor the output of reads and listings, so a
main-session `tool_use` and `tool_result` are held until the call's record reaches the session's chat
file (`hold_back.py`) and then carry its `args` and `functionResponse.response`.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import platformdirs

from unified._adapters.gemini_cli._launch import BACKEND, Launch
from unified._adapters.gemini_cli._options import gemini_cli_options
from unified._adapters.gemini_cli._pool import AcpPool, default_pool, pool_key
from unified._adapters.gemini_cli._run import AcpRun
from unified._adapters.gemini_cli._sessions import GeminiSessionLocator
from unified._adapters.gemini_cli._shared_sessions import SharedSessions, shared_store
from unified._adapters.gemini_cli._stream_json import run_stream_json
from unified._adapters.gemini_cli._transport import (
    AcpConnection,
    AcpRequestError,
    ConnectionClosed,
    as_dict,
    error_for_exit,
    start_child,
)
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.errors import ConfigurationError
from unified.events import WarningEvent
from unified.types import ExecuteParams

START_EXIT_GRACE_S = 2.0
"""How long a process that failed `initialize` may take to exit before its code is read."""


def _workdir() -> Path:
    """A neutral cwd for the processes: the CLI files a startup session under its cwd's project."""
    path = Path(platformdirs.user_cache_dir("unified")) / "gemini-cli" / "workdir"
    path.mkdir(parents=True, exist_ok=True)
    return path


class GeminiCliBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self.options = gemini_cli_options(params.backend_options)
        if self.options.start_process is not None and self.options.transport == "stream-json":
            raise ConfigurationError(
                "backend_options.start_process replaces the ACP agent; the stream-json transport has none",
                hint="leave transport at 'acp' with start_process, or drop start_process",
            )
        self.launch = Launch.of(params, self.options)
        size = self.options.pool_size
        self.pool: AcpPool = self.options.pool or (AcpPool(size=0) if size == 0 else default_pool())
        if size and self.options.pool is None:
            self.pool.size = size

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        problems: list[UnsupportedOption] = []
        if params.thinking is not None:
            problems.append(
                UnsupportedOption(
                    "thinking",
                    "gemini 0.61 takes thinking settings only from settings files (modelConfigs), which unified "
                    "does not write; the CLI uses its own (budget 8192 on 2.5 models, level high on 3)",
                    False,
                )
            )
        if params.max_turns is not None:
            problems.append(
                UnsupportedOption(
                    "max_turns",
                    "gemini 0.61 takes its turn limit only from settings files (model.maxSessionTurns), which "
                    "unified does not write",
                    False,
                )
            )
        if self.options.transport == "stream-json":
            if params.images:
                problems.append(UnsupportedOption("images", "the stream-json transport takes a text prompt only", True))
            if params.on_user_input is not None:
                problems.append(
                    UnsupportedOption("on_user_input", "stream-json cannot ask: the approval mode decides", False)
                )
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        store = shared_store(ctx.params)
        if store is None:
            return await self._run(ctx)
        return await SharedSessions(store, self.launch.env, ctx).run(self._run)

    async def _run(self, ctx: RunContext) -> RunOutcome:
        if ctx.params.resume:  # an unknown or ambiguous id fails here, before a process is started
            where = str(ctx.params.cwd.expanduser().resolve())
            await anyio.to_thread.run_sync(GeminiSessionLocator(self.launch.env).resolve, ctx.params.resume, where)
        if self.options.transport == "stream-json":
            return await run_stream_json(self.launch, ctx)
        argv = self.launch.acp_argv()
        # `session/load` looks the session up under its `cwd` parameter, not the process's cwd,
        # so resumed runs share the warm processes too.
        spawn_cwd = _workdir()
        start_process = self.options.start_process or start_child
        env = self.launch.env

        async def spawn() -> AcpConnection:
            connection = AcpConnection(start_process(argv, spawn_cwd, env))
            try:
                info = await connection.request(
                    "initialize",
                    # Never advertise fs capabilities: with them the 0.61 CLI cannot create new files.
                    {
                        "protocolVersion": 1,
                        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
                    },
                )
            except (ConnectionClosed, AcpRequestError) as exc:
                code = await connection.child.wait_exit(START_EXIT_GRACE_S)
                tail = connection.child.stderr.text()
                await connection.close()
                raise error_for_exit(code, tail, f"gemini --acp failed to start ({exc})") from exc
            connection.agent_info = dict(info.get("agentInfo") or {})
            connection.can_load = as_dict(info.get("agentCapabilities")).get("loadSession") is True
            return connection

        transcript = self.options.acp_transcript
        # The starter is part of the key: a fake agent never serves a run meant for the binary.
        key = pool_key([*argv, str(spawn_cwd), repr(self.options.start_process)], env)
        async with self.pool.lease(key, spawn) as lease:
            if not self.params.resume or lease.connection.can_load:
                if transcript is not None:
                    lease.connection.transcript = transcript
                return await AcpRun(self.launch, ctx, lease).run()
        await ctx.emit(
            WarningEvent(
                code="resume_via_stream_json",
                message="this gemini does not offer ACP session/load; the resumed run uses `gemini -p --resume` "
                "(no thoughts, no permission prompts)",
            )
        )
        return await run_stream_json(self.launch, ctx)
