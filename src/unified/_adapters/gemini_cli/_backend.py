"""The Gemini CLI backend: one run = one ACP session in a (warm or cold) `gemini --acp` process.

The options are `GeminiCliOptions` (`_options.py`); how the process is started is `Launch`
(`_launch.py`); the process is leased from the pool and initialized in `_acp.py`; the run itself is
`_run.AcpRun`, over the `AgentProcess` seam (the real subprocess, or an in-process fake agent in
tests). See docs/backends/gemini-cli.md.

Tool calls: ACP sends neither the model's arguments nor the output of reads and listings, so a
main-session `tool_use` and `tool_result` are held until the call's record reaches the session's chat
file (`_hold_back.py`) and then carry its `args` and `functionResponse.response`.

A conversation to continue (`ExecuteParams.history`) is written as a new session's chat file into the
CLI's home (`_conversation.open_history`) and then `session/load`ed like a resume, so the model is sent
the earlier turns as they are; `retry` cuts the last prompt off (the session's, or the history's) and
sends it as the message (`_conversation.open_retry`), or, to a session that ends with tool results,
sends `CONTINUE_PROMPT` after them (a history that does is continued that way before it reaches the
backend: `_execute`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio

from unified._adapters.gemini_cli._acp import AcpConnection, AcpPool, connect, default_pool
from unified._adapters.gemini_cli._chat_files import ChatFiles, gemini_home, repair_session
from unified._adapters.gemini_cli._chat_records import TranscriptCapture
from unified._adapters.gemini_cli._conversation import Opening, open_history, open_retry
from unified._adapters.gemini_cli._launch import BACKEND, GEMINI_CLI, Launch, start_gemini
from unified._adapters.gemini_cli._options import gemini_cli_options
from unified._adapters.gemini_cli._relocate import check_session_id, gather, session_lease
from unified._adapters.gemini_cli._run import AcpRun
from unified._adapters.gemini_cli._shared_sessions import shared_files
from unified._adapters.gemini_cli._stream_json import run_stream_json
from unified._adapters.gemini_cli._workspace_settings import memory_file_refusal
from unified._binary.environment import cache_folder
from unified._binary.pool import pool_key
from unified._binary.shared import run_binary
from unified._undumpable import hide_host_environment
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.errors import ConfigurationError
from unified.events import WarningEvent
from unified.sessions import SessionInfo
from unified.tools._protected import credential_aliases
from unified.types import ExecuteParams

__all__ = ["GeminiCliBackend"]


def _workdir() -> Path:
    """A neutral cwd for the processes: the CLI files a startup session under its cwd's project.

    Asked before every ACP process is started (and before the pool is looked at: it is part of the key):
    unified's cache folder as `cache_folder` knows it (platformdirs asked again only when the environment
    changed), and one `stat` when the folder is there (a `mkdir` of an existing one fails, and then stats)."""
    path = cache_folder(BACKEND) / "workdir"
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
    return path


def _stream_json_resume_note(params: ExecuteParams) -> str:
    """The `resume_via_stream_json` warning: what the resumed run loses on `gemini -p --resume`, the run's own
    options named (its MCP servers and its ask_user went nowhere without a word before: they go over ACP only)."""
    lost = ["no thoughts", "no permission prompts"]
    if params.mcp_servers:
        names = ", ".join(repr(server.name) for server in params.mcp_servers)
        lost.append(f"the MCP servers {names} are not connected (they go in ACP session/load only)")
    if params.on_user_input is not None:
        lost.append("the model cannot ask the user (on_user_input: the approval mode alone decides)")
    return f"this gemini does not offer ACP session/load; the resumed run uses `gemini -p --resume` ({'; '.join(lost)})"


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
        self.pool: AcpPool = default_pool.for_run(self.options.pool, self.options.pool_size, lambda: AcpPool(size=0))

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
        if self.options.transport == "stream-json":
            if self.options.policy is not None:
                problems.append(
                    UnsupportedOption(
                        "backend_options.policy",
                        "the stream-json transport cannot ask unified about a call, so the policy could not decide "
                        "any; use the acp transport (the default) for a policy",
                        True,
                    )
                )
            if params.history is not None or params.retry:
                problems.append(
                    UnsupportedOption(
                        "history" if params.history is not None else "retry",
                        "a conversation is continued (or a turn retried) through ACP session/load; the stream-json "
                        "transport has neither",
                        True,
                    )
                )
            if params.images:
                problems.append(UnsupportedOption("images", "the stream-json transport takes a text prompt only", True))
            if params.mcp_servers:  # they went nowhere without a word: the CLI takes them over ACP only, here
                names = ", ".join(repr(server.name) for server in params.mcp_servers)
                problems.append(
                    UnsupportedOption(
                        "mcp_servers",
                        f"the stream-json transport takes no MCP servers (they go in ACP session/new): {names} "
                        "will not be connected; use the acp transport for them",
                        False,
                    )
                )
            if params.on_user_input is not None:
                problems.append(
                    UnsupportedOption("on_user_input", "stream-json cannot ask: the approval mode decides", False)
                )
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        return await run_binary(ctx, self._run, lambda: shared_files(self.launch.env, ctx.params.cwd), self.launch.env)

    async def _run(self, ctx: RunContext) -> RunOutcome:
        where = ctx.params.cwd.expanduser().resolve()
        if not ctx.params.resume:
            return await self._start(ctx, where, None)
        # An unknown or ambiguous id fails here, before a process is started.
        files = ChatFiles(self.launch.env)
        info, in_project = await anyio.to_thread.run_sync(files.locate, ctx.params.resume, str(where))
        if not await anyio.to_thread.run_sync(where.is_dir):
            raise ConfigurationError(f"cwd {where} is not a directory", hint="pass an existing working directory")
        home = gemini_home(self.launch.env)
        check_session_id(info.session_id, info.path)
        # Held to the run's end: no other run continues (or moves) the session meanwhile.
        async with session_lease(home, info.session_id):
            # Again, now that no other run can move it: one that held it may have moved it meanwhile.
            info, in_project = await anyio.to_thread.run_sync(files.locate, info.session_id, str(where))
            moved = await anyio.to_thread.run_sync(lambda: gather(home, info, where, in_project=in_project))
            if moved is not None:  # a session of another project continues in this one (`_relocate.py`)
                code = "session_moved" if moved.main else "session_repaired"
                await ctx.emit(WarningEvent(code=code, message=moved.message(where)))
                info = await anyio.to_thread.run_sync(files.resolve, info.session_id, str(where))
            return await self._start(ctx, where, info)

    async def _start(self, ctx: RunContext, where: Path, info: SessionInfo | None) -> RunOutcome:
        """The run, on the resumed session `info` (found in the project of `where`) or a new one."""
        params = ctx.params
        opening: Opening | None = None
        if info is not None:
            # Before the CLI loads it (and before a transcript follows its files): the history it rebuilds
            # must be one the Gemini API accepts.
            home = gemini_home(self.launch.env)
            for repair in await anyio.to_thread.run_sync(repair_session, home, info.session_id):
                await ctx.emit(WarningEvent(code="session_repaired", message=repair))
            if params.retry:
                opening = await anyio.to_thread.run_sync(open_retry, Path(str(info.path)), info.session_id)
        elif params.history is not None and (params.history.turns or params.retry):
            if not await anyio.to_thread.run_sync(where.is_dir):
                raise ConfigurationError(f"cwd {where} is not a directory", hint="pass an existing working directory")
            history, model = params.history, self.launch.model_for()
            opening = await anyio.to_thread.run_sync(
                lambda: open_history(self.launch.env, where, history, model=model, retry=params.retry)
            )
        if params.approval_mode != "yolo":  # unified's yolo allows every call: nothing to ask or deny
            # The CLI's read tools read another name of a credential file unasked: its rules must name each one.
            roots = [where, *self.launch.include_directories]
            aliases = await anyio.to_thread.run_sync(credential_aliases, roots)
            self.launch = replace(self.launch, credential_aliases=None if aliases is None else tuple(aliases))
        if self.launch.memory_names is not None:  # a folder the CLI trusts: it reads the memory files there
            roots = [where, *self.launch.include_directories]
            refusal = await anyio.to_thread.run_sync(memory_file_refusal, roots, self.launch.memory_names)
            if refusal is not None:
                raise ConfigurationError(refusal[0], hint=refusal[1])
        if self.options.hide_host_environment:  # before the CLI (a warm one too) starts, on either transport
            hide_host_environment()
        if self.options.transport == "stream-json":
            return await run_stream_json(self.launch, ctx, where)
        argv = self.launch.acp_argv()
        # `session/load` looks the session up under its `cwd` parameter, not the process's cwd,
        # so resumed runs share the warm processes too.
        spawn_cwd = _workdir()
        start = self.options.start_process or start_gemini
        env = self.launch.env

        async def spawn() -> AcpConnection:
            return await connect(start, argv, spawn_cwd, env)

        transcript = self.options.acp_transcript
        capture = TranscriptCapture(transcript, gemini_home(env)) if transcript is not None else None
        # The starter is part of the key: a fake agent never serves a run meant for the binary.
        key = pool_key([*argv, str(spawn_cwd), repr(self.options.start_process)], env)
        try:
            async with self.pool.lease(key, spawn) as lease:
                if self.params.mcp_servers:
                    # 0.61 cannot end a session (no `session/close`): its MCP servers stay connected, a stdio
                    # server's process running, as long as the process lives. The process goes with this run.
                    lease.retire()
                if not (self.params.resume or opening) or lease.resource.can_load:
                    if capture is None:
                        return await AcpRun(self.launch, ctx, lease, opening).run()
                    lease.resource.observer = capture.observe
                    try:
                        return await AcpRun(self.launch, ctx, lease, opening).run()
                    finally:
                        lease.resource.observer = None
        finally:
            if capture is not None:  # what the CLI wrote last (a cold process has exited now)
                capture.collect()
        if opening is not None:
            raise ConfigurationError(
                "this gemini does not offer ACP session/load, which continuing a conversation or retrying a turn needs",
                hint=f"install the pinned gemini CLI ({GEMINI_CLI.version}): unified install-gemini",
            )
        if params.images:  # as on the stream-json transport: a prompt's images are never dropped unsaid
            raise ConfigurationError(
                "this gemini does not offer ACP session/load, so the resumed run uses `gemini -p --resume`, which "
                "takes a text prompt only: the prompt's images cannot go",
                hint=f"install the pinned gemini CLI ({GEMINI_CLI.version}): unified install-gemini; or resume "
                "without images",
            )
        await ctx.emit(
            WarningEvent(code="resume_via_stream_json", message=_stream_json_resume_note(params)),
        )
        return await run_stream_json(self.launch, ctx, where)
