"""codex cassettes: a run's app-server JSON-RPC recorded, and played back through the real adapter in process.

A codex cassette is a JSONL file: a metadata line (`{"cassette", "backend": "codex", "recorded_from",
"approval_mode", "prompt", "model", "paths_are_from"}`), then every JSON-RPC message of the run both
ways, `{"dir": "send"|"recv", "msg": ...}` (the backend's `transcript` option), scrubbed of secrets.

The replay starts, instead of `codex app-server`, a stand-in (`CodexTranscriptAgent`, a
`FakeAgentProcess` given as the backend's `start_process`) that answers each message the adapter
sends with the recorded messages that followed it: the adapter's JSON-RPC connection, thread
opening, translator and approval bridge all run, with no binary, no model and no network. The
stand-in checks that the adapter sends what was recorded (same method, or an answer where an
answer was recorded) and ends the process with the reason otherwise; recorded answers to approval
requests become the replay's `on_user_input` answers. Nothing runs in the workspace.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from unified.events import UserInputRequest, UserInputResponse
from unified.testing._fake_process import FakeAgentProcess
from unified.testing._transcript_agent import TranscriptAgent
from unified.types import ExecuteParams

__all__ = ["CodexTranscriptAgent", "codex_answers", "codex_meta", "codex_prompt", "codex_recorded_answers", "codex_run"]

_APPROVALS = frozenset(
    {"item/commandExecution/requestApproval", "item/fileChange/requestApproval", "mcpServer/elicitation/request"}
)


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def codex_prompt(entries: Sequence[Mapping[str, Any]]) -> tuple[str, str | None]:
    """The recorded prompt (the first turn/start's text) and model (thread/start's)."""
    prompt, model = "", None
    for entry in entries:
        msg = entry.get("msg") or {}
        if entry.get("dir") != "send":
            continue
        params = _object(msg.get("params"))
        if msg.get("method") in ("thread/start", "thread/resume") and model is None:
            model = params.get("model") if isinstance(params.get("model"), str) else None
        if msg.get("method") == "turn/start":
            prompt = "".join(
                str(item.get("text", ""))
                for item in params.get("input") or []
                if isinstance(item, dict) and item.get("type") == "text"
            )
            break
    return prompt, model


def codex_meta(source: str, params: ExecuteParams, name: str) -> dict[str, Any]:
    return {
        "cassette": name,
        "backend": "codex",
        "recorded_from": source,
        "approval_mode": params.approval_mode,
        "paths_are_from": str(params.cwd),
    }


def codex_answers(entries: Sequence[Mapping[str, Any]]) -> dict[str, UserInputResponse]:
    """The recorded answers to approval requests, by the call they were about (a command's or patch's item
    id; an MCP call's `server/tool`), as `on_user_input` answers. A call the recorded run's policy decided
    (a read-only command) is decided the same way on replay, so its answer is never asked for."""
    asked: dict[Any, str] = {}
    answers: dict[str, UserInputResponse] = {}
    for entry in entries:
        msg = entry.get("msg") or {}
        if entry.get("dir") == "recv" and msg.get("method") in _APPROVALS and "id" in msg:
            params = _object(msg.get("params"))
            meta = _object(params.get("_meta"))
            asked[msg["id"]] = str(params.get("itemId") or f"{params.get('serverName')}/{meta.get('tool_name')}")
        elif entry.get("dir") == "send" and "method" not in msg and msg.get("id") in asked:
            result = _object(msg.get("result"))
            decision = result.get("decision") or result.get("action")
            call = asked.pop(msg["id"])
            if decision == "accept":
                answers[call] = UserInputResponse.allow()
            elif decision == "acceptForSession":
                answers[call] = UserInputResponse.allow(always=True)
            elif decision == "cancel":
                answers[call] = UserInputResponse.stop_run()
            else:
                answers[call] = UserInputResponse.deny()
    return answers


def _answering(answers: dict[str, UserInputResponse]) -> Callable[[UserInputRequest], Awaitable[UserInputResponse]]:
    async def answer(request: UserInputRequest) -> UserInputResponse:
        call = request.tool_use_id or ""
        if call not in answers and request.tool_name and request.tool_name.startswith("mcp__"):
            call = "/".join(request.tool_name.removeprefix("mcp__").split("__", 1))
        return answers.get(call) or UserInputResponse(cancelled=True)

    return answer


class CodexTranscriptAgent(TranscriptAgent):
    """The stand-in `codex app-server` (see the module docstring)."""

    def __init__(self, entries: list[dict[str, Any]], process: FakeAgentProcess, differences: list[str]) -> None:
        super().__init__(entries, process, differences)
        self.ids: dict[Any, Any] = {}
        self.asked: dict[Any, str] = {}
        """Codex's approval requests played so far: request id -> what it asked about (a command, a patch)."""
        self._play_until_next_send()

    def _play_until_next_send(self) -> None:
        while self.position < len(self.entries) and self.entries[self.position]["dir"] != "send":
            reply = dict(self.entries[self.position]["msg"])
            self.position += 1
            if "method" not in reply and reply.get("id") in self.ids:
                reply["id"] = self.ids[reply["id"]]
            elif str(reply.get("method", "")).endswith("requestApproval") and "id" in reply:
                params = _object(reply.get("params"))
                self.asked[reply["id"]] = str(params.get("command") or params.get("itemId") or reply["method"])
            self.process.emit(json.dumps(reply, separators=(",", ":")))

    def answer(self, line: str) -> None:
        message = json.loads(line)
        method = message.get("method")
        if method == "account/login/start" and "id" in message:  # never recorded: the run's key stays out
            self.process.emit(json.dumps({"id": message["id"], "result": {"type": "apiKey"}}))
            return
        if self.position >= len(self.entries):
            if "id" in message and method is not None and method != "thread/backgroundTerminals/clean":
                self._fail(f"the transcript has nothing more to answer {method}")
            return
        recorded = self.entries[self.position]["msg"]
        if recorded.get("method") != method:
            self._fail(
                f"the adapter sent {method or 'an answer'}, the recording {recorded.get('method') or 'an answer'}"
            )
            return
        live, then = _object(message.get("result")).get("decision"), _object(recorded.get("result")).get("decision")
        if method is None and message.get("id") in self.asked and live != then:
            self._fail(
                f"the answer to the approval request for {self.asked[message.get('id')]!r} is {live!r} "
                f"where the recording answered {then!r}"
            )
            return
        self.position += 1
        if method is not None and "id" in recorded:
            self.ids[recorded["id"]] = message.get("id")
        self._play_until_next_send()


def codex_recorded_answers(
    entries: Sequence[Mapping[str, Any]],
) -> Callable[[UserInputRequest], Awaitable[UserInputResponse]]:
    """`on_user_input` giving the recording's answers, by the call each was about (`codex_answers`)."""
    return _answering(codex_answers(entries))


def codex_run(
    entries: list[dict[str, Any]], run: ExecuteParams, scratch: Path, differences: list[str]
) -> ExecuteParams:
    """`run` on the stand-in agent, in a throwaway Codex home under `scratch` (an API key of no value:
    nothing is sent anywhere)."""

    def start(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAgentProcess:
        process = FakeAgentProcess(argv=argv, env=env)
        process.handler = CodexTranscriptAgent(entries, process, differences).answer
        return process

    options = {
        **run.backend_options_dict(),
        "start_process": start,
        "api_key": "replay",
        "codex_home": scratch / "codex-home",
        "pool_size": 0,  # the stand-in plays one recorded run: its process is never another's
    }
    return run.model_copy(update={"backend_options": options})
