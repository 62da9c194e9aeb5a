"""The claude-code backend: one run = one `claude` process for one session (new, resumed or continued).

The options are `ClaudeCodeOptions` (`_options.py`); the binary, home, environment and flags are
`Launch` (`_launch.py`); the run itself is `_run.ClaudeRun`, over the `AgentProcess` seam (the
real subprocess, or a fake in tests). What session the process starts with is planned here:

- a new session: `--session-id=<a new uuid>` (its id is known before the CLI starts);
- `resume` (a short id, a prefix or a full id, from any directory): resolved over the session
  files of the backend's home (the CLI itself takes only a full UUID), then `--resume=<uuid>`;
- `history` (a `Conversation`): written as a session file into the home, then `--resume`d; a new
  session of this backend, whose file names the one it came from;
- `retry`: the last user turn is answered again: the session (or the history) without that turn,
  then that turn sent as the message; a session that ends with tool results is sent as it is, then
  `CONTINUE_PROMPT` (a history that does is continued that way before it reaches the backend: `_execute`).
With a shared session store (`ExecuteParams.session_store`, `UNIFIED_SESSION_STORE_URL`) each
run's session file is saved there, and a resume on a worker whose home lacks it writes it first.

With `pool_size` (or a `pool`), a new session's run takes a spare process started ahead for the
same launch (`_spares.py`: its session id is the spare's), and leaves one for the next such run.
A resumed session (resume, history, retry) names its session on the command line: always cold.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.claude_code import _session_files
from unified._adapters.claude_code._conversation import conversation_from_lines, lines_from_conversation
from unified._adapters.claude_code._launch import (
    Launch,
    config_dir,
    new_session_id,
    start_claude,
    takes_thinking_budget,
)
from unified._adapters.claude_code._options import BACKEND, claude_code_options
from unified._adapters.claude_code._run import ClaudeRun, RunPlan, SpareLost, prompt_content
from unified._adapters.claude_code._session_files import (
    CONTINUED_FROM,
    SessionFiles,
    drop_bom,
    is_prompt,
    parse_session,
    project_dir_name,
    write_lines,
)
from unified._adapters.claude_code._shared_sessions import shared_files
from unified._adapters.claude_code._spares import ClaudeSpare, ClaudeSparePool, default_spares, start_spare
from unified._binary.pool import pool_key
from unified._binary.process import ProcessStarter
from unified._binary.shared import run_binary, session_lease
from unified._internal.images import images_not_taken
from unified._undumpable import hide_host_environment
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.conversations import CONTINUE_PROMPT, Conversation, ImagePart, TextPart, UserTurn
from unified.errors import BackendUnavailable, ConfigurationError
from unified.events import WarningEvent
from unified.types import ExecuteParams

__all__ = ["ClaudeCodeBackend"]


@dataclass(frozen=True, slots=True)
class _Prompt:
    text: str
    images: tuple[tuple[str, bytes], ...]

    def content(self) -> str | list[dict[str, Any]]:
        return prompt_content(self.text, self.images)


class ClaudeCodeBackend:
    name = BACKEND

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self.options = claude_code_options(params.backend_options)
        self.launch = Launch.of(params, self.options)
        self.spares: ClaudeSparePool | None = self.options.pool
        if self.spares is None and self.options.pool_size:
            self.spares = default_spares()
            self.spares.size = self.options.pool_size
        if params.mcp_servers or self.options.transcript is not None:
            self.spares = None  # a spare would start the MCP servers, or miss the transcript's start (`_spares.py`)

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        problems: list[UnsupportedOption] = []
        images = images_not_taken(params.history, "Anthropic")
        if images is not None:
            problems.append(UnsupportedOption("history", images, False))
        thinking = params.thinking
        model = params.model or self.launch.env.get("ANTHROPIC_MODEL")
        budget = thinking is not None and thinking.budget is not None and thinking.budget > 0
        if budget and not takes_thinking_budget(model):
            problems.append(
                UnsupportedOption(
                    "thinking.budget",
                    f"Claude Code passes a thinking budget (--max-thinking-tokens) only to Sonnet 4 and 4.5, Haiku 4.5 "
                    f"and Opus 4.5; {'its default model' if model is None else repr(model)} thinks adaptively (or "
                    "not at all) and ignores it; set thinking.level (--effort) instead",
                    False,
                )
            )
        return problems

    async def run(self, ctx: RunContext) -> RunOutcome:
        cwd = ctx.params.cwd.expanduser().resolve()
        if not cwd.is_dir():
            raise ConfigurationError(f"cwd {cwd} is not a directory", hint="pass an existing working directory")
        return await run_binary(ctx, self._run, lambda: shared_files(self.launch.home, ctx.params.cwd), self.launch.env)

    async def _run(self, ctx: RunContext) -> RunOutcome:
        params = self.params
        if params.resume or params.history is not None or params.images:
            # Reads (and may write) session files, or encodes images: in a worker thread.
            plan = await anyio.to_thread.run_sync(self._plan)
        else:
            # A new session's text prompt touches no file: planned on the loop, the spawn is spared a
            # worker-thread round trip (1-4 ms before every such run's process on a loaded machine).
            plan = self._plan()
        if self.options.hide_host_environment:  # before the CLI (a spare too) starts: its commands are children
            hide_host_environment()
        starter = self.options.start_process or start_claude
        if plan.resumed:  # the caller's session: one run at a time continues it (else `session_in_use`)
            async with session_lease(BACKEND, self.launch.home, plan.session_id):
                path = await anyio.to_thread.run_sync(SessionFiles(self.launch.home).find, plan.session_id)
                if path is not None and (repair := await anyio.to_thread.run_sync(drop_bom, path)):
                    await ctx.emit(WarningEvent(code="session_repaired", message=repair))
                return await ClaudeRun(ctx, self.launch, self.options, starter).run(plan)
        if self.spares is None or plan.resume:
            async with session_lease(BACKEND, self.launch.home, plan.session_id):  # a new session's (see below)
                return await ClaudeRun(ctx, self.launch, self.options, starter).run(plan)
        return await self._run_with_spares(ctx, plan, self.spares, starter)

    async def _run_with_spares(
        self, ctx: RunContext, plan: RunPlan, spares: ClaudeSparePool, starter: ProcessStarter
    ) -> RunOutcome:
        """A new session's run in a spare of its launch if one waits (else cold), leaving a spare for the next.

        A spare found dead once the run has it (killed, or crashed, after `take` saw it alive), before
        anything of the run reached the consumer or came back from the CLI (`SpareLost`), is replaced
        by a cold start of the same run, once, with the run's own new session id: the caller sees one
        run, in the process that served it. Its CLI may have died halfway through writing its live-process
        entry, which the run's end removes (`ClaudeConnection.close`), as for any process it ends."""
        cwd = self.params.cwd.expanduser().resolve()
        env = self.launch.run_env()
        forward = self.options.forward_subagent_text
        # Everything the process is started with but its session id; the starter too: a fake's spare
        # never serves a run of the binary.
        material = [*self.launch.argv(session_id="", resume=False), str(cwd), repr(self.options.start_process)]
        key = pool_key([*material, f"forwardSubagentText={forward}"], env)
        entries = self.launch.entries

        async def start() -> ClaudeSpare:
            session_id = new_session_id()
            argv = self.launch.argv(session_id=session_id, resume=False)
            return await start_spare(
                starter,
                argv,
                cwd,
                env,
                session_id=session_id,
                forward_subagent_text=forward,
                entries=entries,
                key_lease=self.launch.lease(),
            )

        async def replenish() -> None:
            try:
                await spares.replenish(key, start)
            except (BackendUnavailable, ConnectionError):
                return  # no spare: the next run starts cold, and says why if it cannot either

        # A new session is leased too, from before its `session_started`: a resume of it by id (another worker's,
        # the caller's own) waits for this run's end (`session_in_use`) instead of a second `claude --resume`
        # appending to the file this run writes.
        spare = spares.take(key)
        if spare is not None:
            with contextlib.suppress(SpareLost):  # the run ended it (and removed its entry): run cold
                async with session_lease(BACKEND, self.launch.home, spare.session_id):
                    return await ClaudeRun(ctx, self.launch, self.options, starter).run(
                        replace(plan, session_id=spare.session_id), spare, replenish
                    )
        async with session_lease(BACKEND, self.launch.home, plan.session_id):
            return await ClaudeRun(ctx, self.launch, self.options, starter).run(plan, None, replenish)

    # --- which session, and what is said ------------------------------------------------------------

    def _plan(self) -> RunPlan:
        params = self.params
        prompt = _Prompt(params.prompt, tuple((image.mime_type, image.data) for image in params.images))
        if params.resume:
            info = SessionFiles(self.launch.home).resolve(params.resume)
            if params.retry:
                prompt_line, anew = self._retried(Path(str(info.path)))
                return RunPlan(info.session_id, not anew, prompt_line, resumed=True)
            return RunPlan(info.session_id, True, prompt.content(), resumed=True)
        session_id = new_session_id()
        if params.history is None:
            return RunPlan(session_id, False, prompt.content(), resumed=False)
        history = params.history
        content = prompt.content()
        if params.retry:
            history, content = _without_last_user_turn(history)
        cwd = str(params.cwd.expanduser().resolve())
        lines = lines_from_conversation(history, session_id=session_id, cwd=cwd, model=self.launch.model)
        if not lines:
            return RunPlan(session_id, False, content, resumed=False)
        origin = history.origin.model_dump(mode="json") if history.origin is not None else None
        marker = {"type": CONTINUED_FROM, "sessionId": session_id, "origin": origin}
        size = sum(len(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode()) + 1 for line in lines)
        if size > _session_files.MAX_SESSION_BYTES:  # the listing refuses a larger file: the session would be lost
            raise ConfigurationError(
                f"the history makes a session file of {size} bytes, larger than a claude-code session file may be "
                f"({_session_files.MAX_SESSION_BYTES})",
                hint="continue it on another backend, or leave its oldest turns out",
            )
        target = config_dir(self.launch.home) / "projects" / project_dir_name(cwd) / f"{session_id}.jsonl"
        write_lines(target, [*lines, marker])
        return RunPlan(session_id, True, content, resumed=False)

    def _retried(self, path: Path) -> tuple[str | list[dict[str, Any]], bool]:
        """What a retry of the session sends, and whether the session starts anew. A session that ends with tool
        results the model has not answered (its answer to a tool round failed) is left as it is and sent
        `CONTINUE_PROMPT`, as a failover does: the CLI takes only a user's message, and cutting back to the prompt
        would lose the round (its calls asked for, and run, again). Else the file is cut before its last prompt,
        which is answered again; when that prompt was the session's first, nothing of a conversation is left for
        the CLI to resume ("No conversation found"): the file goes (the CLI refuses `--session-id` of an existing
        one, "already in use") and the session starts anew under its own id."""
        parsed = parse_session(path)
        if conversation_from_lines(parsed.lines, origin=None).ends_with_tool_results():
            return CONTINUE_PROMPT, False
        index = next((i for i in range(len(parsed.lines) - 1, -1, -1) if is_prompt(parsed.lines[i])), None)
        if index is None:
            raise ConfigurationError(f"session {path.stem[:8]} has no user turn to retry", hint="send a prompt instead")
        content = parsed.lines[index]["message"]["content"]
        kept = parsed.lines[:index]
        anew = not conversation_from_lines(kept, origin=None).turns
        if anew:
            path.unlink()
        else:  # written where a link leads (a synced transcript): replacing the link would fork the session
            write_lines(path.resolve(), kept)
        return (content if isinstance(content, str | list) else str(content)), anew


def _without_last_user_turn(history: Conversation) -> tuple[Conversation, str | list[dict[str, Any]]]:
    """The conversation without its last turn, a user's, and that turn as the message to send."""
    if not history.turns or not isinstance(history.turns[-1], UserTurn):
        raise ConfigurationError(
            "retry answers the last user turn again, and this conversation ends with the model's turn",
            hint="pass a prompt instead of retry",
        )
    last = history.turns[-1]
    texts = [p.text for p in last.parts if isinstance(p, TextPart)]
    images = [(p.mime_type, p.data) for p in last.parts if isinstance(p, ImagePart)]
    if len(texts) + len(images) != len(last.parts):
        raise ConfigurationError(
            "retry answers a user's text or images again; the last turn holds tool results",
            hint="resume the session instead",
        )
    trimmed = history.model_copy(update={"turns": history.turns[:-1]})
    return trimmed, prompt_content("\n".join(texts), images)
