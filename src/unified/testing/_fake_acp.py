"""FakeAcp: an in-process ACP agent speaking the JSON-RPC of `gemini --acp` 0.61, for Node-free tests.

Pass it as the gemini-cli backend's `start_process` option; every process the adapter starts is
then a `FakeAcpProcess` (a `FakeAgentProcess` whose handler is this agent) that answers
`initialize`, `session/new`, `session/load`, `session/set_model`, `session/set_mode`,
`session/prompt` and `session/cancel` like the binary (message shapes from the recorded
transcripts in `cassettes/gemini-cli/` and `bench/transcripts/acp/`), and writes the session's chat
file where the CLI does, so resuming and the tool outputs read from that file work as with the binary.

Each `session/prompt` plays the next script: `Update`s (`text`, `thought`, `tool_call`, ...),
`Record`s (a finished call's chat-file record, as the CLI writes it just after ACP's update),
`Permission` round trips, then `Finish`; or a fault: `Crash`, `RawLine`, `RawUpdate`, `ErrorAnswer`, `Hang`.
`script_from_transcript` turns a recorded transcript into such a script.

The fake is driven by what the adapter writes (no task of its own), so a test is deterministic.
It is a fake of the CLI, so it carries its own knowledge of the CLI's chat files (where they are,
how a resumed session's history is replayed), written here from the CLI's behaviour, not taken
from the adapter.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeAlias

from unified._exports import publish
from unified.testing._fake_process import FakeAgentProcess

__all__ = [
    "Crash",
    "ErrorAnswer",
    "FakeAcp",
    "FakeAcpProcess",
    "Finish",
    "Hang",
    "Permission",
    "RawLine",
    "RawUpdate",
    "Record",
    "Script",
    "Step",
    "Update",
    "cli_home",
    "script_from_transcript",
    "text",
    "thought",
    "tool_call",
    "tool_done",
]

PERMISSION_OPTIONS: tuple[dict[str, str], ...] = (
    {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
)
"""What 0.61 offers for a write (cassettes/gemini-cli/tools-permission.jsonl)."""
MODES = {"default", "autoEdit", "yolo", "plan"}


# --- script steps -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Update:
    """A `session/update` notification (`update` without `sessionId`: the fake adds it)."""

    update: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Record:
    """A finished tool call's record appended to the chat file (`toolCalls[]` entry: id, name, args,
    status, result), as the CLI writes it a few milliseconds after ACP's completed update."""

    call: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Permission:
    """A `session/request_permission` round trip; then `if_allowed` or `if_denied` plays."""

    tool_call: Mapping[str, Any]
    options: tuple[Mapping[str, str], ...] = PERMISSION_OPTIONS
    if_allowed: Script = ()
    if_denied: Script = ()


@dataclass(frozen=True, slots=True)
class Finish:
    """The prompt's answer: `stopReason` and, unless None, `_meta.quota.token_count`."""

    stop_reason: str = "end_turn"
    token_count: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """The prompt answered with a JSON-RPC error (the CLI's answer to a failed API call)."""

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class Crash:
    """The process dies: stdout ends, `stderr` is its last words, `exit_code` its status."""

    exit_code: int = 1
    stderr: str = ""


@dataclass(frozen=True, slots=True)
class RawLine:
    """Bytes written to stdout as they are (a malformed or oversized line; end it with a newline)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class RawUpdate:
    """A `session/update` of the session whose `update` is sent as it is, any JSON (malformed on purpose)."""

    update: Any


@dataclass(frozen=True, slots=True)
class Hang:
    """The prompt stops here until `session/cancel`, then answers `cancelled`; with `answers_cancel`
    False it never answers at all. As a fault of a setup method (`FakeAcp(faults=...)`): that request
    is never answered (a process stuck at its start)."""

    answers_cancel: bool = True


Step: TypeAlias = Update | Record | Permission | Finish | ErrorAnswer | Crash | RawLine | RawUpdate | Hang
Script: TypeAlias = Sequence["Step | Script"]
"""Steps, possibly nested (helpers such as `tool_done` return several)."""


def text(value: str) -> Update:
    return Update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": value}})


def thought(value: str) -> Update:
    return Update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": value}})


def tool_call(call_id: str, *, kind: str = "read", title: str = "", status: str = "in_progress") -> Update:
    """A `tool_call` as 0.61 announces it: no name (it is the id's prefix) and no arguments."""
    return Update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "status": status,
            "title": title,
            "content": [],
            "locations": [],
            "kind": kind,
        }
    )


def tool_done(
    call_id: str,
    output: Any = None,
    *,
    kind: str = "read",
    failed: bool = False,
    args: Mapping[str, Any] | None = None,
    content: Sequence[Mapping[str, Any]] = (),
    record: bool = True,
) -> list[Step]:
    """The call's completed (or failed) update, then, if `record`, its chat-file record with `output`."""
    steps: list[Step] = [
        Update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "failed" if failed else "completed",
                "content": list(content),
                "kind": kind,
            }
        )
    ]
    if record:
        name = call_id.split("__", 1)[0]
        response = {"error": output} if failed else {"output": output}
        steps.append(
            Record(
                {
                    "id": call_id,
                    "name": name,
                    "args": dict(args or {}),
                    "status": "error" if failed else "success",
                    "result": [{"functionResponse": {"id": call_id, "name": name, "response": response}}],
                }
            )
        )
    return steps


def _flatten(script: Script) -> Iterable[Step]:
    for item in script:
        if isinstance(item, Sequence):
            yield from _flatten(item)
        else:
            yield item


# --- from a recorded transcript -----------------------------------------------------------------


def script_from_transcript(path: Path) -> list[Step]:
    """The agent's side of a recorded prompt as a script.

    Reads a cassette (`{"dir", "msg"}` lines after a metadata line) or a bench transcript (the
    received messages only). The prompt is what the agent sent after the last answer before the
    one carrying `stopReason` (or an error); permission requests become `Permission` steps, and each
    completed main-session call is followed by the chat-file `Record` the CLI wrote for it, as the
    cassette's `{"dir": "chat"}` lines hold it (its real arguments and output). A transcript without
    chat lines gets no records: the adapter then says `tool_output_unavailable`, as with the CLI.
    """
    received: list[dict[str, Any]] = []
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line) if line.strip() else None
        if not isinstance(entry, dict):
            continue
        if "dir" in entry:
            if entry["dir"] == "recv" and isinstance(entry.get("msg"), dict):
                received.append(entry["msg"])
            elif entry["dir"] == "chat" and _main_chat_file(entry.get("file")):
                records.update((call["id"], call) for call in _finished_calls(entry.get("record")))
        elif "jsonrpc" in entry:
            received.append(entry)
    answers = [i for i, m in enumerate(received) if "method" not in m]
    final = next(
        (i for i in answers if "error" in received[i] or "stopReason" in (received[i].get("result") or {})), None
    )
    if final is None:
        raise ValueError(f"{path} holds no answered session/prompt")
    start = max((i for i in answers if i < final), default=-1) + 1
    steps: list[Step] = []
    for message in received[start:final]:
        params = message.get("params") or {}
        if message.get("method") == "session/request_permission":
            options = tuple(o for o in params.get("options") or () if isinstance(o, dict))
            steps.append(Permission(params.get("toolCall") or {}, options or PERMISSION_OPTIONS))
        elif message.get("method") == "session/update":
            update = params.get("update") or {}
            steps.append(Update(update))
            if update.get("sessionUpdate") == "tool_call_update" and update.get("status") in ("completed", "failed"):
                call = records.get(str(update.get("toolCallId")))
                if call is not None:
                    steps.append(Record(call))
    if "error" in received[final]:
        error = received[final]["error"]
        steps.append(ErrorAnswer(int(error.get("code", 0)), str(error.get("message", "")), error.get("data")))
        return steps
    result = received[final]["result"]
    counts = ((result.get("_meta") or {}).get("quota") or {}).get("token_count")
    steps.append(Finish(str(result["stopReason"]), counts if isinstance(counts, dict) else None))
    return steps


def _main_chat_file(file: object) -> bool:
    """`tmp/<project>/chats/<session file>.jsonl`: the session's own chat file, not a subagent's."""
    return isinstance(file, str) and len(Path(file).parts) == 4 and file.endswith(".jsonl")


_FINAL_STATUSES = frozenset({"success", "error", "cancelled"})


def _finished_calls(record: object) -> list[dict[str, Any]]:
    """The finished tool calls of a chat record (a `gemini` message, or the messages of a
    `$set.messages` checkpoint), as the CLI writes them: id, name, args, status, result."""
    if not isinstance(record, dict):
        return []
    updates = record.get("$set")
    messages = (
        updates["messages"] if isinstance(updates, dict) and isinstance(updates.get("messages"), list) else [record]
    )
    return [
        call
        for message in messages
        if isinstance(message, dict) and message.get("type") == "gemini"
        for call in message.get("toolCalls") or []
        if isinstance(call, dict) and isinstance(call.get("id"), str) and call.get("status") in _FINAL_STATUSES
    ]


# --- the agent ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Wait:
    """What a playing prompt waits for: the answer to request `request_id`, or (None) `session/cancel`."""

    request_id: int | None


@dataclass(slots=True)
class _Session:
    session_id: str
    chat_file: Path
    answer: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    model: str = "auto"


_Reply: TypeAlias = dict[str, Any] | None
"""What a waiting prompt is resumed with: the client's answer, or None for `session/cancel`."""
_Player: TypeAlias = Generator[_Wait, _Reply, None]
_Playing: TypeAlias = Generator[_Wait, _Reply, bool]
_Asking: TypeAlias = Generator[_Wait, _Reply, bool | None]
_pids = itertools.count(4_000_000)


class FakeAcp:
    """Starts `FakeAcpProcess`es (use it as `start_process`); scripts are played in order across them.

    `received` holds every message the adapter sent (to any of its processes), `permission_answers`
    the outcome of each permission request, `processes` every process started.
    """

    def __init__(
        self,
        *prompts: Script,
        load_session: bool = True,
        write_chat: bool = True,
        faults: Mapping[str, Crash | ErrorAnswer | Hang] | None = None,
    ) -> None:
        """`write_chat=False`: no chat file (as when the CLI cannot write one); `faults`: the answer to a
        setup method (`initialize`, `session/new`, `session/load`, ...) is that crash or error instead,
        or none at all (`Hang`)."""
        self.prompts: list[Script] = list(prompts)
        self.load_session = load_session
        self.write_chat = write_chat
        self.faults = dict(faults or {})
        self.received: list[dict[str, Any]] = []
        self.permission_answers: list[dict[str, Any]] = []
        self.processes: list[FakeAcpProcess] = []

    def __call__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAcpProcess:
        process = FakeAcpProcess(self, list(argv), dict(env))
        self.processes.append(process)
        return process

    def methods(self) -> list[str]:
        """The methods the adapter called, in order (answers left out)."""
        return [str(m["method"]) for m in self.received if "method" in m]

    def next_script(self) -> Script:
        if not self.prompts:
            raise AssertionError("FakeAcp: a session/prompt arrived, but no script is left")
        return self.prompts.pop(0)


class FakeAcpProcess(FakeAgentProcess):
    """One fake `gemini --acp` process: a `FakeAgentProcess` whose handler plays `FakeAcp`'s scripts."""

    def __init__(self, agent: FakeAcp, argv: list[str], env: dict[str, str]) -> None:
        super().__init__(self._handle_line, pid=next(_pids), argv=argv, env=env)
        self.agent = agent
        self._sessions: dict[str, _Session] = {}
        self._request_ids = itertools.count(0)
        self._playing: tuple[_Player, _Wait] | None = None
        self._cancelled = False

    def _handle_line(self, line: str) -> None:
        self._handle(json.loads(line))

    # --- the protocol -------------------------------------------------------------------------

    def _send(self, message: Mapping[str, Any]) -> None:
        self.emit(json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")))

    def exit(self, code: int = 0) -> None:
        super().exit(code)
        self._playing = None

    def _notify(self, session: _Session, update: Mapping[str, Any]) -> None:
        self._send({"method": "session/update", "params": {"sessionId": session.session_id, "update": dict(update)}})

    def _handle(self, message: dict[str, Any]) -> None:
        self.agent.received.append(message)
        method = message.get("method")
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if method is None:
            self._resume(message)
            return
        if method == "session/cancel":
            self._cancelled = True
            self._resume(None)
            return
        handler = {
            "initialize": self._initialize,
            "session/new": self._new,
            "session/load": self._load,
            "session/set_model": self._set_model,
            "session/set_mode": self._set_mode,
            "session/prompt": self._prompt,
        }.get(str(method))
        if "id" not in message:
            return
        fault = self.agent.faults.get(str(method))
        if isinstance(fault, Crash):
            self.write_stderr(fault.stderr)
            self.exit(fault.exit_code)
            return
        if isinstance(fault, ErrorAnswer):
            self._send({"id": message["id"], "error": {"code": fault.code, "message": fault.message}})
            return
        if isinstance(fault, Hang):
            return
        if handler is None:
            self._send({"id": message["id"], "error": {"code": -32601, "message": f'"Method not found": {method}'}})
            return
        handler(message["id"], params)

    def _initialize(self, request_id: Any, params: dict[str, Any]) -> None:
        result = {
            "protocolVersion": 1,
            "authMethods": [{"id": "gemini-api-key", "name": "Use Gemini API key", "description": None}],
            "agentInfo": {"name": "gemini-cli (unified FakeAcp)", "version": "0.61.0"},
            "agentCapabilities": {
                "loadSession": self.agent.load_session,
                "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
            },
        }
        self._send({"id": request_id, "result": result})

    def _new(self, request_id: Any, params: dict[str, Any]) -> None:
        session_id = str(uuid.uuid4())
        cwd = str(params.get("cwd") or "")
        chats = cli_home(self.env) / "tmp" / hashlib.sha256(cwd.encode()).hexdigest() / "chats"
        now = datetime.now(UTC)
        path = chats / f"session-{now:%Y-%m-%dT%H-%M}-{session_id[:8]}.jsonl"
        if self.agent.write_chat:
            chats.mkdir(parents=True, exist_ok=True)
            header = {"sessionId": session_id, "startTime": now.isoformat(), "lastUpdated": now.isoformat()}
            path.write_text(json.dumps({**header, "kind": "main"}) + "\n")
        session = self._sessions[session_id] = _Session(session_id, path)
        modes = [{"id": mode, "name": mode} for mode in sorted(MODES)]
        result = {
            "sessionId": session_id,
            "modes": {"availableModes": modes, "currentModeId": "default"},
            "models": {"availableModels": [{"modelId": "auto", "name": "Auto"}], "currentModelId": "auto"},
        }
        self._send({"id": request_id, "result": result})
        self._notify(session, {"sessionUpdate": "available_commands_update", "availableCommands": []})

    def _load(self, request_id: Any, params: dict[str, Any]) -> None:
        session_id = str(params.get("sessionId") or "")
        files = _session_files(cli_home(self.env), session_id) if self.agent.load_session else []
        if not files:
            error = {"code": -32603, "message": f"Invalid session identifier: {session_id}"}
            self._send({"id": request_id, "error": error})
            return
        session = self._sessions[session_id] = _Session(session_id, files[0])
        self._send({"id": request_id, "result": {}})
        # Like the CLI, the history replay trails the load's answer.
        for message in _messages(files[0]):
            if message.get("type") == "user":
                self._notify(session, {"sessionUpdate": "user_message_chunk", "content": _text_block(message)})
            elif message.get("type") == "gemini":
                for item in message.get("thoughts") or []:
                    self._notify(session, thought(str(item.get("description", ""))).update)
                if message.get("content"):
                    self._notify(session, text(str(message["content"])).update)
                for call in message.get("toolCalls") or []:
                    self._notify(session, tool_call(str(call.get("id")), status="completed").update)

    def _set_model(self, request_id: Any, params: dict[str, Any]) -> None:
        session = self._sessions.get(str(params.get("sessionId")))
        if session is not None and isinstance(params.get("modelId"), str):
            session.model = params["modelId"]  # recorded on its answers, as the CLI does
        self._send({"id": request_id, "result": {}})

    def _set_mode(self, request_id: Any, params: dict[str, Any]) -> None:
        mode = params.get("modeId")
        session = self._sessions.get(str(params.get("sessionId")))
        if mode not in MODES or session is None:
            self._send({"id": request_id, "error": {"code": -32602, "message": f"Invalid mode: {mode}"}})
            return
        self._notify(session, text(f"[MODE_UPDATE] {mode}").update)
        self._send({"id": request_id, "result": {}})

    def _prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        session = self._sessions.get(str(params.get("sessionId")))
        if session is None:
            self._send({"id": request_id, "error": {"code": -32602, "message": "Session not found"}})
            return
        prompt = " ".join(str(b.get("text", "")) for b in params.get("prompt") or [] if isinstance(b, dict))
        self._append(session, {"type": "user", "content": [{"text": prompt}]})
        session.answer, session.thoughts, self._cancelled = [], [], False
        player = self._play(session, request_id, self.agent.next_script())
        self._advance(player, None)

    # --- playing a script -----------------------------------------------------------------------

    def _advance(self, player: _Player, value: dict[str, Any] | None) -> None:
        try:
            wait = player.send(value)
        except StopIteration:
            self._playing = None
            return
        self._playing = (player, wait)

    def _resume(self, message: dict[str, Any] | None) -> None:
        """Continue the prompt waiting for this answer (or for a cancel, when `message` is None)."""
        if self._playing is None:
            return
        player, wait = self._playing
        if message is None or message.get("id") == wait.request_id:
            self._advance(player, message)

    def _play(self, session: _Session, request_id: Any, script: Script) -> _Player:
        answered = yield from self._steps(session, request_id, script)
        if not answered and self.returncode is None:
            self._finish(session, request_id, Finish("cancelled" if self._cancelled else "end_turn"))

    def _steps(self, session: _Session, request_id: Any, script: Script) -> _Playing:
        """Play `script`; True once the prompt is answered (or the process is gone)."""
        for step in _flatten(script):
            if self._cancelled:
                return False
            if isinstance(step, Update):
                self._note(session, step.update)
                self._notify(session, step.update)
            elif isinstance(step, Record):
                self._append(session, {"type": "gemini", "content": "", "toolCalls": [dict(step.call)]})
            elif isinstance(step, Permission):
                allowed = yield from self._ask(session, step)
                if allowed is None:
                    return False
                if (yield from self._steps(session, request_id, step.if_allowed if allowed else step.if_denied)):
                    return True
            elif isinstance(step, RawLine):
                self.emit(*(line for line in step.data.split(b"\n") if line.strip()))
            elif isinstance(step, RawUpdate):
                self._send(
                    {"method": "session/update", "params": {"sessionId": session.session_id, "update": step.update}}
                )
            elif isinstance(step, Crash):
                self.write_stderr(step.stderr)
                self.exit(step.exit_code)
                return True
            elif isinstance(step, ErrorAnswer):
                error = {"code": step.code, "message": step.message, "data": step.data}
                self._send({"id": request_id, "error": error})
                return True
            elif isinstance(step, Hang):
                while not self._cancelled or not step.answers_cancel:
                    yield _Wait(None)
                return False
            else:
                self._finish(session, request_id, step)
                return True
        return False

    def _ask(self, session: _Session, step: Permission) -> _Asking:
        """The round trip; True/False as the client allowed or rejected, None if the prompt was cancelled."""
        permission_id = next(self._request_ids)
        params = {
            "sessionId": session.session_id,
            "options": [dict(o) for o in step.options],
            "toolCall": dict(step.tool_call),
        }
        self._send({"id": permission_id, "method": "session/request_permission", "params": params})
        while True:
            reply = yield _Wait(permission_id)
            if reply is None and self._cancelled:
                return None
            if reply is not None:
                break
        outcome = (reply.get("result") or {}).get("outcome") or {}
        self.agent.permission_answers.append(dict(outcome))
        kinds = {o.get("optionId"): o.get("kind", "") for o in step.options}
        return outcome.get("outcome") == "selected" and str(kinds.get(outcome.get("optionId"), "")).startswith("allow")

    def _note(self, session: _Session, update: Mapping[str, Any]) -> None:
        """Keep the answer's text and thoughts for the chat file's record of it."""
        content = update.get("content")
        value = content.get("text") if isinstance(content, Mapping) else None
        if isinstance(value, str) and update.get("sessionUpdate") == "agent_message_chunk":
            session.answer.append(value)
        elif isinstance(value, str) and update.get("sessionUpdate") == "agent_thought_chunk":
            session.thoughts.append(value)

    def _finish(self, session: _Session, request_id: Any, step: Finish) -> None:
        if session.answer or session.thoughts:
            thoughts = [{"subject": "", "description": t} for t in session.thoughts]
            answer = {
                "type": "gemini",
                "content": "".join(session.answer),
                "thoughts": thoughts,
                "model": session.model,
            }
            self._append(session, answer)
        result: dict[str, Any] = {"stopReason": step.stop_reason}
        if step.token_count is not None:
            result["_meta"] = {"quota": {"token_count": dict(step.token_count)}}
        self._send({"id": request_id, "result": result})

    def _append(self, session: _Session, message: dict[str, Any]) -> None:
        if not self.agent.write_chat:
            return
        record = {"id": str(uuid.uuid4()), "timestamp": datetime.now(UTC).isoformat(), **message}
        with session.chat_file.open("a") as handle:
            handle.write(json.dumps(record) + "\n")


def _text_block(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    parts = content if isinstance(content, list) else [content]
    value = " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in parts if p)
    return {"type": "text", "text": value}


# --- the CLI's chat files, as the fake knows them -------------------------------------------------


def cli_home(env: Mapping[str, str]) -> Path:
    """Where the CLI keeps its state: `<GEMINI_CLI_HOME or HOME>/.gemini`."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home())) / ".gemini"


def _header(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            value = json.loads(handle.readline() or b"{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _session_files(home: Path, session_id: str) -> list[Path]:
    """The chat files (of any project) of `session_id`: named by its first 8 characters, headed by it."""
    pattern = f"*/chats/session-*-{session_id[:8]}.jsonl"
    return [path for path in sorted((home / "tmp").glob(pattern)) if _header(path).get("sessionId") == session_id]


def _messages(path: Path) -> list[dict[str, Any]]:
    """The messages the CLI would load from a chat file: the last record per id, after the last
    `$set.messages` checkpoint."""
    order: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        checkpoint = record.get("$set", {}).get("messages") if isinstance(record.get("$set"), dict) else None
        if isinstance(checkpoint, list):
            order = {str(m["id"]): m for m in checkpoint if isinstance(m, dict) and "id" in m}
        elif isinstance(record.get("id"), str) and "type" in record:
            order[record["id"]] = record
    return list(order.values())


publish("unified.testing", ["FakeAcp", "script_from_transcript"], globals())
