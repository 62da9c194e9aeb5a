"""`execute()`: one call, any backend, one stream of UnifiedEvents."""

from __future__ import annotations

import contextlib
import copy
import os
import re
import stat
from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import sniffio
from anyio.from_thread import start_blocking_portal
from pydantic import BaseModel

from unified import _limits as limits
from unified._exports import publish
from unified._files import unwritable
from unified._internal.stream import GuardedStream, StreamGuard, announce_unsupported_options
from unified._redaction import clip, redact_key_shapes, redactor
from unified._text import choose_one_of
from unified.backends import (
    Backend,
    RunContext,
    RunOutcome,
    UnsupportedOption,
    built_in_backends,
    known_backends,
    load_backend_factory,
)
from unified.conversations import CONTINUE_PROMPT, Conversation, TextPart, UserTurn, is_blank, provider_of_backend
from unified.errors import ConfigurationError, RoutingError, SessionNotFound, UnifiedError
from unified.events import Failover, JsonValue, UnifiedEvent, Usage, UserInputRequest, UserInputResponse
from unified.sessions import short_id_of
from unified.types import BackendOptions, ExecuteParams, Fallback, ImageInput, image_type

if TYPE_CHECKING:
    from unified._sessions.stores import FileSessionStore

__all__ = ["EventStream", "check_params", "execute", "execute_sync"]


class _Unavailable:
    """Stands in for a backend that could not be chosen or loaded, so the stream still explains why."""

    def __init__(self, name: str, failure: UnifiedError) -> None:
        self.name = name
        self._failure = failure

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        raise self._failure


class _SessionOwner:
    """`backend="auto"` with `resume`: the backend that owns the session runs it.

    Which backend owns a short id is known only by asking every backend's sessions (the API
    backends' through `params.session_store`, which may be a database), so it is found when the
    run starts; routing then only checks that this backend can run with the credentials present.
    """

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        self.name = "auto"
        self.fallback = params.fallback
        """What `_Failover` goes on on: without the owner itself once it is known (`_without_the_chosen`)."""
        self._owner: Backend | None = None
        self._dropped: list[UnsupportedOption] = []

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        if self._owner is None:
            return []  # the owner's are announced once it is known, in `run`
        return [*self._owner.unsupported_options(params), *self._dropped]

    async def run(self, ctx: RunContext) -> RunOutcome:
        from unified import sessions
        from unified._routing import select_backend_for

        store = self.params.session_store
        info = await sessions.resolve(str(self.params.resume), store=store)
        try:
            select_backend_for(self.params, only=info.backend)
        except RoutingError as exc:
            raise RoutingError(
                f"session {info.short_id} belongs to the {info.backend} backend, which cannot run here: {exc.message}",
                hint=exc.hint,
            ) from None
        backend = self._owner = load_backend_factory(info.backend)(self.params)
        self.name = backend.name
        why = f"session {info.short_id} belongs to {info.backend}, which auto resumes it on"
        kept, self._dropped = _without_the_chosen(self.params, info.backend, why)
        self.fallback = kept.fallback
        await announce_unsupported_options(self, self.params, ctx.emit)
        return await backend.run(ctx)


class _NamedResume:
    """`resume` on a named backend: when it has no such session but another backend has, the error names
    that backend (a short id from `unified sessions list` run with the wrong `--backend`), where it only
    listed this backend's sessions."""

    def __init__(self, params: ExecuteParams, backend: Backend) -> None:
        self.params = params
        self._backend = backend
        self.name = backend.name

    def unsupported_options(self, params: ExecuteParams) -> Sequence[UnsupportedOption]:
        return self._backend.unsupported_options(params)

    async def run(self, ctx: RunContext) -> RunOutcome:
        from unified import sessions

        try:
            return await self._backend.run(ctx)
        except SessionNotFound as missing:
            ref = str(self.params.resume)
            try:
                owner = await sessions.resolve(ref, store=self.params.session_store)
            except UnifiedError:  # nowhere else either (or ambiguous there): this backend's own error says it
                raise missing from None
            if owner.backend == self.name:
                raise
            shown = clip(ref, 80, more="…")
            raise SessionNotFound(
                f"no {self.name} session matches {shown!r}: {owner.short_id} belongs to the {owner.backend} backend",
                hint=f"resume it with the {owner.backend} backend (or auto), or continue it on {self.name} "
                f"as a new session from its history (`unified sessions export {owner.short_id}`, then --history)",
                details={"owner": owner.backend, "session_id": owner.session_id},
            ) from None


class _Continued:
    """The RunContext of a backend that took a run over: the guard's own, with that backend's parameters."""

    def __init__(self, ctx: RunContext, params: ExecuteParams) -> None:
        self._ctx = ctx
        self._params = params

    @property
    def params(self) -> ExecuteParams:
        return self._params

    @property
    def session_id(self) -> str | None:
        return self._ctx.session_id

    @property
    def turns(self) -> int:
        return self._ctx.turns

    @turns.setter
    def turns(self, value: int) -> None:
        self._ctx.turns = value

    async def emit(self, event: UnifiedEvent) -> None:
        await self._ctx.emit(event)

    def add_usage(self, usage: Usage) -> None:
        self._ctx.add_usage(usage)

    async def end_turn(self, usage: Usage) -> Usage:
        return await self._ctx.end_turn(usage)

    async def end_message(self, subagent_task_id: str | None = None) -> None:
        await self._ctx.end_message(subagent_task_id)

    async def ask_user(self, request: UserInputRequest) -> UserInputResponse:
        return await self._ctx.ask_user(request)

    def native(self, raw: JsonValue) -> JsonValue | None:
        return self._ctx.native(raw)


class _Failover:
    """A run that goes on on the next `fallback` backend when one gives out (docs/conversations.md).

    On an error of `failover_on` the conversation so far is exported from the failed backend's
    session (which stays resumable) and the next backend continues it as a new session: answering
    the turn that failed (`retry`) when the failed backend had recorded it, else sending the prompt.
    A tool call that ran is in the carried history with its result, so it never runs again; one the
    model asked for but that never ran is answered "not run". The next backend's events follow a
    `failover` event in the same stream; the last backend's error ends the run when none is left.
    """

    def __init__(self, params: ExecuteParams, first: Backend, dropped: Sequence[UnsupportedOption] = ()) -> None:
        self.params = params
        self._current = first
        self._dropped = dropped
        """The fallbacks left out (`_without_the_chosen`), said once with the first backend's options."""
        self.name = first.name

    def unsupported_options(self, params: ExecuteParams) -> Sequence[UnsupportedOption]:
        return [*self._current.unsupported_options(params), *self._dropped]

    async def run(self, ctx: RunContext) -> RunOutcome:
        from unified._routing import note_gave_out

        params, view, remaining = self.params, ctx, list(self.params.fallback)
        gave_out: list[tuple[str, UnifiedError, str | None]] = []
        while True:
            before = ctx.session_id
            try:
                try:
                    return await self._current.run(view)
                except OSError as exc:  # a full disk under this backend's files: typed, so the next one may go on
                    typed = unwritable(exc, self._current.name)
                    if typed is None:
                        raise
                    raise typed from exc
            except UnifiedError as failure:
                if isinstance(self._current, _SessionOwner):  # auto resuming: the owner, known now, is left out
                    remaining = list(self._current.fallback)
                if not remaining or failure.code not in self.params.failover_on:
                    _name_the_chain(failure, gave_out)
                    raise
                failed = self._current.name
                started = ctx.session_id if ctx.session_id != before else None
                note_gave_out(failed, failure)
                params, left = await self._next_params(params, remaining.pop(0), failed, started)
                gave_out.append((failed, failure, left))
                await ctx.emit(
                    Failover(
                        from_backend=failed,
                        to_backend=params.backend,
                        code=failure.code,
                        message=failure.message,
                        left_session=left,
                    )
                )
                self._current, _ = _make_backend(params, fallback=False)
                self.name = self._current.name
                view = _Continued(ctx, params)
                await announce_unsupported_options(self._current, params, ctx.emit)

    async def _next_params(
        self, params: ExecuteParams, target: str | Fallback, failed: str, session_id: str | None
    ) -> tuple[ExecuteParams, str | None]:
        """The parameters the next backend runs with, and the short id of the session left (None: the failed
        backend recorded none). That short id is the one the backend's own locator gives (its export's origin),
        which resumes it: not every backend's is the id's head (codex's is its random tail, a UUIDv7's head
        being its creation time, the same for every session of that millisecond)."""
        from unified import sessions

        chosen = target if isinstance(target, Fallback) else Fallback(backend=target)
        carried, retry, left = params.history, params.retry, None
        if session_id is not None:  # the failed backend recorded the run: carry its whole session
            carried = await sessions.locator(failed, params.session_store).export(session_id, str(params.cwd))
            retry = _recorded(carried, params)
            left = carried.origin.short_id if carried.origin and carried.origin.short_id else short_id_of(session_id)
        elif params.resume is not None:
            carried = await sessions.export(params.resume, store=params.session_store, cwd=str(params.cwd))
        if carried is not None:  # goes to another provider: no secret of the environment or of this run
            carried = _continuable(redactor().json(carried), failed, chosen.backend, left)
        same_provider = provider_of_backend(chosen.backend) == provider_of_backend(failed)
        prompt, images = ("", ()) if retry else (params.prompt, params.images)
        following = params.model_copy(
            update={
                "backend": chosen.backend,
                "model": chosen.model if isinstance(target, Fallback) else params.model if same_provider else None,
                "backend_options": chosen.backend_options,
                "resume": None,
                "history": carried,
                "retry": retry,
                "prompt": prompt,
                "images": images,
            }
        )
        return _as_run_on(following, chosen.backend), left


def _name_the_chain(failure: UnifiedError, gave_out: list[tuple[str, UnifiedError, str | None]]) -> None:
    """`failure` (the error that ends a run after a failover) made to name each backend that gave out before, and
    why, in its message and `details["gave_out"]`: the run's error named only the last one, so a chain where every
    backend failed read as if one had been tried (bad input round 21), the others' reasons left in the `failover`
    events a reader of `result.error` never sees. Each names the session it left (round 22: the one a run whose
    fallback failed before it began a session resumes, `result.short_id`)."""
    if not gave_out:
        return
    earlier = ", then ".join(
        f"{name} gave out ({error.code}: {clip(error.message, 300, more='…')})"
        + (f", its session {left} left as it was" if left is not None else "")
        for name, error, left in gave_out
    )
    failure.extend(
        f"this backend ran as the fallback after {earlier}",
        gave_out=[
            {"backend": name, "code": error.code, "message": error.message, "left_session": left}
            for name, error, left in gave_out
        ],
    )


def _as_run_on(params: ExecuteParams, backend: str) -> ExecuteParams:
    """`params` as `backend` runs them: a `retry` of a history that ends with tool results the model has not
    answered, on a backend that takes only a user's message last (its block of the capability matrix says
    `tool_results_last = "continue_prompt"`: an agent binary), sends that history, tool round and all, and then
    `CONTINUE_PROMPT` as the user's turn; the same for a caller's retry and for a failover between tool rounds.
    A backend that sends such a history as it is (an API backend) gets `params` unchanged: its model answers the
    results. A resumed session ending with tool results is continued the same way by the backend itself, which
    alone reads its session files."""
    from unified import capabilities

    history = params.history
    if not params.retry or history is None or not history.ends_with_tool_results():
        return params
    if capabilities.tool_results_last(backend) != "continue_prompt":
        return params
    return params.model_copy(update={"retry": False, "prompt": CONTINUE_PROMPT})


def _recorded(conversation: Conversation, params: ExecuteParams) -> bool:
    """Whether the run's own prompt is in the failed backend's session (so the next one answers it
    again instead of being sent it twice)."""
    if params.retry:
        return True
    for turn in reversed(conversation.turns):
        if isinstance(turn, UserTurn) and any(isinstance(p, TextPart) and p.text == params.prompt for p in turn.parts):
            return True
    return False


def _continuable(carried: Conversation, failed: str, target: str, left: str | None) -> Conversation:
    """The history a failover carries, checked and put in order as a caller's history is (`check_params`,
    `_with_history_answered`): a history the next backend cannot continue (a repeated call id, a result that
    answers no call, a lone surrogate in a tool's output, more than a run takes, ...) ends the run with a
    `ConfigurationError` naming the session left as it was, instead of a session file or a request the next
    provider refuses; a call the failed backend's model asked for that never ran gets an error result, so the
    history is valid for any model and the next backend never runs it on its own."""
    answered = carried
    problem = carried.problem(limits.MAX_CONVERSATION_BYTES, limits.MAX_JSON_DEPTH)
    if problem is None:
        answered = carried.with_results_after_calls(unanswered="not run: the backend gave out before it ran")
        problem = _grown(carried, answered)
    if problem is not None:
        where = f"session {left} of {failed}" if left is not None else "the session"
        raise ConfigurationError(
            f"the run cannot go on on {target} after {failed} gave out: the conversation so far cannot be "
            f"continued: {redact_key_shapes(problem)}; {where} is left as it was",
            hint=f"resume it on {failed} (unified run --resume ... on that backend) when it is back",
        )
    return answered


def _grown(before: Conversation, after: Conversation) -> str | None:
    """Why `after` (`before` with its calls answered) is more than a run takes, when `before` was not: the
    error results of a history of many unanswered calls can outweigh the calls themselves."""
    if after is before:
        return None
    size = len(after.model_dump_json(exclude_none=True))
    if size <= limits.MAX_CONVERSATION_BYTES:
        return None
    return (
        "with an error result for each call no result answers, the conversation is "
        f"{limits.conversation_too_large(size)}"
    )


def _with_history_answered(params: ExecuteParams) -> tuple[ExecuteParams, list[UnsupportedOption]]:
    """`params` with its history in the order every provider takes (`Conversation.with_results_after_calls`)
    and every call that no result answers given an error result: a history cut between a call and its result
    (or edited) is otherwise refused by every provider's API. Its text parts with no text are left out there (the
    APIs refuse them: bad input round 26, they were sent as they were), with a warning naming their turns; a history
    of nothing else is refused."""
    history = params.history
    if history is None:
        return params, []
    answered = history.with_results_after_calls(unanswered="not run: the conversation holds no result for this call")
    problem = _grown(history, answered)
    if problem is not None:
        raise ConfigurationError(
            f"the history cannot be continued: {problem}",
            hint="answer its calls or cut the conversation down, and run again",
        )
    blank = [number for number, turn in enumerate(history.turns) for part in turn.parts if is_blank(part)]
    if blank and not answered.turns:
        raise ConfigurationError(
            f"the history holds nothing but {len(blank)} empty text part(s): no provider takes one",
            hint="give a conversation with something said in it, or leave the history out to start afresh",
        )
    notes = []
    if blank:
        where = [*dict.fromkeys(blank)]
        turns = ", ".join(map(str, where[:_NAMED_TURNS])) + (", ..." if len(where) > _NAMED_TURNS else "")
        why = f"{len(blank)} empty text part(s) left out (turn {turns}): the providers refuse a text with nothing in it"
        notes.append(UnsupportedOption("history", why, False))
    return (params if answered is history else params.model_copy(update={"history": answered})), notes


_NAMED_TURNS = 10
"""Most turns a warning of left-out parts names."""


_NOT_A_MODEL = re.compile(r"[\s\x00-\x1f\x7f?&#]|\.\.")
"""What no model id holds and a URL path reads otherwise (google-genai refuses `..`, `?` and `&` itself, as an
"invalid model parameter"; the CLIs send what they are given)."""


def _check_directory(what: str, path: Path) -> None:
    path = path.expanduser()
    name = str(path)
    if _lone_surrogate_at(name) is not None:  # bytes that are not UTF-8 (`surrogateescape`)
        raise ConfigurationError(
            f"{what} {os.fsencode(name)!r} is not valid UTF-8: no backend can name it (requests and session files "
            "are UTF-8)",
            hint="rename the directory to a UTF-8 name, or run in another one",
        )
    try:
        mode = path.stat().st_mode  # one stat for both questions (this runs before every run)
    except (FileNotFoundError, NotADirectoryError):
        raise ConfigurationError(
            f"{what} {path} does not exist", hint=f"pass an existing directory as {what}"
        ) from None
    except OSError as exc:
        raise ConfigurationError(
            f"{what} {path} cannot be looked at: {exc.strerror}", hint="pass a directory this process may enter"
        ) from None
    if not stat.S_ISDIR(mode):
        raise ConfigurationError(f"{what} {path} is not a directory", hint=f"pass a directory as {what}, not a file")


def _lone_surrogate_at(text: str) -> int | None:
    """Where `text` holds a lone surrogate, which no UTF-8 carries (None: nowhere). A path's bytes that are not
    UTF-8 read as such (`surrogateescape`): a cwd named so failed with `internal_error` (UnicodeEncodeError) on the
    API backends while the session record was written, and the gemini CLI, given U+FFFD in its place, looked for
    another directory ("Directory does not exist", a `backend_error`). A prompt holding one failed deep inside an
    API client, or left a binary's run waiting for an answer to a line it dropped."""
    if text.isascii():
        return None
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _check_text(what: str, text: str) -> None:
    """A prompt or system instruction every provider can be sent: text (no lone surrogate), and no larger than a
    request (`MAX_CONVERSATION_BYTES`, as `unified run -` reads a prompt: the library took a 40 MB prompt, bad input
    round 26, sent to fail at the provider). Its UTF-8 is measured only when it may be over (4 bytes a character)."""
    at = _lone_surrogate_at(text)
    if at is not None:
        raise ConfigurationError(
            f"the {what} is not text: it holds a lone surrogate (U+{ord(text[at]):04X}) at character {at:,}",
            hint="decode the input with errors='replace' (or fix its encoding) and run again",
        )
    bound = limits.MAX_CONVERSATION_BYTES
    if len(text) > bound // 4 and (size := len(text.encode("utf-8"))) > bound:
        raise ConfigurationError(
            f"the {what} is {size:,} bytes ({size / 2**20:.1f} MiB), more than a run sends ({bound:,}, "
            f"{bound / 2**20:g} MiB: about the largest request the providers accept)",
            hint="put long material in a file of the workspace and name it in the prompt",
        )


def _check_model(what: str, model: str | None) -> None:
    """A model name no API takes (blank, or changing the request's URL) is refused where it is given."""
    if model is not None and (not model.strip() or _NOT_A_MODEL.search(model)):
        raise ConfigurationError(
            f"{what} {clip(model, 200)!r} is not a model name (it is blank, or holds whitespace, '..', '?', '&' or "
            "'#', which would change the request's URL)",
            hint="pass a model id such as gemini-2.5-flash or claude-sonnet-4-5, or no model (the backend's default)",
        )


def check_params(params: ExecuteParams) -> None:
    """Reject what no backend can run, the same way on every backend, before anything starts.

    Raises `ConfigurationError` for a `cwd` or an `include_directories` entry that is missing, not a
    directory or named in bytes that are not UTF-8, for a blank prompt (a prompt of images only is
    allowed), for a prompt or system instruction that is not text (a lone surrogate, which no API's UTF-8
    can carry), for a blank system instruction or excluded tool, for two MCP servers of one name, for a model
    name no API takes, for a blank `resume` (it would start a new session unasked), for an empty image or one
    whose bytes are another type than its `mime_type`, for a `fallback` that is the backend itself or is named
    twice, and for `retry` or `history` used the wrong way.
    """
    _check_directory("cwd", params.cwd)
    for directory in params.include_directories:
        _check_directory("include_directories entry", directory)
    _check_text("prompt", params.prompt)
    if params.system_instruction is not None:
        _check_text("system instruction", params.system_instruction)
        if not params.system_instruction.strip():  # sent as an empty text part, which the Gemini API refuses, and
            # on claude-code it replaced the CLI's whole system prompt with nothing (bad input round 26)
            raise ConfigurationError(
                "the system instruction is empty",
                hint="say how the agent should behave, or pass None (leave it out) for the backend's own",
            )
    _check_model("model", params.model)
    for target in params.fallback:  # checked only when the run failed over to it (bad input round 26)
        if isinstance(target, Fallback):
            _check_model(f"the {target.backend} fallback's model", target.model)
    if params.resume is not None and not params.resume.strip():
        raise ConfigurationError(
            "the session reference (resume) is empty",
            hint="pass a short id, a unique prefix or a full id (`unified sessions list` shows them), or no resume",
        )
    for number, image in enumerate(params.images, 1):
        _check_image(number, image)
    _check_images_size(params.images)
    if any(not name.strip() for name in params.excluded_tools):  # `"".split(",")` of an unset variable: nothing was
        # excluded, and nothing said so (bad input round 26)
        raise ConfigurationError(
            "an excluded_tools entry is blank: it names no tool, so nothing would be excluded by it",
            hint="name each tool to exclude (read_file, run_shell_command, ...), or leave excluded_tools out",
        )
    names = [server.name for server in params.mcp_servers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # one server's tools hid the other's (a dict keyed by name: Codex's config, Claude Code's --mcp-config)
        raise ConfigurationError(
            f"MCP server name {twice[0]!r} is given to {names.count(twice[0])} servers: a server's tools are offered "
            f"as mcp__<name>__<tool>, so one would hide the other's",
            hint="give each MCP server its own name",
        )
    if params.history is not None and params.resume is not None:
        raise ConfigurationError(
            "a run continues either a stored session (resume) or a conversation (history), not both",
            hint="export the session (unified.sessions.export) and pass it as history, or resume it",
        )
    if params.history is not None:
        problem = params.history.problem(limits.MAX_CONVERSATION_BYTES, limits.MAX_JSON_DEPTH)
        if problem is not None:
            raise ConfigurationError(
                f"the history cannot be continued: {redact_key_shapes(problem)}",
                hint="fix the conversation (unified sessions export REF prints a valid one) and run again",
            )
    _check_fallback_repeats(params)
    if params.retry:
        if params.resume is None and params.history is None:
            raise ConfigurationError("retry answers the last turn of a session again", hint="pass resume (or history)")
        if params.prompt.strip() or params.images:
            raise ConfigurationError("retry sends no new prompt", hint="leave the prompt empty when retrying")
        return
    if not params.prompt.strip() and not params.images:
        raise ConfigurationError("the prompt is empty", hint="say what the agent should do")


def _check_fallback_repeats(params: ExecuteParams) -> None:
    """A fallback that is the backend itself (a name, or a `Fallback` of its model and options), or one named twice,
    runs again what just gave out: a rate limit, a quota, refused credentials or an unavailable backend give out the
    same way on the same backend and model, and the backend's own retries have already retried it. It was taken
    (bad input round 22), and the run went on to fail twice, the second time after a `failover` that changed nothing.
    A `Fallback` of the same backend with another model is a fallback (the next model), and is kept. With `auto` the
    backend is known only once routing chose it: `_without_the_chosen` leaves such a fallback out then."""
    if params.fallback and not params.failover_on:  # no error moves the run on: the fallbacks never ran, unsaid
        raise ConfigurationError(
            "fallback names backends to go on on, but failover_on is empty: no error would move the run to them",
            hint="leave failover_on out for the usual errors (a rate limit, a spent quota, refused credentials, an "
            "unavailable backend), name the error codes, or leave fallback out",
        )
    seen: set[tuple[object, ...]] = set()
    for target in params.fallback:
        name = target.backend if isinstance(target, Fallback) else target
        if name != "auto" and _is_itself(target, params.backend, params):
            raise ConfigurationError(
                f"fallback names {name}, the backend itself: after it gave out the run would go on on the same "
                "backend and model, which gives out the same way",
                hint="name another backend to go on on (its own retries already retry this one); in the library, "
                "a Fallback(backend=..., model=...) goes on on another model",
            )
        key = (name, target.model, repr(target.backend_options)) if isinstance(target, Fallback) else (name, None)
        if key in seen:
            raise ConfigurationError(
                f"fallback names {name} twice: the second would run again what just gave out on the first",
                hint="name each backend to go on on once",
            )
        seen.add(key)


def _is_itself(target: str | Fallback, backend: str, params: ExecuteParams) -> bool:
    """Whether fallback `target` is `backend` running as `params` say: its name alone, or a `Fallback` of the same
    model and options."""
    if isinstance(target, Fallback):
        return (target.backend, target.model, target.backend_options) == (
            backend,
            params.model,
            params.backend_options,
        )
    return target == backend


def _without_the_chosen(
    params: ExecuteParams, chosen: str, because: str | None = None
) -> tuple[ExecuteParams, list[UnsupportedOption]]:
    """`params` of `backend="auto"` without the fallbacks that are `chosen`, the backend routing picked (or the one
    owning the session auto resumes, `_SessionOwner`: bad input round 25, it was kept), itself, and a warning saying
    `because`. Refusing them as `check_params` refuses a named backend's own would fail a run on a machine
    whose credentials make auto pick that backend and not on another (`--backend auto --fallback codex` where only an
    OpenAI key is set); running them would go on on what just gave out (bad input round 24: it did, a `failover` to
    the same backend after a rate limit). A user who names a fallback under auto means "if the one auto picks gives
    out, go on there": with nothing else to go on on, the run ends with the backend's own error."""
    kept = tuple(target for target in params.fallback if not _is_itself(target, chosen, params))
    if len(kept) == len(params.fallback):
        return params, []
    because = because or f"auto chose {chosen} to run first"
    why = f"{chosen} is left out: {because}, and going on on it after it gave out would give out the same way"
    return params.model_copy(update={"fallback": kept}), [UnsupportedOption("fallback", why, False)]


def _check_image(number: int, image: ImageInput) -> None:
    """An empty image, or one whose bytes are another type than it says, is refused by every model provider, and
    only after the run started (a 400 from the API, or an agent binary's own error)."""
    if not image.data:
        raise ConfigurationError(f"image {number} is empty (0 bytes)", hint="pass the image file's bytes")
    found = image_type(image.data)
    if found is not None and found != image.mime_type:
        raise ConfigurationError(
            f"image {number} says it is {image.mime_type} but its bytes are {found}",
            hint="give the type of its bytes, or build it with ImageInput.from_path, which reads it from them",
        )


def _check_images_size(images: Sequence[ImageInput]) -> None:
    """The prompt's images fit in one request: each is sent as base64 (4 bytes for 3) in the request, which the
    providers refuse over `MAX_CONVERSATION_BYTES` (bad input round 26: 40 MB of images were sent, to fail at the
    provider after the session was begun)."""
    sent = sum(4 * -(-len(image.data) // 3) for image in images)
    bound = limits.MAX_CONVERSATION_BYTES
    if sent > bound:
        raw = sum(len(image.data) for image in images)
        raise ConfigurationError(
            f"the prompt's {len(images)} image(s) are {raw:,} bytes, {sent:,} as base64 in the request "
            f"({sent / 2**20:.1f} MiB), more than a run sends ({bound:,}, {bound / 2**20:g} MiB: about the largest "
            "request the providers accept)",
            hint="send fewer or smaller images (scale them down, or save them as JPEG or WebP)",
        )


def _check_fallback(params: ExecuteParams) -> None:
    """A `fallback` naming no backend would only be found out when the run needs it, after its backend gave out."""
    if not params.fallback:
        return
    known = known_backends()  # the registry and the entry points: looked at once
    names = [target.backend if isinstance(target, Fallback) else target for target in params.fallback]
    unknown = [name for name in names if name != "auto" and name not in known]
    if unknown:
        raise ConfigurationError(
            f"fallback names an unknown backend {unknown[0]!r}", hint=choose_one_of(unknown[0], sorted(known))
        )


def _make_backend(params: ExecuteParams, *, fallback: bool = True) -> tuple[Backend, ExecuteParams]:
    """The backend `params` name (routing `auto`), wrapped for failover when `params.fallback` names any, and the
    parameters it runs with (`_as_run_on`; the failover keeps the caller's own, to carry to the next backend)."""
    name: str = params.backend
    chosen: Backend
    run = params
    wrapped = fallback and bool(params.fallback)  # the caller's, before auto leaves any out
    dropped: list[UnsupportedOption] = []
    try:
        _check_fallback(params)
        if name == "auto" and params.resume:
            chosen = _SessionOwner(params)
        else:
            if name == "auto":
                from unified._routing import select_backend_for

                name = select_backend_for(params).backend
                params, dropped = _without_the_chosen(params, name)
            run = _as_run_on(params, name)
            chosen = load_backend_factory(name)(run)
            if params.resume:
                chosen = _NamedResume(run, chosen)
    except UnifiedError as exc:
        chosen, run = _Unavailable(name, exc), params
    except OSError as exc:  # a backend's files made as it is set up (a settings file in unified's cache folder)
        typed = unwritable(exc, name)
        if typed is None:
            raise
        chosen, run = _Unavailable(name, typed), params
    return (_Failover(params, chosen, dropped) if wrapped else chosen), run


def _protect_store(params: ExecuteParams) -> None:
    """Records the root of the run's file session store, the caller's (`session_store`) or the one
    `UNIFIED_SESSION_STORE_URL` names, so that its sessions are credential files to every backend's reads
    (`_protected.credential_home`), as the default store's are by the data file alone: each holds a session's history,
    and a workspace holding the root let a backend read another session unasked (round 28). A URL that names no store
    is not refused here but where the run opens its store, as before, and a PostgreSQL one is not opened here (its
    driver's import). Imported here: `from unified import execute` loads neither the stores nor the tool runtime
    (~0.1 s) until a run starts; and the tool runtime's `credential_home` only for a run that names a store (its
    import statement was 0.7 us of every run's start, a twentieth of `EventStream`'s set-up, round 36)."""
    from unified._sessions.config import STORE_URL_ENV, store_from_url

    store = params.session_store
    url = os.environ.get(STORE_URL_ENV, "").strip()
    if store is None and url[:5].lower() == "file:":
        with contextlib.suppress(ConfigurationError):
            store = store_from_url(url)
    if store is None:  # most runs: the default store, protected by the data file alone
        return
    from unified.tools._protected import credential_home

    for found in _file_stores(store):
        credential_home("session-store", found.root)


_STORE_SEARCH_DEPTH = 4
_STORE_SEARCH_OBJECTS = 256
"""How far `_file_stores` looks into a caller's store: a wrapper's wrapper's list of stores is 4 deep; the objects it
visits are bounded, so a store holding a large cache is searched no further than its first 256 objects."""


def _file_stores(store: object) -> list[FileSessionStore]:
    """The file session stores a caller's store is or holds: itself, or one an object of its own wraps (a cache,
    a lock, a metrics layer around `FileSessionStore`, or a list or mapping of them), found in its instance attributes
    (`__dict__`, `__slots__`) a few levels down (round 29: a wrapped store was no store `_protect_store` saw, and a
    backend's reads of its sessions ran unasked). Bounded (`_STORE_SEARCH_*`), each object looked at once; a property
    is never called (a stranger's code), and what cannot be read is passed by."""
    from unified._sessions.stores import FileSessionStore

    found: list[FileSessionStore] = []
    seen: set[int] = set()
    level: list[object] = [store]
    for _ in range(_STORE_SEARCH_DEPTH + 1):
        following: list[object] = []
        for item in level:
            if item is None or isinstance(item, (str, bytes, int, float, bool, type)) or id(item) in seen:
                continue
            if len(seen) >= _STORE_SEARCH_OBJECTS:
                return found
            seen.add(id(item))
            if isinstance(item, FileSessionStore):
                found.append(item)
                continue
            following += _held(item)
        level = following
    return found


def _held(item: object) -> list[object]:
    """What `item` holds as data: a container's items, an object's instance attributes (never a property: no call)."""
    if isinstance(item, Mapping):
        return [*item.values()] if len(item) <= _STORE_SEARCH_OBJECTS else []
    if isinstance(item, (list, tuple, set, frozenset)):
        return [*item] if len(item) <= _STORE_SEARCH_OBJECTS else []
    held: list[object] = []
    with contextlib.suppress(Exception):
        held += object.__getattribute__(item, "__dict__").values()
    for klass in type(item).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots if isinstance(slots, (tuple, list)) else ():
            with contextlib.suppress(Exception):
                held.append(object.__getattribute__(item, name))
    return held


ModelT = TypeVar("ModelT", bound=BaseModel)

_SNAPSHOT_FIELDS = ("mcp_servers", "history")
"""The fields of `ExecuteParams`, besides `backend_options` and `fallback` (`_options_unshared`), that hold mutable
containers: an MCP server's environment and headers (dicts), a conversation's turns and parts (lists) and a call's
arguments. The others are strings, numbers, paths and tuples of frozen models, or objects of the caller's own that the
run uses as they are (`session_store`, `on_user_input`)."""

_SINK_OPTIONS = frozenset({"transcript", "acp_transcript"})
"""The `backend_options` of a built-in backend that a run writes to: the caller's own lists
(`unified._binary.options.TranscriptOption`, which the options' parse keeps by identity too), never copied. A
third-party backend's options of these names are its own data, copied as the rest (bad input round 26: they were
shared, so a caller changing them after `execute()` changed that backend's run)."""


def _snapshot(params: ExecuteParams) -> ExecuteParams:
    """`params` as they are now, held by the run alone: `ExecuteParams` is not frozen and holds dicts and lists, so a
    caller changing its params (`params.cwd = ...`, `params.backend_options["env"][...] = ...`, a history's turns)
    between `execute()` and the first event ran what `check_params` never saw (bad input round 24: a cwd that does
    not exist, an empty prompt, a fallback that is the backend itself, all taken). Its containers are copied, not the
    objects they hold (a credentials object, a client, a callback stay the caller's), and a model's fields set stay as
    they were (`model_dump(exclude_unset=True)` reads them). Measured: ~3.5 us for the usual params, most of it the
    one shallow copy of the model; ~20 us with options, an MCP server and a fallback of their own; a 300-turn history
    adds ~1 ms, a fifth of `check_params`' own walk of it."""
    kept = params.model_copy()
    fields = kept.__dict__
    for name in _SNAPSHOT_FIELDS:
        fields[name] = _unshared(fields[name], limits.MAX_JSON_DEPTH)
    fields["backend_options"] = _options_unshared(params.backend_options, params.backend)
    if params.fallback:
        fields["fallback"] = tuple(
            _with_fields(target, {"backend_options": _options_unshared(target.backend_options, target.backend)})
            if isinstance(target, Fallback)
            else target
            for target in params.fallback
        )
    return kept


def _options_unshared(options: dict[str, object] | BackendOptions, backend: str) -> dict[str, object] | BackendOptions:
    """`backend_options` of `backend` with their containers copied (`_unshared`) but a built-in backend's sinks
    (`_SINK_OPTIONS`; `auto` picks a built-in one)."""
    sinks = _SINK_OPTIONS if backend == "auto" or backend in built_in_backends() else frozenset()
    given = options if isinstance(options, dict) else options.__dict__
    copied = {key: value if key in sinks else _unshared(value, limits.MAX_JSON_DEPTH) for key, value in given.items()}
    return copied if isinstance(options, dict) else _with_fields(options, copied)


def _unshared(value: object, depth: int) -> object:
    """`value` with its dicts, lists and sets copied and its pydantic models' fields copied alike, `depth` levels down
    (deeper, a cycle's or a hostile value's, is left shared: the checks refuse what nests deeper than
    `MAX_JSON_DEPTH`). Anything else is kept: strings, bytes and numbers are immutable, and other objects are the
    caller's to share."""
    if depth <= 0:
        return value
    if isinstance(value, (dict, list, tuple, set)):
        plain: _Plain
        if isinstance(value, dict):
            plain = {key: _unshared(item, depth - 1) for key, item in value.items()}
        elif isinstance(value, set):
            plain = set(value)
        else:
            items = [_unshared(item, depth - 1) for item in value]
            plain = items if isinstance(value, list) else tuple(items)
        return plain if type(value) in (dict, list, tuple, set) else _of_its_kind(value, plain)
    if isinstance(value, BaseModel):
        return _with_fields(value, {name: _unshared(item, depth - 1) for name, item in value.__dict__.items()})
    return value


_Plain = dict[Any, object] | list[object] | tuple[object, ...] | set[object]
"""A container's copy of the base class (`_unshared`)."""


def _of_its_kind(value: object, plain: _Plain) -> object:
    """`value`, a container of a subclass (a `defaultdict`, an `OrderedDict`, a `NamedTuple`, a list or set of a class
    of the caller's), as a copy of its own class holding what `plain` (its copied items, in a container of the base
    class) holds: the base class alone lost it (bad input round 26: a third-party backend's `defaultdict` option
    became a dict, its run's first missing key a KeyError; a `NamedTuple` a tuple without its fields). One whose class
    cannot be copied so is `plain`, as before: its data is still the run's own."""
    try:
        if isinstance(value, tuple):  # immutable: made anew from its items
            make = getattr(type(value), "_make", None)
            return make(plain) if callable(make) else type(value)(plain)
        kept = copy.copy(value)
        if isinstance(kept, dict) and isinstance(plain, dict):
            kept.clear()
            kept.update(plain)
        elif isinstance(kept, list):
            kept[:] = plain
        return kept
    except Exception:  # a class whose copy or constructor wants more than its items
        return plain


def _with_fields(model: ModelT, fields: dict[str, object]) -> ModelT:
    """`model` (frozen or not) with `fields` in place of its own, the fields it was given unchanged:
    `model_copy(update=...)` would mark each as given."""
    copied = model.model_copy()
    copied.__dict__.update(fields)
    return copied


class EventStream(AsyncIterator[UnifiedEvent]):
    """The events of one run. Iterate it; `cancel()` ends the run early with `result(cancelled)`.

    Raises `ConfigurationError` at once for parameters no backend can run (see `check_params`).

    Prefer `async with execute(params) as events:` so the run is cleaned up even when you stop
    reading early; bare `async for` works too when you read to the end from one task. A bare
    `async for` left early goes on running until `aclose()`, or until the stream is dropped (its
    finalizer stops the run, whose processes are then ended) or the event loop ends. A second task
    reading it while one waits for an event gets a `UnifiedError` saying so.
    """

    def __init__(self, params: ExecuteParams, *, backend: Backend | None = None, strict: bool = False) -> None:
        params = _snapshot(params)
        check_params(params)
        _protect_store(params)
        params, notes = _with_history_answered(params)
        chosen: Backend
        if backend is None:
            chosen, params = _make_backend(params)
        else:
            chosen = backend
        self.params = params
        self._stream = GuardedStream(lambda channel: StreamGuard(params, chosen, channel, strict=strict, notes=notes))
        self._channel = self._stream.channel
        """The stream's channel, held here too: `__anext__` takes a queued event from it (one lookup less an event)."""

    @property
    def backend(self) -> str:
        return self._stream.guard.backend.name

    def cancel(self, *, interrupted: bool = False) -> None:
        """End the run: the backend is stopped, its processes ended, and `result` still arrives."""
        self._stream.guard.stop("interrupted" if interrupted else "cancelled")

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> UnifiedEvent:
        # A queued event is taken here, in the one coroutine of this step; the stream's own `next` waits.
        event = self._channel.get_nowait()
        return event if event is not None else await self._stream.next()

    async def aclose(self) -> None:
        await self._stream.close()

    async def __aenter__(self) -> EventStream:
        await self._stream.start(managed=True)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def execute(params: ExecuteParams | None = None, /, **fields: Any) -> EventStream:
    """Run one task on a backend and stream its events.

    Pass an `ExecuteParams` or its fields: `execute(prompt="hi", backend="gemini-cli")`; or both, the fields
    replacing the params' own (validated alike: a wrong value is pydantic's `ValidationError`, as it would be
    from `ExecuteParams(...)`).
    Nothing heavy is imported until the chosen backend runs.
    """
    return EventStream(_params_of(params, fields))


def _params_of(params: ExecuteParams | None, fields: dict[str, Any]) -> ExecuteParams:
    """The run's parameters: `params` with `fields` over it, validated as `ExecuteParams(**fields)` is.

    `model_copy(update=...)` validated nothing: `max_turns=0` and an unknown field ran, `cwd="dir"` failed
    as an AttributeError. The fields `params` was given stay given (`model_fields_set`), the rest defaults.
    """
    if params is None:
        return ExecuteParams(**fields)
    if not fields:
        return params
    given = {name: getattr(params, name) for name in params.model_fields_set}
    return type(params).model_validate({**given, **fields})


def _refuse_a_running_loop() -> None:
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return
    raise ConfigurationError(
        f"execute_sync() was called from inside a running {library} event loop, which it would block until "
        "the run ends",
        hint="in async code use `async with execute(params) as events: async for event in events: ...`",
    )


def execute_sync(params: ExecuteParams | None = None, /, **fields: Any) -> Generator[UnifiedEvent, None, None]:
    """`execute()` for synchronous code: events arrive as they happen, from an event loop in a worker thread.

    Closing the iterator early cancels the run (its processes are ended before `close()` returns).
    Raises `ConfigurationError` when called on the thread of a running event loop, which it would block
    until the run ends (a run that needs that loop, e.g. a server or callback of it, would never end).
    """
    _refuse_a_running_loop()
    # Made here, in the caller's thread and before the worker's loop starts: its `check_params` raises here, at
    # the call (once: it reads the whole history), not at the first `next()` as a generator's body would.
    return _events_of(EventStream(_params_of(params, fields)))


def _events_of(made: EventStream) -> Generator[UnifiedEvent, None, None]:
    """`made`'s events, from an event loop in a worker thread; closing early cancels the run."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(made) as stream:
        finished = False
        try:
            while True:
                try:
                    event = portal.call(stream.__anext__)
                except StopAsyncIteration:
                    finished = True
                    return
                yield event
        finally:
            if not finished:
                portal.call(stream.cancel)


publish("unified", ["EventStream", "execute", "execute_sync"], globals())
