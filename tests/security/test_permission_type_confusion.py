"""Every permission and approval bridge, fed a request with one value of the wrong type (issue 24, "Malformed input").

`test_translator_type_confusion` fuzzes what the translators read; this fuzzes what the bridges read: the
requests a binary sends to be answered (claude-code's `control_request`s, `can_use_tool` and the
subtypes unified refuses; codex app-server's server requests, command, file-change, MCP approvals and
questions; gemini-cli's `session/request_permission`). Each real request of the cassettes (plus a few
of the shapes the cassettes hold none of) is replaced, path by path, by each JSON type as there, and
handed to the adapter's own handling (`_run._control_request` and `PermissionBridge.answer` for claude-code,
`ApprovalBridge.answer` for codex, `PermissionBridge.answer` for gemini-cli) after the messages that
preceded it in its stream, with a stand-in for the connection that records the answer, and a caller
who answers each way: allow once, allow always, deny, no answer (cancelled), stop, and nobody to ask (a
variant meets the four that differ most: `VARIANT_ANSWERERS`).

Each variant must either be answered, or raise a `UnifiedError`; the events it produced must be valid;
the answer sent must be well-formed for the protocol, exactly one, to the request's id; and it fails
closed: an "allow" answer always goes with a `permission_decision` that allows that call, and one the
user gave only when the caller allowed.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import pickle
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from tests.security.test_translator_type_confusion import (
    CASSETTES,
    _acp_feed,
    _check,
    _claude_feed,
    _codex_seed,
    _escaped,
    _received,
    _shape,
    _variants,
)
from unified._adapters.claude_code._permissions import PermissionBridge as ClaudeBridge
from unified._adapters.claude_code._run import ClaudeRun
from unified._adapters.claude_code._translate import StreamTranslator
from unified._adapters.codex._approvals import ApprovalBridge
from unified._adapters.codex._translate import AppServerTranslator
from unified._adapters.gemini_cli._permissions import PermissionBridge as GeminiBridge
from unified._adapters.gemini_cli._translate import AcpTranslator
from unified._binary.jsonrpc import RpcError, as_dict
from unified.errors import UnifiedError
from unified.events import PermissionDecision, UnifiedEvent, UserInputRequest, UserInputResponse
from unified.tools import Policy
from unified.types import ExecuteParams

Answerer = Callable[[UserInputRequest], UserInputResponse] | None
ANSWERERS: list[tuple[str, Answerer]] = [
    ("allow once", lambda r: UserInputResponse.allow()),
    ("allow always", lambda r: UserInputResponse.allow(always=True)),
    ("deny", lambda r: UserInputResponse.deny("no")),
    ("cancelled", lambda r: UserInputResponse(cancelled=True)),
    ("stop", lambda r: UserInputResponse.stop_run("stop")),
    ("nobody", None),
]
VARIANT_ANSWERERS = [a for a in ANSWERERS if a[0] in ("allow always", "deny", "cancelled", "stop")]
"""A variant meets these (the ways that differ most: an allow that adds a session rule, a denial with a message,
no answer, a stop); the seed as recorded meets every answer (also allow once, and nobody to ask)."""
USER_ALLOWS = ("allow once", "allow always")


@dataclass
class Context:
    """A `RunContext` stand-in: records the events, answers prompts as `answerer` does."""

    params: ExecuteParams
    answerer: Answerer
    session_id: str | None = "sess-1"
    turns: int = 0
    events: list[Any] = field(default_factory=list)

    async def emit(self, event: UnifiedEvent) -> None:
        self.events.append(event)

    async def ask_user(self, request: UserInputRequest) -> UserInputResponse:
        self.events.append(request)
        if self.answerer is None:
            return UserInputResponse(cancelled=True)
        return self.answerer(request)


@dataclass
class Wire:
    """A connection stand-in: records what unified sends the binary (answers, notifications, requests)."""

    sent: list[tuple[str, Any, Any]] = field(default_factory=list)
    cancelled: set[str] = field(default_factory=set)

    async def respond(self, request_id: Any, result: Any) -> None:
        self.sent.append(("respond", request_id, result))

    async def respond_error(self, request_id: Any, *error: Any) -> None:
        self.sent.append(("error", request_id, error))

    async def notify(self, method: str, params: Any) -> None:
        self.sent.append(("notify", method, params))

    async def request(self, method: str, params: Any, **_: Any) -> dict[str, Any]:
        self.sent.append(("request", method, params))
        raise RpcError(method, {"code": -32600, "message": "no turn to steer"})

    def answers(self) -> list[tuple[str, Any, Any]]:
        return [s for s in self.sent if s[0] in ("respond", "error")]


def _params(answerer: Answerer, cwd: Path) -> ExecuteParams:
    on_user_input = (lambda request: None) if answerer is not None else None
    return ExecuteParams(prompt="p", cwd=cwd, on_user_input=on_user_input)


def _decisions(events: list[Any]) -> list[PermissionDecision]:
    return [e for e in events if isinstance(e, PermissionDecision)]


def _fail_closed(who: str, allowed: bool, events: list[Any]) -> str | None:
    """None when an "allow" answer goes with a decision that allows, given by the user only when they allowed."""
    if not allowed:
        return None
    decisions = _decisions(events)
    if not decisions or decisions[-1].decision != "allow":
        return "answered allow without a permission_decision that allows"
    if decisions[-1].decided_by == "user" and who not in USER_ALLOWS:
        return f"answered allow for the user, who answered {who}"
    return None


# --- the fuzz ----------------------------------------------------------------------------------------


@dataclass
class Case:
    """One request to fuzz: `before` fed to the translator `start` makes (by `feed`), then `request` handled."""

    name: str
    before: list[Any]
    request: dict[str, Any]
    start: Callable[[], Any]
    feed: Callable[[Any, Any], Any]


Handle = Callable[[Any, dict[str, Any], Context, Wire], Awaitable[None]]
Verify = Callable[[dict[str, Any], Wire, Context, str], str | None]


async def _fuzz(cases: list[Case], handle: Handle, verify: Verify, cwd: Path) -> tuple[int, list[str]]:
    failures: list[str] = []
    fed = 0
    shapes: set[Any] = set()
    for case in cases:
        translator = case.start()
        for message in case.before:
            with contextlib.suppress(UnifiedError):  # a seed may hold an error on purpose (an error answer)
                case.feed(translator, message)
        shape = _shape(case.request)
        if shape in shapes:
            continue
        shapes.add(shape)
        snapshot = pickle.dumps(translator)
        for what, variant in [("as recorded", copy.deepcopy(case.request)), *_variants(case.request)]:
            for who, answerer in ANSWERERS if what == "as recorded" else VARIANT_ANSWERERS:
                fed += 1
                ctx = Context(_params(answerer, cwd), answerer)
                wire = Wire()
                problem: str | None
                try:
                    await handle(pickle.loads(snapshot), variant, ctx, wire)
                except UnifiedError as exc:
                    problem = verify(variant, wire, ctx, who) if wire.answers() else None
                    if problem is None and not wire.answers() and type(exc).__name__ == "RunStopped":
                        problem = "stopped the run without answering the request"
                except Exception as exc:
                    problem = _escaped(exc)
                else:
                    problem = verify(variant, wire, ctx, who)
                if problem is None:
                    try:
                        _check(ctx.events)
                    except Exception as exc:
                        problem = f"an invalid event: {_escaped(exc)}"
                if problem is not None:
                    failures.append(f"{case.name}: {what} (caller: {who}): {problem}")
    return fed, failures


def _assert_clean(backend: str, cases: list[Case], handle: Handle, verify: Verify, cwd: Path) -> None:
    assert cases, f"no requests found for {backend}"
    fed, failures = anyio.run(_fuzz, cases, handle, verify, cwd)
    assert fed > 500, f"only {fed} variants for {backend}: the seeds are gone?"
    shown = "\n".join(failures[:60])
    assert not failures, f"{len(failures)} of {fed} variants were mishandled by the {backend} bridge:\n{shown}"


def _requests(backend: str, is_request: Callable[[dict[str, Any]], bool]) -> list[tuple[str, list[Any], Any]]:
    """(cassette, the messages before, the request) of every request the cassettes of `backend` hold."""
    found = []
    for path in sorted((CASSETTES / backend).glob("*.jsonl")):
        _, messages = _received(path)
        for index, message in enumerate(messages):
            if is_request(message):
                found.append((f"{backend}/{path.name} message {index}", messages[:index], message))
    return found


# --- claude code: control requests ---------------------------------------------------------------------


CLAUDE_EXTRA: list[dict[str, Any]] = [
    {
        "type": "control_request",
        "request_id": "hook-1",
        "request": {"subtype": "hook_callback", "callback_id": "hook_0", "input": {"hook_event_name": "PreToolUse"}},
    },
    {
        "type": "control_request",
        "request_id": "mcp-1",
        "request": {"subtype": "mcp_message", "server_name": "srv", "message": {"jsonrpc": "2.0", "id": 1}},
    },
]


_READ_DEFAULT = Policy.default


@functools.cache
def _shipped_policy() -> Policy:
    """The shipped policy, read once (each bridge would parse it again)."""
    return _READ_DEFAULT()


def _default_policy() -> Policy:
    return _shipped_policy()


async def _claude_handle(translator: StreamTranslator, message: dict[str, Any], ctx: Context, wire: Wire) -> None:
    bridge = ClaudeBridge(cast(Any, ctx), cast(Any, wire), translator, _default_policy())
    run = SimpleNamespace(connection=wire, stopping=False, _emit=ctx.emit)
    await ClaudeRun._control_request(cast(Any, run), bridge, message)


def _claude_verify(message: dict[str, Any], wire: Wire, ctx: Context, who: str) -> str | None:
    request_id = message.get("request_id")
    answers = wire.answers()
    if isinstance(request_id, int | float):  # a number the CLI can match: refused under that id (round 10)
        ok = [(kind, answered) for kind, answered, _ in answers] == [("error", request_id)]
        return None if ok else f"expected one error answer under {request_id!r}, sent {wire.sent}"
    if not isinstance(request_id, str):
        return None if not answers else f"answered a request it cannot address: {answers}"
    if len(answers) != 1 or answers[0][1] != request_id:
        return f"expected one answer to {request_id!r}, sent {wire.sent}"
    kind, _, body = answers[0]
    if kind == "error":
        return None if isinstance(body[0], str) else f"an error answer that is not text: {body}"
    if not isinstance(body, dict) or body.get("behavior") not in ("allow", "deny"):
        return f"an answer the CLI cannot read: {body}"
    if body["behavior"] == "deny" and not isinstance(body.get("message"), str):
        return f"a denial without a message: {body}"
    if "updatedInput" in body and not isinstance(body["updatedInput"], dict):
        return f"an updatedInput that is not an object: {body}"
    request = message["request"]
    readable = (
        isinstance(request.get("tool_name"), str) and request["tool_name"] and isinstance(request.get("input"), dict)
    )
    if body["behavior"] == "allow" and not readable:
        return f"allowed a request that does not say what would run: {body}"
    return _fail_closed(who, body["behavior"] == "allow", ctx.events)


def test_claude_code_control_requests(tmp_path: Path) -> None:
    cases = [
        Case(name, before, request, StreamTranslator, _claude_feed)
        for name, before, request in _requests("claude-code", lambda m: m.get("type") == "control_request")
    ]
    cases += [
        Case(f"claude-code/{r['request']['subtype']}", [], r, StreamTranslator, _claude_feed) for r in CLAUDE_EXTRA
    ]
    _assert_clean("claude-code", cases, _claude_handle, _claude_verify, tmp_path)


# --- codex: app-server requests ----------------------------------------------------------------------------


CODEX_ANSWERS = {
    "item/commandExecution/requestApproval": ("decision", {"accept", "acceptForSession", "decline", "cancel"}),
    "item/fileChange/requestApproval": ("decision", {"accept", "acceptForSession", "decline", "cancel"}),
    "mcpServer/elicitation/request": ("action", {"accept", "decline", "cancel"}),
    "item/tool/requestUserInput": ("answers", None),
}
CODEX_EXTRA: list[dict[str, Any]] = [
    {
        "method": "mcpServer/elicitation/request",
        "id": 7,
        "params": {
            "threadId": "T",
            "turnId": "U",
            "serverName": "notes",
            "message": "Allow notes.search?",
            "_meta": {
                "codex_approval_kind": "mcp_tool_call",
                "tool_name": "search",
                "tool_params": {"q": "x"},
                "tool_annotations": {"readOnlyHint": False},
            },
            "requestedSchema": {"type": "object", "properties": {}},
        },
    },
    {
        "method": "mcpServer/elicitation/request",
        "id": 8,
        "params": {
            "threadId": "T",
            "serverName": "notes",
            "message": "Your name?",
            "requestedSchema": {"type": "object"},
        },
    },
    {
        "method": "item/tool/requestUserInput",
        "id": 9,
        "params": {
            "threadId": "T",
            "turnId": "U",
            "itemId": "call_q",
            "questions": [
                {
                    "id": "colour",
                    "header": "Colour",
                    "question": "Which?",
                    "options": [{"label": "red", "description": "warm"}],
                }
            ],
        },
    },
]


async def _codex_handle(translator: AppServerTranslator, message: dict[str, Any], ctx: Context, wire: Wire) -> None:
    if "method" in message and "id" in message:  # as `_run` routes it: answers are not the bridge's
        await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator).answer(message)


def _codex_readable(method: str, params: dict[str, Any]) -> bool:
    """Whether an approval request says what would run (an unreadable one must never be accepted)."""
    if method == "mcpServer/elicitation/request":
        # Codex names the server; the tool only in `_meta.tool_name` when at all (often in the prose alone).
        return isinstance(params.get("serverName"), str) and bool(params["serverName"])
    command = params.get("command", "")
    return isinstance(params.get("itemId"), str) and bool(params["itemId"]) and isinstance(command, str)


def _codex_verify(message: dict[str, Any], wire: Wire, ctx: Context, who: str) -> str | None:
    answers = wire.answers()
    if "method" not in message or "id" not in message:
        return None if not answers else f"answered what the run does not route to the bridge: {answers}"
    if len(answers) != 1 or answers[0][1] != message.get("id"):
        return f"expected one answer to id {message.get('id')!r}, sent {wire.sent}"
    kind, _, body = answers[0]
    method = message.get("method") if isinstance(message.get("method"), str) else None
    if kind == "error":
        return None if method not in CODEX_ANSWERS else f"an approval answered with an error: {body}"
    if method not in CODEX_ANSWERS:
        return f"answered {method!r}, which unified does not handle, with a result: {body}"
    key, allowed_values = CODEX_ANSWERS[str(method)]
    if not isinstance(body, dict) or key not in body:
        return f"an answer Codex cannot read: {body}"
    if allowed_values is not None and body[key] not in allowed_values:
        return f"an answer Codex cannot read: {body}"
    if key == "answers":
        return None if isinstance(body["answers"], dict) else f"answers that are not an object: {body}"
    approval = key == "decision" or (
        key == "action"
        and as_dict(as_dict(message.get("params")).get("_meta")).get("codex_approval_kind") == "mcp_tool_call"
    )
    if not approval:
        return None
    allowed = body[key] in ("accept", "acceptForSession")
    if allowed and not _codex_readable(str(method), as_dict(message.get("params"))):
        return f"accepted a request that does not say what would run: {body}"
    if allowed and key == "action":  # an MCP call Codex announced no item for has no decision to show
        return None if who in USER_ALLOWS or not _decisions(ctx.events) else _fail_closed(who, allowed, ctx.events)
    return _fail_closed(who, allowed, ctx.events)


def test_codex_server_requests(tmp_path: Path) -> None:
    cases = []
    for name, before, request in _requests("codex", lambda m: "method" in m and "id" in m):
        path = CASSETTES / "codex" / name.split("/")[1].split(" ")[0]
        header, messages = _received(path)
        seed = _codex_seed(name, header, messages)
        cases.append(Case(name, before, request, seed.start, seed.feed))
    header, messages = _received(CASSETTES / "codex" / "tools-permission.jsonl")
    seed = _codex_seed("codex/extra", header, messages)
    cases += [Case(f"codex/{r['method']}#{r['id']}", [], r, seed.start, seed.feed) for r in CODEX_EXTRA]
    _assert_clean("codex", cases, _codex_handle, _codex_verify, tmp_path)


# --- gemini-cli: session/request_permission -----------------------------------------------------------------


async def _gemini_handle(translator: AcpTranslator, message: dict[str, Any], ctx: Context, wire: Wire) -> None:
    delivered: list[Any] = []

    async def deliver(item: Any, raw: Any) -> None:
        delivered.append(item)
        ctx.events.append(item)

    async def flush() -> None:
        pass

    bridge = GeminiBridge(cast(Any, ctx), cast(Any, wire), translator, "sess-1", deliver, flush, ctx.params.cwd)
    try:
        # as `_run._pump` routes it
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if message.get("method") == "session/request_permission" and "id" in message:
            await bridge.answer(message["id"], cast(dict[str, Any], params), message)
    finally:
        await bridge.aclose()


def _gemini_verify(message: dict[str, Any], wire: Wire, ctx: Context, who: str) -> str | None:
    answers = wire.answers()
    if message.get("method") != "session/request_permission" or "id" not in message:
        return None if not answers else f"answered what the run does not route to the bridge: {answers}"
    if len(answers) != 1 or answers[0][1] != message.get("id") or answers[0][0] != "respond":
        return f"expected one answer to id {message.get('id')!r}, sent {wire.sent}"
    outcome = answers[0][2].get("outcome") if isinstance(answers[0][2], dict) else None
    if outcome == {"outcome": "cancelled"}:
        return None
    if (
        not isinstance(outcome, dict)
        or outcome.get("outcome") != "selected"
        or not isinstance(outcome.get("optionId"), str)
    ):
        return f"an answer ACP cannot read: {answers[0][2]}"
    params = as_dict(message.get("params"))
    offered = params.get("options")
    options = [o for o in offered if isinstance(o, dict)] if isinstance(offered, list) else []
    kinds = {o.get("kind") for o in options if o.get("optionId") == outcome["optionId"]}
    if not kinds:
        return f"selected an option the request does not offer: {outcome}"
    allowed = bool(kinds & {"allow_once", "allow_always"})
    call = as_dict(params.get("toolCall"))
    if allowed and not (isinstance(call.get("toolCallId"), str) and call["toolCallId"]):
        return f"allowed a request that does not say which call would run: {outcome}"
    return _fail_closed(who, allowed, ctx.events)


def test_gemini_cli_permission_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Policy, "default", _default_policy)  # each bridge's tool runtimes would parse it again
    cases = [
        Case(name, before, request, AcpTranslator, _acp_feed)
        for name, before, request in _requests("gemini-cli", lambda m: m.get("method") == "session/request_permission")
    ]
    _assert_clean("gemini-cli", cases, _gemini_handle, _gemini_verify, tmp_path)


# --- the fail-open cases the fuzz found, one each ---------------------------------------------------------


def _run_one(handle: Handle, translator: Any, message: dict[str, Any], who: str, cwd: Path) -> tuple[Context, Wire]:
    answerer = dict(ANSWERERS)[who]
    ctx, wire = Context(_params(answerer, cwd), answerer), Wire()
    anyio.run(handle, translator, message, ctx, wire)
    return ctx, wire


def test_claude_code_denies_a_read_whose_input_is_unreadable(tmp_path: Path) -> None:
    # A `Read` the shipped policy allows: without its input, the rule would allow any file unasked.
    request = {"subtype": "can_use_tool", "tool_name": "Read", "input": None, "tool_use_id": "toolu_1"}
    message = {"type": "control_request", "request_id": "r1", "request": request}
    ctx, wire = _run_one(_claude_handle, StreamTranslator(), message, "deny", tmp_path)
    assert wire.answers() == [("respond", "r1", {"behavior": "deny", "message": "the request has no input object"})]
    assert [e.code for e in ctx.events if getattr(e, "type", None) == "warning"] == ["malformed_line"]


def test_codex_declines_an_approval_that_names_no_item(tmp_path: Path) -> None:
    header, messages = _received(CASSETTES / "codex" / "tools-permission.jsonl")
    seed = _codex_seed("codex", header, messages)
    params = {"threadId": "T", "itemId": 7, "command": "rm -rf x", "commandActions": [{"type": "unknown"}]}
    message = {"method": "item/commandExecution/requestApproval", "id": 3, "params": params}
    ctx, wire = _run_one(_codex_handle, seed.start(), message, "allow once", tmp_path)
    assert wire.answers() == [("respond", 3, {"decision": "decline"})]
    assert not _decisions(ctx.events)
    assert [e.code for e in ctx.events if getattr(e, "type", None) == "warning"] == ["malformed_line"]


def test_gemini_cli_rejects_a_permission_request_that_names_no_call(tmp_path: Path) -> None:
    options = [{"optionId": "proceed_once", "kind": "allow_once"}, {"optionId": "cancel", "kind": "reject_once"}]
    message = {"id": 4, "method": "session/request_permission", "params": {"options": options, "toolCall": None}}
    ctx, wire = _run_one(_gemini_handle, AcpTranslator(), message, "allow once", tmp_path)
    assert wire.answers() == [("respond", 4, {"outcome": {"outcome": "selected", "optionId": "cancel"}})]
    assert [e.code for e in ctx.events if getattr(e, "type", None) == "warning"] == ["malformed_line"]
