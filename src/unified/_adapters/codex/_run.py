"""One run: a `codex app-server` process (warm from the pool, or started for it), one thread (new or
resumed), one turn, and the end of it all.

The process is leased from the run's pool (`_pool.py`), keyed by what it was started with: the run's cwd,
`Launch`'s argv and environment, the starter. A new one is started in the run's cwd (about 0.25 s, like
`codex exec`); the JSON-RPC connection routes every message of it to the run that holds it, except those
about a thread of an earlier run (Codex sends no `"jsonrpc"` field). The steps:

1. on a new process, `initialize` (with `experimentalApi`, for `thread/backgroundTerminals/clean`),
   `initialized`; a warm one was initialized by its first run;
2. `thread/start {cwd, approvalPolicy: "untrusted", sandbox: "read-only", ...}` or, for a resume,
   `thread/resume {threadId}` of the thread the short id resolved to (before the process started: a
   reference that matches nothing never reaches Codex, which would not start a thread for it anyway);
3. `turn/start` with the prompt (and images as data URLs) and, where the run's approval mode asks for
   another one than the thread's, Codex's collaboration mode (`collaboration_mode`), then the notifications through
   `AppServerTranslator` and the requests through `ApprovalBridge` until the main thread's turn has
   ended and every subagent it spawned has finished its turn.

Deadlines: an unreachable provider makes Codex retry forever (`error {willRetry: true}` every few
seconds). When its retries say it could not connect at all (`_outcome.connect_failure`), the turn is
interrupted at the `CONNECT_ATTEMPTS`th in a row and the run fails with `backend_unavailable` (retryable);
otherwise (a server that accepts and never answers) after `provider_timeout_s` without progress, with
`backend_error` (retryable). Cancellation (and a stop answer) interrupts the turn (`turn/interrupt`), cleans up its
background terminals, and retires the process, which the pool then ends. Ending the process ends the
commands Codex started too, which run in sessions of their own: they are found before and killed after
(`_processes`). A turn that ended by itself gives the process back to the pool, after ending what the
run started (`CodexConnection.end_run`); a process the pool does not keep has its stdin closed at once.

`max_turns` is unified's (0.171 has no limit): a call of the main thread's model request `max_turns` is answered
`cancel` at its approval (`ApprovalBridge._cap`: Codex asks before every command, patch and MCP call), and one Codex
runs unasked interrupts the turn when it starts (`_unasked_past_cap`; read while another call is checked, as soon as
it is read: `_reading_ahead`), and so does the token count of request
`max_turns` when that response gave no answer (`_cap_reached`: a call of a tool Codex lacks, which Codex answers
itself, unasked and unseen); the run ends `max_turns`, the process retired.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import os
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from unified._adapters.codex._approvals import ApprovalBridge, subagents_refused
from unified._adapters.codex._launch import DEFAULT_BASE_URL, Launch, home_is_prepared, prepare_home, start_codex
from unified._adapters.codex._options import BACKEND, CodexOptions
from unified._adapters.codex._outcome import (
    connect_failure,
    error_from_exit,
    error_from_turn_error,
    mcp_startup_failure,
    provider_down,
)
from unified._adapters.codex._pool import ROUTE, CodexConnection, CodexPool
from unified._adapters.codex._rollouts import codex_short_id, last_total, omitted_images
from unified._adapters.codex._thread_config import included_roots, thread_config
from unified._adapters.codex._translate import (
    SERVER_SIDE_ITEMS,
    TERMINAL_INPUT,
    TOOL_ITEMS,
    AppServerTranslator,
    ModelResponse,
    Retrying,
    TurnEnded,
    tool_call_of,
    unwrap_shell,
)
from unified._binary.framing import answer_over_cap
from unified._binary.jsonrpc import ConnectionClosed, Inbox, LineProblem, RpcError, as_dict, stream_ended
from unified._binary.loops import every
from unified._binary.pool import Lease, pool_key
from unified._binary.proctable import descendants, stopped
from unified._binary.shared import session_lease
from unified._binary.strays import MARKER
from unified._redaction import clip
from unified._text import json_type
from unified._undumpable import hide_host_environment
from unified._version import __version__
from unified.backends import AgentProcess, RunContext, RunOutcome, refusal
from unified.conversations import Origin
from unified.errors import AuthError, BackendError, BackendUnavailable, ConfigurationError, RunStopped, SessionNotFound
from unified.events import SessionStarted, ToolUse, Usage, WarningEvent
from unified.types import ExecuteParams, ImageInput

__all__ = ["CodexRun", "Opening", "initialize_params", "thread_params", "user_input"]

HANDSHAKE_TIMEOUT_S = 60.0
"""A hang guard for `initialize` and the thread's opening (they answer in well under a second)."""
INTERRUPT_GRACE_S = 5.0
"""How long an interrupted turn may take to end before the process is ended regardless."""
EXIT_GRACE_S = 2.0
CLOSING_WAIT_S = 10.0
"""How long `thread/resume` is asked again while Codex answers that the thread is still closing (the process that
ran it is unloading it: a run that ended on a failed turn, seen on a loaded machine), `CLOSING_POLL_S` apart."""
CLOSING_POLL_S = 0.05
CONNECT_ATTEMPTS = 2
"""Codex's failed connections in a row after which the provider counts as unreachable (`backend_unavailable`):
its first retry comes at once, the second ~5 s later (then 10 s, 20 s, ... for ever), so the run ends ~5 s in, in
step with the other backends' own quick retries; a server that accepts and never answers is `provider_timeout_s`'s."""
CHATGPT_URL = "https://chatgpt.com/backend-api/"
"""Where a ChatGPT login's requests go unless `chatgpt_base_url` says otherwise."""
PARENT_GRACE_S = 2.0
"""How long the parent may take to start its turn about finished subagents before the run ends."""
WATCH_S = 0.5
"""How often the app-server's descendants are looked up while a turn runs."""
SANDBOX = "danger-full-access"
"""Under `untrusted` Codex asks before every command and patch in every sandbox mode, but in a sandbox
it runs an approved command confined first and, only if that fails, again outside it (so a command
could run twice, or half-work: a write fails silently while the rest goes on). Without a sandbox
an approved call runs once, as approved; nothing unapproved runs at all."""
OPT_OUT = [
    "remoteControl/status/changed",
    "thread/started",
    "thread/status/changed",
    "thread/readState/changed",
]
"""Notifications unified reads nothing of (a thread's status and read state, `thread/started`: the run knows its
thread from `thread/start`'s answer, and its subagents' from their spawn item): five of a warm text-only run's 23
messages, each a wake-up, a read and a parse of the client. They are no sign of progress either.
`account/rateLimits/updated` is read: it ends every model response, the only sign of one that reported no usage
(`AppServerTranslator._usage_less_response`)."""
_ASKED = frozenset({"exec_command", "apply_patch"})
"""The tools whose every call Codex asks about (with MCP tools): `max_turns` stops them at the approval."""
_SILENT = frozenset({"error", "thread/status/changed", "account/rateLimits/updated", "serverRequest/resolved"})
"""Notifications that are no sign of progress (a retry, a status flag)."""
_T = TypeVar("_T")


_judge_loaded = False
"""Whether `_load_judge` has run in this process."""


def _load_judge() -> None:
    """Import what judges a read Codex runs unasked (`CodexRun._stop_unasked_read`) and compile its protected paths:
    about 0.1 s of CPU, once a process."""
    global _judge_loaded
    from unified.tools._protected import protected_paths
    from unified.tools._runtime import read_outside  # noqa: F401  (imported for the first call's sake)

    protected_paths()
    _judge_loaded = True


def _asked(tool: str) -> bool:
    """Whether Codex asks before every call of `tool` (a command, a patch, an MCP tool)."""
    return tool in _ASKED or tool.startswith("mcp__")


def initialize_params() -> dict[str, Any]:
    """What `initialize` asks for: `experimentalApi` (for `thread/backgroundTerminals/clean`), no
    notifications that are no sign of progress (the benchmark's direct client sends the same)."""
    return {
        "clientInfo": {"name": "unified", "title": "unified", "version": __version__},
        "capabilities": {"experimentalApi": True, "optOutNotificationMethods": OPT_OUT},
    }


def thread_params(params: ExecuteParams) -> dict[str, Any]:
    """The settings `thread/start` and `thread/resume` give the thread (without its cwd or id)."""
    settings: dict[str, Any] = {"approvalPolicy": "untrusted", "sandbox": SANDBOX}
    if params.model:
        settings["model"] = params.model
    if params.system_instruction is not None:
        settings["baseInstructions"] = params.system_instruction
    return settings


def _answered_id(value: object, what: str) -> str:
    """The id of a thread or turn Codex answered with ("" for none); `BackendError` for one that is no string: read
    as its text ("5"), it matched none of the notifications that name it (the number 5), and the run waited for
    them until its idle timeout."""
    if value is None or isinstance(value, str):
        return value or ""
    raise BackendError(
        f"codex app-server {what} whose id is {json_type(value)}, not a string: unified cannot follow it",
        hint="run `unified doctor`: this codex is not the version unified drives (its app-server's answers differ)",
    )


def collaboration_mode(params: ExecuteParams, thread: dict[str, Any]) -> dict[str, Any] | None:
    """The `collaborationMode` a run's `turn/start` sets, from the answer of `thread/start` or `thread/resume`:
    Codex's plan mode for `approval_mode="plan"` (its planning instructions, and its `request_user_input`
    tool, which it offers in no other mode), else its default mode, but only for a resumed thread that an
    earlier run left in plan mode (the mode is the thread's, kept across turns); None to leave it as it is.
    The settings keep the thread's model and reasoning effort."""
    wanted = "plan" if params.approval_mode == "plan" else "default"
    current = as_dict(thread.get("collaborationMode")).get("mode") or "default"
    if wanted == current:
        return None
    settings = {
        "model": str(thread.get("model") or params.model or ""),
        "reasoning_effort": thread.get("reasoningEffort"),
    }
    return {"mode": wanted, "settings": settings}


_OWN_MESSAGE = re.compile(
    r'\s*\{\s*"method"\s*:\s*"item/(?:started|completed)"\s*,\s*"params"\s*:\s*\{\s*"item"\s*:\s*\{\s*"type"\s*:\s*"userMessage"'
)
"""The start of Codex's echo of the run's own user message (`item/started`, `item/completed`), which carries each
image again as its data URL: a large image makes it a line over the framing's cap, dropped, and unified needs
nothing of it. It is dropped without a `malformed_line` warning (two of them for every large image, before)."""

_TURN_COMPLETED = re.compile(
    r'\s*\{\s*"method"\s*:\s*"turn/completed"\s*,\s*"params"\s*:\s*\{\s*"threadId"\s*:\s*"([^"\\]+)"\s*,'
    r'\s*"turn"\s*:\s*\{\s*"id"\s*:\s*"([^"\\]+)"'
)
"""The start of a `turn/completed` notification (its thread's and turn's ids), which repeats the turn's items: an
answer over the framing's cap makes it a line over the cap too, dropped, and the run waited for the turn's end until
its idle timeout (forever without one). Its status comes after the items, unread: the turn is taken as completed."""


_ANSWER_DELTA = re.compile(
    r'\s*\{\s*"method"\s*:\s*"item/agentMessage/delta"\s*,\s*"params"\s*:\s*\{\s*"threadId"\s*:\s*"([^"\\]+)"'
)
"""The start of a piece of a thread's answer text (its id). The main thread's over the framing's cap is dropped, and
the answer is lost (the item's and the turn's ends that repeat it are over the cap too): the run ends with
`framing.answer_over_cap` (it ended `success` with an empty final text)."""


def user_input(text: str, images: tuple[Any, ...]) -> list[dict[str, Any]]:
    """A turn's `UserInput` items: the text, then each image as a data URL."""
    items: list[dict[str, Any]] = []
    if text:
        items.append({"type": "text", "text": text, "text_elements": []})
    for image in images:
        data = base64.b64encode(image.data).decode()
        items.append({"type": "image", "url": f"data:{image.mime_type};base64,{data}"})
    return items


class Opening:
    """How the run's thread is opened: `thread/start`, or `thread/resume` of an existing thread."""

    def __init__(
        self,
        thread_id: str | None = None,
        *,
        resumed: bool = False,
        prompt: str | None = None,
        images: tuple[ImageInput, ...] = (),
        continued_from: Origin | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.resumed = resumed
        self.prompt = prompt
        """The turn's text when it is not the run's prompt (a retry answers the last user turn again)."""
        self.images = images
        """With `prompt`: that turn's images."""
        self.continued_from = continued_from


class _DeadOnArrival(Exception):
    """A warm process was found dead before the run's thread was opened: the run takes another, once."""


class CodexRun:
    """One run on a leased app-server process (see the module docstring)."""

    def __init__(
        self, launch: Launch, options: CodexOptions, ctx: RunContext, opening: Opening, pool: CodexPool
    ) -> None:
        self.launch = launch
        self.options = options
        self.ctx = ctx
        self.params = ctx.params
        self.opening = opening
        self.pool = pool
        self.lease: Lease[CodexConnection] | None = None
        self.process: AgentProcess | None = None
        self.connection: CodexConnection | None = None
        self.inbox = Inbox()
        self.translator: AppServerTranslator | None = None
        self.thread_id: str | None = None
        self._rollout: Path | None = None
        """The thread's rollout file, as Codex names it when the thread opens."""
        self.turn_id: str | None = None
        self.turn_ended = False
        self._stuck_since: float | None = None
        self._answer_lost = False
        """A piece of the main thread's answer was over the cap, dropped: its turn's end is an error."""
        self._last_retry: Retrying | None = None
        self._refused = 0
        """Codex's retries in a row that could not connect at all (`connect_failure`), since the last progress."""
        self._responses = 0
        self._interrupted_at_cap = False
        """The turn was interrupted at the end of the main thread's response `max_turns` (`_cap_reached`)."""
        self._capped_ahead = False
        """The turn was interrupted at a call past the cap read ahead of the loop (`_reading_ahead`)."""
        self._stopped_unasked: str | None = None
        """Why the turn was interrupted at what Codex does unasked and the run does not allow: a read outside the
        workspace (`_stop_unasked_read`), input typed into a running process (`_stop_unasked_input`)."""
        self._pending: deque[dict[str, Any] | LineProblem] = deque()
        """Messages read while waiting for something else (MCP start-up), handled first."""
        self._grace_until: float | None = None
        self._started: SessionStarted | None = None
        """The run's `SessionStarted` once the thread is open, until `_announce` emits it."""
        self._mode: dict[str, Any] | None = None
        """The collaboration mode the turn sets (`collaboration_mode`), if another than the thread's."""
        self._leases = contextlib.AsyncExitStack()
        """A new thread's lease (`session_lease`), from its id on to the run's end; a resumed one's is the backend's."""
        self._reusable = False
        """Whether the turn ended by itself (completed, or failed on the provider's side) and nothing else went
        wrong: the process may serve another run."""

    @property
    def where(self) -> str:
        if self.launch.auth == "chatgpt":
            return "ChatGPT (Codex login)"
        return f"the model provider at {self.launch.base_url or 'api.openai.com'}"

    async def run(self) -> RunOutcome:
        cwd = self.params.cwd.expanduser().resolve()
        if not cwd.is_dir():
            raise ConfigurationError(f"cwd {cwd} is not a directory", hint="pass an existing working directory")
        home = self.launch.home
        if not home_is_prepared(home):
            await anyio.to_thread.run_sync(prepare_home, home)
        login = self.launch.chatgpt
        if self.options.hide_host_environment:  # before an app-server (a warm one too) starts
            hide_host_environment()
        start = self.options.start_process or start_codex
        argv, env = self.launch.argv(), self.launch.env

        async def spawn() -> CodexConnection:
            copied = await anyio.to_thread.run_sync(login.copy_in, home) if login is not None else None
            marker = secrets.token_hex(8)  # per process: it serves one run at a time
            return CodexConnection(start(argv, cwd, {**env, MARKER: marker}), marker, copied)

        # The cwd is the process's own (an MCP server without a cwd of its own runs there); the starter is part
        # of the key, so a stand-in never serves a run meant for the binary.
        key = pool_key([*argv, str(cwd), repr(self.options.start_process), self.launch.api_key or ""], env)
        async with self._leases:
            try:
                return await self._leased(key, spawn, cwd, replace_dead=True)
            except _DeadOnArrival:
                return await self._leased(key, spawn, cwd, replace_dead=False)

    async def _leased(
        self, key: str, spawn: Callable[[], Awaitable[CodexConnection]], cwd: Path, *, replace_dead: bool
    ) -> RunOutcome:
        kept = False
        try:
            async with self.pool.lease(key, spawn) as lease:
                try:
                    return await self._on(lease, cwd, replace_dead=replace_dead)
                finally:
                    with anyio.CancelScope(shield=True):
                        kept = await self._leave(lease)
                        if kept:
                            await self._copy_back(lease.resource)
        finally:
            if not kept and self.connection is not None:  # the pool has ended the process now
                with anyio.CancelScope(shield=True):
                    await self._copy_back(self.connection)

    async def _on(self, lease: Lease[CodexConnection], cwd: Path, *, replace_dead: bool) -> RunOutcome:
        connection = lease.resource
        self.lease, self.connection, self.process = lease, connection, connection.process
        self.inbox = connection.open_inbox(ROUTE)
        transcript = self.options.transcript
        if transcript is not None:
            connection.observer = lambda direction, message: transcript.append({"dir": direction, "msg": message})
        try:
            await self._opened(cwd)
            return await self._watched(self._turn)
        except ConnectionClosed as exc:
            self._reusable = False
            if replace_dead and lease.warm and self.thread_id is None:
                # It died while idle (its exit not yet seen when it was leased): nothing of the run happened yet.
                raise _DeadOnArrival from exc
            await self._announce()  # a thread was opened before the process ended
            await self._warn_unread_lines()
            when = "during the run" if connection.initialized else "before it answered initialize"
            ended = await stream_ended(connection.process, "codex app-server", when, exc, EXIT_GRACE_S)
            raise error_from_exit(*ended) from exc
        except RunStopped:
            self._reusable = False
            with anyio.CancelScope(shield=True):
                await self._stop_turn()
            raise
        except anyio.get_cancelled_exc_class():
            self._reusable = False
            with anyio.CancelScope(shield=True):
                await self._stop_turn()
            raise

    async def _opened(self, cwd: Path) -> None:
        """The handshake (on a new process) and the thread's opening, while the judge of the reads Codex runs unasked
        is loaded, once a process, in a thread (`_load_judge`): loaded at the first `view_image`, it held the event
        loop for its import (0.1 s on an idle 2-core machine, 0.7 s busy) just when the call of the next request
        had to be seen (`_reading_ahead`)."""
        connection = self.connection
        assert connection is not None

        async def open_thread() -> None:
            if not connection.initialized:
                await self._handshake()
            await self._open(cwd)

        if self.params.approval_mode == "yolo" or _judge_loaded:
            await open_thread()  # nothing to load: no task group to enter and leave
            return
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(functools.partial(anyio.to_thread.run_sync, _load_judge, abandon_on_cancel=True))
                await open_thread()
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None

    async def _leave(self, lease: Lease[CodexConnection]) -> bool:
        """Give the process back (after `end_run`) when the run ended cleanly and the pool keeps it; else retire
        it, and the pool ends it and every process it started. Whether it was given back."""
        connection = lease.resource
        connection.observer = None
        if self._reusable and lease.kept and connection.alive and self.translator is not None:
            try:
                started = bool(self.translator.tools or self.launch.mcp_servers)
                await connection.end_run(self.translator.threads, started=started)
                return True
            except (ConnectionClosed, RpcError, TimeoutError):
                pass
        lease.retire()
        connection.close_inbox(ROUTE)
        return False

    async def _copy_back(self, connection: CodexConnection) -> None:
        """The ChatGPT login as Codex left it, back into the user's home when it refreshed the tokens."""
        login = self.launch.chatgpt
        if login is not None and connection.login is not None:
            connection.login = await anyio.to_thread.run_sync(login.copy_back, self.launch.home, connection.login)

    # --- the processes it starts --------------------------------------------------------------------

    async def _watched(self, step: Callable[[], Awaitable[RunOutcome]]) -> RunOutcome:
        """Run `step` while remembering, every `WATCH_S`, the processes the app-server has started: if it
        dies (SIGKILL, a crash), its commands outlive it, and its `close` kills what was remembered.

        On asyncio the ticker's task is started by a timer of the event loop at the first look, `WATCH_S` in
        (`_ticking`), not at once to sleep until then: a run over before (a warm text-only run takes ~70 ms)
        starts no task, whose start, cancel scope and wake-ups cost ~0.1 ms of the run's CPU. Trio has no such
        timer: the task starts at once there."""
        outcome: RunOutcome | None = None
        done = anyio.Event()
        loop = asyncio._get_running_loop()  # None on trio
        try:
            async with anyio.create_task_group() as tg:
                timer = None
                if loop is not None:
                    timer = loop.call_later(WATCH_S, tg.start_soon, self._ticking, done)
                else:
                    tg.start_soon(every, WATCH_S, self._remember, done)
                try:
                    outcome = await step()
                finally:
                    done.set()
                    if timer is not None:
                        timer.cancel()
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        assert outcome is not None
        return outcome

    async def _ticking(self, done: anyio.Event) -> None:
        """The ticker started by `_watched`'s timer: the first look now, then one every `WATCH_S`."""
        if not done.is_set():
            await self._remember()
        await every(WATCH_S, self._remember, done)

    async def _remember(self) -> None:
        connection = self.connection
        process = self.process
        if connection is not None and process is not None and process.pid is not None and process.returncode is None:
            found = await anyio.to_thread.run_sync(descendants, process.pid)
            connection.remembered.update(found)

    # --- the steps ----------------------------------------------------------------------------------

    async def _request(
        self, method: str, params: dict[str, Any], meanwhile: Callable[[], Awaitable[None]] | None = None
    ) -> dict[str, Any]:
        assert self.connection is not None
        with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
            return await self.connection.request(method, params, meanwhile=meanwhile)

    async def _resume(self, params: dict[str, Any]) -> dict[str, Any]:
        """`thread/resume`, asked again while Codex says the thread is closing ("retry thread/resume after the
        thread is closed"), for at most `CLOSING_WAIT_S`."""
        deadline = anyio.current_time() + CLOSING_WAIT_S
        while True:
            try:
                return await self._request("thread/resume", params)
            except RpcError as exc:
                if "is closing" not in exc.message or anyio.current_time() >= deadline:
                    raise
            await anyio.sleep(CLOSING_POLL_S)

    async def _starting(self, method: str, params: dict[str, Any], what: str) -> dict[str, Any]:
        """A request of the process's start (`initialize`, the login): no answer in time is the process's
        failure, told with its exit code and stderr."""
        try:
            return await self._request(method, params)
        except TimeoutError:
            process = self.process
            assert process is not None
            raise error_from_exit(
                process.returncode, process.stderr_tail(), f"codex app-server did not answer {what}"
            ) from None

    async def _handshake(self) -> None:
        assert self.connection is not None
        try:
            await self._starting("initialize", initialize_params(), "initialize")
        except RpcError as exc:
            raise BackendUnavailable(f"codex app-server refused initialize: {exc.message}") from exc
        await self.connection.notify("initialized", {})
        if self.launch.api_key is not None:
            await self._log_in(self.launch.api_key)
        self.connection.initialized = True

    async def _log_in(self, key: str) -> None:
        """Give the process the run's key (`_launch`: never its environment). Codex keeps it in memory
        (`cli_auth_credentials_store = "ephemeral"`) for the process's life: a warm one is logged in once,
        and its pool key holds the key, so it serves only runs of that key. The exchange stays out of the
        `transcript` (a cassette never holds the key, and its replay answers a login itself)."""
        assert self.connection is not None
        observer, self.connection.observer = self.connection.observer, None
        try:
            await self._starting("account/login/start", {"type": "apiKey", "apiKey": key}, "the API key login")
        except RpcError as exc:
            raise AuthError(
                f"codex app-server refused the run's API key: {exc.message}",
                hint="check OPENAI_API_KEY (or the api_key option)",
            ) from exc
        finally:
            self.connection.observer = observer

    async def _open(self, cwd: Path) -> None:
        params = thread_params(self.params)
        policy = self.options.policy
        subagents = policy is None or not subagents_refused(policy, self.params.approval_mode)
        config = thread_config(self.params, self.options, self.launch, subagents=subagents)
        if config:
            params["config"] = config
        opening = self.opening
        try:
            if opening.thread_id is None:
                answer = await self._request("thread/start", {**params, "cwd": str(cwd)})
            else:
                assert self.connection is not None
                self.connection.adopt(opening.thread_id)
                # the roots Codex names to the model: set at a thread's start (from `writable_roots`), replaced here
                roots = await anyio.to_thread.run_sync(lambda: [os.path.realpath(cwd), *included_roots(self.params)])
                resume = {**params, "threadId": opening.thread_id, "excludeTurns": True, "runtimeWorkspaceRoots": roots}
                answer = await self._resume(resume)
        except TimeoutError:
            raise BackendError("codex app-server did not open the thread in time", retryable=True) from None
        except RpcError as exc:
            if opening.thread_id is not None and (
                "no rollout found" in exc.message or "invalid session id" in exc.message
            ):
                raise SessionNotFound(
                    f"Codex has no thread {opening.thread_id} in {self.launch.home}: {exc.message}",
                    hint="run `unified sessions list --backend codex`",
                ) from exc
            raise BackendError(f"codex app-server could not open the thread: {exc.message}") from exc
        self._mode = collaboration_mode(self.params, answer)
        thread = as_dict(answer.get("thread"))
        thread_id = _answered_id(thread.get("id"), "opened a thread") or opening.thread_id or ""
        if not thread_id:
            raise BackendError("codex app-server opened a thread without an id")
        self.thread_id = thread_id
        rollout = thread.get("path")
        self._rollout = Path(rollout) if isinstance(rollout, str) and Path(rollout).is_absolute() else None
        if not self.params.resume:  # a new thread (or one made from a history): a resume of it now waits for this run
            await self._leases.enter_async_context(session_lease(BACKEND, self.launch.home, thread_id))
        where = str(thread.get("cwd") or answer.get("cwd") or cwd)
        self.translator = AppServerTranslator(main_thread=thread_id, cwd=where)
        if opening.thread_id is not None and self._rollout is not None:
            total = await anyio.to_thread.run_sync(last_total, self._rollout)
            if total is not None:
                self.translator.resumed_at(total)
        self._started = SessionStarted(
            backend=BACKEND,
            model=str(answer.get("model") or self.params.model or "") or None,
            short_id=codex_short_id(thread_id),
            resumed=opening.resumed,
            cwd=where,
            transport="app-server",
            session_id=thread_id,
        )

    async def _announce(self) -> None:
        """Emit the run's `SessionStarted` (once): as soon as `turn/start` is sent, so the consumer's handling of it
        never holds the turn back (~0.5 ms between the thread's answer and the turn's request), and before
        anything else is emitted."""
        started, self._started = self._started, None
        if started is not None:
            await self.ctx.emit(started)

    async def _mcp_startup(self) -> None:
        """Wait until each MCP server of the run is ready (or has failed): Codex resolves a call to an MCP tool
        only once its server is up, so a turn started earlier could not use them. Other messages wait."""
        names = set(self.launch.mcp_servers)
        if not names:
            return
        limit = max((server.timeout_s for server in self.params.mcp_servers), default=30.0) + 5.0
        with anyio.move_on_after(limit):
            while names:
                assert self.connection is not None
                message = await self.connection.receive(self.inbox)
                params = as_dict(message.get("params")) if isinstance(message, dict) else {}
                if not isinstance(message, dict) or message.get("method") != "mcpServer/startupStatus/updated":
                    self._pending.append(message)
                    continue
                name, status = str(params.get("name")), str(params.get("status"))
                if name not in names or status == "starting":
                    continue
                names.discard(name)
                if status != "ready":
                    why = str(params.get("failureReason") or params.get("error") or status)
                    warning = WarningEvent(code="mcp_unavailable", message=mcp_startup_failure(name, why))
                    warning.native = self.ctx.native(params)  # codex's own text, with its Rust type paths
                    await self.ctx.emit(warning)
        for name in sorted(names):
            await self.ctx.emit(
                WarningEvent(code="mcp_unavailable", message=f"MCP server {name!r} did not start within {limit:g} s")
            )

    async def _turn(self) -> RunOutcome:
        assert self.connection is not None
        assert self.translator is not None
        assert self.thread_id is not None
        translator = self.translator
        if self.launch.mcp_servers:  # their start-up may warn: the session is announced first
            await self._announce()
        await self._mcp_startup()
        text = self.opening.prompt if self.opening.prompt is not None else self.params.prompt
        images = self.params.images if self.opening.prompt is None else self.opening.images
        items = user_input(text, images)
        before = await anyio.to_thread.run_sync(self._rollout_size) if images else 0
        try:
            turn: dict[str, Any] = {"threadId": self.thread_id, "input": items}
            if self._mode is not None:
                turn["collaborationMode"] = self._mode
            answer = await self._request("turn/start", turn, meanwhile=self._announce)
        except TimeoutError:
            await self._announce()
            raise BackendError("codex app-server did not start the turn in time", retryable=True) from None
        except RpcError as exc:
            await self._announce()
            if "exceeds the maximum length" in exc.message:  # Codex's own limit on a turn's input (1 MiB of text)
                raise BackendError(
                    f"codex refused the prompt: {exc.message}",
                    code="bad_request",
                    hint="shorten the prompt (put long material in a file of the workspace and name it)",
                ) from exc
            raise BackendError(f"codex app-server could not start the turn: {exc.message}") from exc
        self.turn_id = _answered_id(as_dict(answer.get("turn")).get("id"), "started a turn")
        translator.start_turn(self.turn_id)
        bridge = ApprovalBridge(self.ctx, self.connection, translator, self.options.policy)
        main_end: TurnEnded | None = None
        while main_end is None or translator.children_running() or self._grace_until is not None:
            message = await self._next()
            if message is None:
                if self._grace_until is not None and time.monotonic() >= self._grace_until:
                    break  # the parent stayed idle after its subagents finished: the run is done
                continue
            if "method" not in message:
                continue  # an answer nobody waits for
            method = str(message["method"])
            if "id" in message:
                await bridge.answer(message)
                continue
            if method not in _SILENT:
                self._stuck_since = None
                self._refused = 0
            params = as_dict(message.get("params"))
            if method == "turn/started" and params.get("threadId") == self.thread_id and main_end is not None:
                # Codex tells the parent that its subagents finished by a turn of its own: follow it too.
                self.turn_id = str(as_dict(params.get("turn")).get("id") or "")
                translator.start_turn(self.turn_id)
                main_end, self.turn_ended, self._grace_until = None, False, None
                continue
            if method == TERMINAL_INPUT and self._stopped_unasked is None and self.params.approval_mode != "yolo":
                await self._stop_unasked_input(params)
            for item in translator.notification(method, params):
                if isinstance(item, ModelResponse):
                    if item.task_id is None:
                        self._responses += 1
                        if self._cap_reached(item, bridge) and main_end is None:
                            # before anything else: Codex may be about to send the next request
                            self._interrupted_at_cap = True
                            await self._interrupt()
                        await self.ctx.end_turn(item.usage)
                elif isinstance(item, Retrying):
                    await self._retrying(item)
                elif isinstance(item, TurnEnded):
                    if item.task_id is None:
                        main_end = item
                        self.turn_ended = True
                    children = translator.children_running()
                    if main_end is not None and not children and translator.spawned:
                        self._grace_until = time.monotonic() + PARENT_GRACE_S
                else:
                    item.native = self.ctx.native(message)
                    looks_outside = isinstance(item, ToolUse) and self._looks_outside(item, bridge)
                    capping = isinstance(item, ToolUse) and not bridge.capped and self._unasked_past_cap(item)
                    bridge.capped = bridge.capped or capping
                    if looks_outside or (capping and not self._capped_ahead):
                        # before anything else: Codex is about to send the image, or the next request
                        await self._interrupt()
                    await self.ctx.emit(item)
                    if isinstance(item, ToolUse) and not capping and self._stopped_unasked is None:
                        await self._stop_unasked_read(item, bridge, translator, interrupted=looks_outside)
        assert self.process is not None
        assert self.connection is not None
        assert self.lease is not None
        if not self.lease.kept:
            # Nothing more will be sent: closed stdin starts app-server's own shutdown (~20 ms after a turn, as
            # soon over as SIGTERM's) at once, beside the run's last events; its `close` waits for it, and ends
            # it for sure.
            await self.process.end_input()
            self.connection.input_ended = True
        assert main_end is not None
        self._reusable = main_end.status != "interrupted"
        if images and self._rollout is not None:
            await self._warn_omitted_images(self._rollout, before, len(images))
        if self._responses == 0:
            await self.ctx.end_turn(Usage())  # nothing reported: the guard estimates from the text, flagged
        short = codex_short_id(self.thread_id)
        if self._stopped_unasked is not None:
            return RunOutcome(status="error", short_id=short, error=self._stopped_unasked)
        if bridge.capped or (self._interrupted_at_cap and main_end.status == "interrupted"):
            said = (
                f"stopped after max_turns={self.params.max_turns} model requests; the last request's calls were not run"
            )
            return RunOutcome(status="max_turns", short_id=short, error=said)
        if main_end.status == "completed":
            if self._answer_lost:
                raise answer_over_cap("codex")
            return RunOutcome(short_id=short)
        if main_end.status == "interrupted":
            return RunOutcome(status="interrupted", short_id=short)
        raise error_from_turn_error(main_end.error, where=self.where)

    def _cap_reached(self, response: ModelResponse, bridge: ApprovalBridge) -> bool:
        """Whether the main thread's `response` ends the run's model request `max_turns` (or a later one) and Codex
        may send another: the turn is interrupted then. Codex answers a call of a tool it lacks itself, without an
        approval or an item, and asks the model again at once (measured: 9 requests for max_turns=2 before); the
        interrupt races with that next request, which may already be on its way. A response that gave an answer
        ends the turn (unless it also made calls: then one request more may go out, and the next stops it), and is
        not interrupted: the run succeeds."""
        cap = self.params.max_turns
        if cap is None or bridge.capped or self._interrupted_at_cap or self._responses < cap:
            return False
        return not response.answered or self._responses > cap

    async def _interrupt(self) -> None:
        """Ask Codex to end the current turn (`turn/interrupt`), without waiting for its answer."""
        assert self.connection is not None  # the turn runs on it
        await self.connection.start_request("turn/interrupt", {"threadId": self.thread_id, "turnId": self.turn_id})

    def _unasked_read(self, call: ToolUse) -> str | None:
        """The path of a `view_image` Codex runs unasked, in a mode that judges it (every mode but yolo); None for any
        other call."""
        path = call.input.get("path")
        if call.name != "view_image" or self.params.approval_mode == "yolo" or not path:
            return None
        return str(path)

    def _looks_outside(self, call: ToolUse, bridge: ApprovalBridge) -> bool:
        """Whether `call` is a `view_image` Codex runs unasked of a path outside the workspace, by the quick check
        (links followed, no thread hop): the turn is interrupted at once, before `_stop_unasked_read` says why."""
        path = self._unasked_read(call)
        if path is None:
            return False
        workspace = bridge.workspace()
        try:
            return not workspace.contains(Path(os.path.realpath(workspace.root / path)))
        except (OSError, ValueError):
            return True

    async def _stop_unasked_read(
        self, call: ToolUse, bridge: ApprovalBridge, translator: AppServerTranslator, *, interrupted: bool
    ) -> None:
        """Interrupt the turn when Codex starts a `view_image` of a file outside the workspace (or a credential file),
        in every mode but yolo: Codex runs it without asking and sends the file's bytes to the model in the next
        request, as they are (round 25: an image outside, a secret appended to a PNG, went to the model unasked in
        default mode, where Claude Code's Read of it is asked). The interrupt races with that request, as the
        `max_turns` cap's does: it is sent before the call is even reported (`_looks_outside`; measured, 27 of 28 runs
        sent no request after; sent after the thread hop of `read_outside`, 15 of 18); the run ends `error`, its
        thread resumable. `interrupted`: it was sent already."""
        path = self._unasked_read(call)
        if path is None:
            return
        from unified.tools._runtime import OUTSIDE_RULE, read_outside

        workspace = bridge.workspace()
        outside = await self._reading_ahead(lambda: read_outside(workspace, [path]))
        if outside is None and interrupted:  # realpath failed, or the two checks disagree: refuse all the same
            outside = f"{clip(path, 200, more='…')} may not be a path in the workspace"
        if outside is None:
            return
        self._stopped_unasked = (
            f"stopped: the model's view_image {outside}, which Codex runs without asking; "
            "run in yolo mode or copy the image into the workspace to let the model see it"
        )
        translator.decided.add(call.tool_use_id)
        translator.not_run[call.tool_use_id] = f"not run: {outside}"
        if not interrupted:
            await self._interrupt()
        await self.ctx.emit(
            refusal(
                call.tool_use_id,
                call.name,
                outside,
                decided_by="policy",
                rule=OUTSIDE_RULE.name,
                subagent_task_id=call.subagent_task_id,
            )
        )

    async def _stop_unasked_input(self, params: dict[str, Any]) -> None:
        """Interrupt the turn when the model typed into a process a command started (`write_stdin`), in every mode but
        yolo: Codex writes it without asking anyone, in every mode, and tells only once it is written
        (`TERMINAL_INPUT`), so the allow of a program (`bash`, `python3`, by a user or a rule) would let the model type
        any command into it, unasked (round 38). The input was written: it is reported (`tool_progress`, status
        `input`), and no more is; the run ends `error`, its thread resumable."""
        assert self.translator is not None
        await self._interrupt()
        command = str(as_dict(self.translator.item(str(params.get("itemId")))).get("command") or "a command")
        self._stopped_unasked = (
            f"stopped: the model typed into the running `{clip(unwrap_shell(command), 200, more='…')}` (write_stdin), "
            "which Codex does without asking; run in yolo mode to let the model type into the programs it starts"
        )

    def _unasked_past_cap(self, call: ToolUse) -> bool:
        """Whether `call` is one Codex runs without asking (`view_image`, its goal tools, a subagent) made by the main
        thread's model request `max_turns` or a later one: the turn is interrupted then, which may come after Codex
        sent the next request (those calls take milliseconds). A command, patch or MCP call is asked first, and
        stopped surely there (`ApprovalBridge._cap`); a web search runs at the provider's."""
        cap = self.params.max_turns
        if cap is None or call.subagent_task_id is not None or call.server_side or _asked(call.name):
            return False
        assert self.translator is not None
        return self.translator.request_of(call.tool_use_id) >= cap

    async def _reading_ahead(self, check: Callable[[], Awaitable[_T]]) -> _T:
        """`check()`, while what Codex sends meanwhile is read into `_pending` (the loop handles it next, in order),
        each message looked at as it comes (`_past_cap_ahead`): a call past the cap interrupts the turn at once. The
        loop read nothing while a check of a `view_image` hopped threads (80 ms on the idle 2-core machine, 600 ms
        with 4 runs at once), and Codex, which runs the next call unasked and asks the model again within
        milliseconds, sent up to 5 requests more for `max_turns=2` before the loop saw the call of request 2."""
        assert self.connection is not None
        connection = self.connection

        async def read() -> None:
            with contextlib.suppress(ConnectionClosed):  # the loop's next read says so
                while True:
                    message = await connection.receive(self.inbox)
                    self._pending.append(message)
                    if self._past_cap_ahead(message):
                        self._capped_ahead = True
                        with anyio.CancelScope(shield=True):
                            await self._interrupt()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(read)
                result = await check()
                group.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise group.exceptions[0] from None
        return result

    def _past_cap_ahead(self, message: dict[str, Any] | LineProblem) -> bool:
        """Whether `message`, read ahead of the loop, starts a call `_unasked_past_cap` will stop when the loop comes
        to it: its request is counted from the responses the translator counted and those read ahead before it (a
        count that may fall short, never exceed the loop's: `AppServerTranslator.ends_main_response`)."""
        cap, translator = self.params.max_turns, self.translator
        if cap is None or translator is None or self._capped_ahead or isinstance(message, LineProblem):
            return False
        params = as_dict(message.get("params"))
        item = as_dict(params.get("item"))
        kind = item.get("type")
        if message.get("method") != "item/started" or params.get("threadId") != self.thread_id:
            return False
        if kind not in TOOL_ITEMS or kind in SERVER_SIDE_ITEMS or _asked(tool_call_of(item, None)[0]):
            return False
        ahead = sum(
            1
            for m in self._pending
            if isinstance(m, dict) and translator.ends_main_response(str(m.get("method")), as_dict(m.get("params")))
        )
        return translator.main_responses + ahead + 1 >= cap

    def _rollout_size(self) -> int:
        """How long the thread's rollout is (0 before Codex writes it: a new thread's first turn)."""
        try:
            return self._rollout.stat().st_size if self._rollout is not None else 0
        except OSError:
            return 0

    async def _warn_omitted_images(self, rollout: Path, offset: int, images: int) -> None:
        """A `warning` per image of the turn Codex did not send the model (one it cannot decode, one too large):
        Codex puts a note in its place for the model, and tells the client nothing (no notification, no error)."""
        for omitted in await anyio.to_thread.run_sync(omitted_images, rollout, offset, images):
            await self.ctx.emit(
                WarningEvent(
                    code="image_omitted",
                    message=f"codex did not send the model {omitted}; give a whole PNG, JPEG, GIF or WebP file "
                    "(ImageInput.from_path reads one), under Codex's size limit",
                )
            )

    async def _next(self) -> dict[str, Any] | None:
        """The next message for the run; None when there is none to act on (a bad line, or a deadline: the
        provider's, which interrupts the turn and fails the run, or the parent's grace, which ends it)."""
        assert self.connection is not None
        if self._pending:
            pending = self._pending.popleft()
            return await self._usable(pending)
        deadlines = []
        if self._stuck_since is not None:
            deadlines.append(self.options.provider_timeout_s - (time.monotonic() - self._stuck_since))
        if self._grace_until is not None:
            deadlines.append(self._grace_until - time.monotonic())
        message: dict[str, Any] | LineProblem | None = None
        if not deadlines:  # the common case: no cancel scope to enter and leave for every message
            message = await self.connection.receive(self.inbox)
        else:
            with anyio.move_on_after(max(min(deadlines), 0.0)):
                message = await self.connection.receive(self.inbox)
        if message is None:
            if (
                self._stuck_since is not None
                and time.monotonic() - self._stuck_since >= self.options.provider_timeout_s
            ):
                await self._provider_down()
            return None
        return await self._usable(message)

    async def _warn_unread_lines(self) -> None:
        """The lines of a process that ended which nothing of the run read and which could not be used, as the
        warnings a read would have given: what an app-server that died before `initialize` wrote (a wrong binary's
        banner, garbage) says why it died."""
        while (message := self.inbox.pop()) is not None:
            if isinstance(message, LineProblem):
                await self._usable(message)

    async def _usable(self, message: dict[str, Any] | LineProblem) -> dict[str, Any] | None:
        if isinstance(message, LineProblem):
            if _OWN_MESSAGE.match(message.head):
                return None
            if (lost := _ANSWER_DELTA.match(message.head)) is not None and lost.group(1) == self.thread_id:
                self._answer_lost = True
            if (ended := _TURN_COMPLETED.match(message.head)) is not None:
                said = f"{message.text}; read as the end of turn {ended.group(2)} from its first fields (status unread)"
                await self.ctx.emit(WarningEvent(code="malformed_line", message=said))
                turn = {"id": ended.group(2), "status": "completed"}
                return {"method": "turn/completed", "params": {"threadId": ended.group(1), "turn": turn}}
            await self.ctx.emit(WarningEvent(code="malformed_line", message=message.text))
            return None
        return message

    async def _retrying(self, item: Retrying) -> None:
        if self._stuck_since is None:
            self._stuck_since = time.monotonic()
        self._last_retry = item
        detail = f" ({item.details})" if item.details else ""
        await self.ctx.emit(WarningEvent(code="retrying", message=f"codex: {item.message}{detail}"))
        if not connect_failure(item.message, item.details):
            self._refused = 0
            return
        self._refused += 1
        if self._refused >= CONNECT_ATTEMPTS:
            await self._stop_turn()
            raise provider_down(self._provider_url(), item.message, item.details, self._refused)

    def _provider_url(self) -> str:
        if self.launch.auth == "chatgpt":
            return self.options.chatgpt_base_url or CHATGPT_URL
        return self.launch.base_url or DEFAULT_BASE_URL

    async def _provider_down(self) -> None:
        retry = self._last_retry
        said = f": {retry.message}" + (f" ({retry.details})" if retry and retry.details else "") if retry else ""
        await self._stop_turn()
        if retry is not None and self._refused:  # the limit came first, but Codex said why: it cannot connect
            raise provider_down(self._provider_url(), retry.message, retry.details, self._refused)
        raise BackendError(
            f"{self.where} did not answer for {self.options.provider_timeout_s:g} s; Codex kept retrying{said}",
            hint="check that the server is up and OPENAI_BASE_URL points at it (backend_options.provider_timeout_s "
            "sets this limit)",
            retryable=True,
        )

    # --- the end ------------------------------------------------------------------------------------

    async def _stop_turn(self) -> None:
        """Interrupt the turn if it still runs, wait briefly for its end, clean up its background terminals; nothing
        for a stopped process (it answers nothing: the caller ends it)."""
        connection = self.connection
        if connection is None or connection.closed or self.thread_id is None or not self.turn_id or self.turn_ended:
            return
        pid = self.process.pid if self.process is not None else None
        if pid is not None and stopped(pid):  # SIGSTOPped: it cannot answer; the grace was 5 s of a ~9 s cancel
            return
        try:
            with anyio.move_on_after(INTERRUPT_GRACE_S):
                await self._interrupt()
                while not self.turn_ended:
                    message = await connection.receive(self.inbox)
                    if isinstance(message, LineProblem) or "method" not in message:
                        continue
                    if "id" in message:  # an approval still pending: refuse it
                        await connection.respond_error(message["id"], -32000, "the run was stopped")
                        continue
                    params = as_dict(message.get("params"))
                    turn = as_dict(params.get("turn"))
                    if (
                        message["method"] == "turn/completed"
                        and params.get("threadId") == self.thread_id
                        and turn.get("id") == self.turn_id
                    ):
                        self.turn_ended = True
            threads = [self.thread_id, *(self.translator.children_running() if self.translator else [])]
            with anyio.move_on_after(INTERRUPT_GRACE_S):
                for thread in threads:
                    request = await connection.start_request("thread/backgroundTerminals/clean", {"threadId": thread})
                    connection.forget(request)
        except ConnectionClosed:
            pass
