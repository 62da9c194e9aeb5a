"""Replay a recorded cassette through the real adapter code, offline: `unified replay CASSETTE`.

Two kinds of cassette exist (see `unified.testing._cassettes` and `cassettes/`):

- a vcrpy YAML cassette of an API backend (`generate-content`, `interactions`): the run goes
  through the adapter, google-genai and httpx, and vcrpy answers every request from the file in
  record mode `none`, so nothing reaches a network (a request the file lacks fails the run);
- a JSONL transcript of the `codex` backend (its metadata line says `"backend": "codex"`): the
  app-server's JSON-RPC both ways, played by a stand-in `codex app-server` in process
  (`unified.testing._replay_codex`);
- a JSONL transcript of the `gemini-cli` backend (a metadata line, then the ACP JSON-RPC messages
  `{"dir": "send"|"recv", "msg": ...}`): the adapter starts, instead of Node, a stand-in agent that
  answers from the transcript (a `FakeAgentProcess`, given as the backend's `start_process`), so
  the real JSON-RPC connection, pool, session setup and translator all run, in process.
  The CLI's chat-file records, recorded between them as `{"dir": "chat", "file", "record"}`, are
  appended by the stand-in to that file under the replay's own CLI home at their place in the
  transcript, so the adapter finds tool arguments and outputs where the CLI leaves them; a
  transcript without them replays with a `tool_output_unavailable` warning and ACP's bare results.

What to run is read from the cassette itself: the backend from the API paths (or the transcript),
the prompt and model from the first request, the approval mode from the transcript. Tools run for
real in `cwd` (a fresh empty temporary directory by default), so a tool's output can differ from
the recording's; permission prompts get the answers the recording gave. Retry waits are skipped.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, cast
from urllib.parse import urlsplit

from unified._exports import publish
from unified.events import UnifiedEvent, UserInputRequest, UserInputResponse
from unified.testing._fake_acp import cli_home
from unified.testing._fake_process import FakeAgentProcess
from unified.types import ApprovalMode, BackendName, ExecuteParams

__all__ = ["CassetteInfo", "ReplayError", "describe", "replay", "replay_events"]

_ACP_MODES: Mapping[str, ApprovalMode] = {"default": "default", "autoEdit": "auto_edit", "yolo": "yolo", "plan": "plan"}
_SOURCE_LINE = re.compile(r"^#\s*Recorded\s+\S+\s+against\s+(?P<source>.+?)\.?\s*$", re.MULTILINE)
_MODEL_IN_PATH = re.compile(r"/models/(?P<model>[^/:]+):")


class ReplayError(Exception):
    """The file is not a cassette this module can replay (or lacks what a run needs)."""


@dataclass(frozen=True)
class CassetteInfo:
    """What a cassette says about itself: which backend to run, with what, recorded against what."""

    path: Path
    backend: BackendName
    source: str
    prompt: str
    model: str | None = None
    approval_mode: ApprovalMode = "default"
    base_url: str | None = None
    api_version: str | None = None


def describe(path: Path) -> CassetteInfo:
    """Read a cassette's metadata without running anything.

    Raises `ReplayError`, saying what is wrong, for a missing, unreadable or malformed file.
    """
    if path.suffix not in (".jsonl", ".yaml", ".yml"):
        raise ReplayError(f"{path}: not a cassette (expected a .yaml vcrpy cassette or a .jsonl gemini-cli transcript)")
    if not path.is_file():
        raise ReplayError(f"{path}: {'is a directory' if path.is_dir() else 'no such file'}; pass a cassette file")
    try:
        return _describe_transcript(path) if path.suffix == ".jsonl" else _describe_http(path)
    except ReplayError:
        raise
    except UnicodeDecodeError as exc:
        raise ReplayError(f"{path}: not a text file ({exc.reason}); pass a cassette file") from exc
    except OSError as exc:
        raise ReplayError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ReplayError(f"{path}: not a cassette of the expected shape ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # yaml.YAMLError: PyYAML is imported only for YAML cassettes
        if type(exc).__module__.startswith("yaml"):
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or exc
            raise ReplayError(f"{path}: malformed YAML{where}: {problem}") from exc
        raise


async def replay_events(
    path: Path, *, include_native: bool = False, cwd: Path | None = None
) -> AsyncGenerator[UnifiedEvent, None]:
    """Play the cassette at `path` through its backend's real adapter and yield the UnifiedEvents.

    `include_native` keeps each raw backend event in `event.native` (as `ExecuteParams` does);
    `cwd` is where tools run (default: a fresh empty temporary directory, removed afterwards).
    The stream is the one `unified.execute` would give: `session_started` first, `result` last.
    Raises `ReplayError` for a file that is not a replayable cassette.
    """
    info = describe(path)
    with ExitStack() as stack:
        workdir = cwd if cwd is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if info.backend == "gemini-cli":
            params = _transcript_params(info, workdir, stack, include_native)
        elif info.backend == "codex":
            from unified.testing._replay_codex import codex_replay_params

            meta, entries = _read_transcript(info.path)
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="unified-replay-")))
            params = codex_replay_params(meta, entries, workdir, scratch, include_native)
        else:
            params = _http_params(info, workdir, include_native)
            try:
                stack.enter_context(_vcr_block(path))
            except Exception as exc:  # vcrpy reads the whole file: a later interaction may be malformed
                raise ReplayError(f"{path}: vcrpy cannot load it ({type(exc).__name__}: {exc})") from exc
        from unified import execute

        async with execute(params) as stream:
            async for event in stream:
                yield event


replay = replay_events
"""`replay(path)` is `replay_events(path)`."""


# --- API backends: vcrpy cassettes ---------------------------------------------------------------------


def _describe_http(path: Path) -> CassetteInfo:
    from unified.testing._yaml import load_yaml

    text = path.read_text(encoding="utf-8")
    data = load_yaml(text)
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not interactions or not isinstance(interactions, list):
        raise ReplayError(f"{path}: a YAML file without vcrpy interactions")
    first = interactions[0]
    request = first.get("request") if isinstance(first, dict) else None
    if not isinstance(request, dict) or not request.get("uri") or not isinstance(first.get("response"), dict):
        raise ReplayError(f"{path}: the first interaction lacks a request uri or a response (a truncated file?)")
    url = urlsplit(str(request["uri"]))
    body = json.loads(request.get("body") or "{}")
    source = _SOURCE_LINE.search(text)
    common: dict[str, Any] = {
        "path": path,
        "source": source["source"] if source else "unknown (the cassette does not say)",
        "base_url": f"{url.scheme}://{url.netloc}",
        "api_version": url.path.strip("/").split("/")[0] or None,
    }
    if "/interactions" in url.path:
        return CassetteInfo(backend="interactions", prompt=_interaction_prompt(body), model=body.get("model"), **common)
    model = _MODEL_IN_PATH.search(url.path)
    if model is None:
        raise ReplayError(f"{path}: the first request ({url.path}) is neither generateContent nor interactions")
    contents = body.get("contents") or [{}]
    prompt = "".join(str(p.get("text", "")) for p in contents[0].get("parts", []))
    return CassetteInfo(backend="generate-content", prompt=prompt, model=model["model"], **common)


def _interaction_prompt(body: Mapping[str, Any]) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "user_input":
            return "".join(str(c.get("text", "")) for c in item.get("content", []) if isinstance(c, dict))
    raise ReplayError("the first interaction has no user input")


def _http_params(info: CassetteInfo, cwd: Path, include_native: bool) -> ExecuteParams:
    options: dict[str, object] = {
        "api_key": "replay",  # any key: vcrpy answers, and cassettes hold no real one
        "base_url": info.base_url,
        "retry_delay_scale": 0.0,  # a recorded 429 asks for seconds; the replay need not wait them
    }
    if info.api_version:
        options["api_version"] = info.api_version
    return ExecuteParams(
        prompt=info.prompt,
        backend=info.backend,
        model=info.model,
        cwd=cwd,
        include_native=include_native,
        backend_options=options,
    )


@contextmanager
def _vcr_block(path: Path) -> Iterator[None]:
    from unified.testing._cassettes import make_vcr

    recorder = make_vcr(path.parent)
    recorder.record_mode = "none"  # a replay never records, whatever UNIFIED_RECORD says
    with recorder.use_cassette(path.name):
        yield


# --- gemini-cli: JSON-RPC transcripts ------------------------------------------------------------------


def _read_transcript(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines: list[Any] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ReplayError(f"{path}: line {number} is not JSON ({exc.msg}, column {exc.colno})") from exc
    if any(not isinstance(line, dict) for line in lines):
        raise ReplayError(f"{path}: every line of a gemini-cli transcript is a JSON object")
    if not lines or "dir" in lines[0]:
        raise ReplayError(f"{path}: a gemini-cli transcript starts with a metadata line")
    entries = lines[1:]
    for number, entry in enumerate(entries, 2):
        if entry.get("dir") == "chat":
            if not isinstance(entry.get("record"), dict) or not _is_chat_file(entry.get("file")):
                raise ReplayError(
                    f"{path}: line {number} is a chat record without a JSON object `record` or with a `file` "
                    "that is not a relative tmp/<project>/chats/....jsonl path"
                )
        elif entry.get("dir") not in ("send", "recv") or not isinstance(entry.get("msg"), dict):
            raise ReplayError(
                f"{path}: line {number} is neither {{'dir': 'send'|'recv', 'msg': {{...}}}} "
                "nor {'dir': 'chat', 'file': ..., 'record': {...}}"
            )
    return lines[0], entries


def _is_chat_file(file: object) -> bool:
    """A chat file's path relative to the CLI home, which cannot point anywhere else."""
    if not isinstance(file, str):
        return False
    parts = PurePosixPath(file).parts
    return (
        len(parts) >= 4
        and parts[0] == "tmp"
        and parts[2] == "chats"
        and file.endswith(".jsonl")
        and not any(part in ("", ".", "..") or "\\" in part for part in parts)
    )


def _sent(entries: list[dict[str, Any]], method: str) -> dict[str, Any] | None:
    for entry in entries:
        if entry["dir"] == "send" and entry["msg"].get("method") == method:
            params = entry["msg"].get("params")
            return params if isinstance(params, dict) else {}
    return None


def _describe_transcript(path: Path) -> CassetteInfo:
    meta, entries = _read_transcript(path)
    if meta.get("backend") == "codex":
        from unified.testing._replay_codex import codex_prompt

        prompt_text, codex_model = codex_prompt(entries)
        if not prompt_text:
            raise ReplayError(f"{path}: the transcript never sends turn/start")
        codex_mode = meta.get("approval_mode")
        return CassetteInfo(
            path=path,
            backend="codex",
            source=str(meta.get("recorded_from") or "unknown (the cassette does not say)"),
            prompt=prompt_text,
            model=codex_model,
            approval_mode=cast("ApprovalMode", codex_mode if codex_mode in _ACP_MODES.values() else "default"),
        )
    prompt = _sent(entries, "session/prompt")
    if prompt is None:
        raise ReplayError(f"{path}: the transcript never sends session/prompt")
    text = "".join(str(b.get("text", "")) for b in prompt.get("prompt", []) if isinstance(b, dict))
    model = (_sent(entries, "session/set_model") or {}).get("modelId")
    mode = meta.get("approval_mode") or _ACP_MODES.get(str((_sent(entries, "session/set_mode") or {}).get("modeId")))
    return CassetteInfo(
        path=path,
        backend="gemini-cli",
        source=str(meta.get("recorded_from") or "unknown (the cassette does not say)"),
        prompt=text,
        model=model,
        approval_mode=cast("ApprovalMode", mode or "default"),
    )


def _recorded_answers(entries: list[dict[str, Any]]) -> list[UserInputResponse]:
    """The client's recorded answers to permission requests, in order, as `on_user_input` answers."""
    kinds: dict[Any, dict[str, str]] = {}
    answers: list[UserInputResponse] = []
    for entry in entries:
        msg = entry.get("msg", {})  # a chat record has none
        if entry["dir"] == "recv" and msg.get("method") == "session/request_permission":
            options = msg.get("params", {}).get("options", [])
            kinds[msg.get("id")] = {str(o.get("optionId")): str(o.get("kind")) for o in options}
        elif entry["dir"] == "send" and "method" not in msg and msg.get("id") in kinds:
            outcome = msg.get("result", {}).get("outcome", {})
            kind = kinds[msg["id"]].get(str(outcome.get("optionId")), "")
            allowed = outcome.get("outcome") == "selected" and kind.startswith("allow")
            answers.append(
                UserInputResponse.allow(always=kind == "allow_always") if allowed else UserInputResponse.deny()
            )
    return answers


def _answering(answers: list[UserInputResponse]) -> Callable[[UserInputRequest], Awaitable[UserInputResponse]]:
    async def answer(request: UserInputRequest) -> UserInputResponse:
        return answers.pop(0) if answers else UserInputResponse(cancelled=True)

    return answer


def _transcript_params(info: CassetteInfo, cwd: Path, stack: ExitStack, include_native: bool) -> ExecuteParams:
    _, entries = _read_transcript(info.path)
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="unified-replay-")))
    home = scratch / "home"  # the CLI's home as the adapter sees it: empty, never the user's
    home.mkdir()

    def start(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAgentProcess:
        process = FakeAgentProcess(argv=argv, env=env)
        process.handler = _TranscriptAgent(entries, process).answer
        return process

    return ExecuteParams(
        prompt=info.prompt,
        backend="gemini-cli",
        model=info.model,
        cwd=cwd,
        approval_mode=info.approval_mode,
        on_user_input=_answering(_recorded_answers(entries)),
        include_native=include_native,
        backend_options={
            "start_process": start,
            "pool_size": 0,
            "env": {"HOME": str(home), "GEMINI_CLI_HOME": str(home)},
        },
    )


class _TranscriptAgent:
    """The stand-in `gemini --acp`: answers the adapter's JSON-RPC from a recorded transcript.

    Each message the adapter sends must match the next recorded `send` (same method, or both a
    response); the recorded `recv` messages that followed it are then written out, with the ids of
    answers rewritten to the live request ids, and the `chat` records among them appended to their
    chat file under this process's CLI home, each before the message after it. `initialize` (sent
    before recording starts) is answered here. A mismatch ends the process (exit 1) with the reason
    on stderr, which the adapter reports.
    """

    def __init__(self, entries: list[dict[str, Any]], process: FakeAgentProcess) -> None:
        self.entries = entries
        self.process = process
        self.home = cli_home(process.env)
        self.ids: dict[Any, Any] = {}
        self.position = 0
        self._play_until_next_send()

    def _write(self, message: Mapping[str, Any]) -> None:
        self.process.emit(json.dumps(message, separators=(",", ":")))

    def _play_until_next_send(self) -> None:
        """Write the recorded agent messages and chat records up to the next thing the adapter sends."""
        while self.position < len(self.entries) and self.entries[self.position]["dir"] != "send":
            entry = self.entries[self.position]
            self.position += 1
            if entry["dir"] == "chat":
                chat_file = self.home / entry["file"]
                chat_file.parent.mkdir(parents=True, exist_ok=True)
                with chat_file.open("a", encoding="utf-8") as handle:  # before the message that needs it
                    handle.write(json.dumps(entry["record"]) + "\n")
                continue
            reply = dict(entry["msg"])
            if "method" not in reply and reply.get("id") in self.ids:
                reply["id"] = self.ids[reply["id"]]
            self._write(reply)

    def _fail(self, reason: str) -> None:
        self.process.write_stderr(f"replay: {reason}\n")
        self.process.exit(1)

    def answer(self, line: str) -> None:
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": _INITIALIZE_RESULT})
            return
        if self.position >= len(self.entries):
            # a request is a mismatch; a notification or answer the recording never needed (a late cancel) passes
            if "id" in message and method is not None:
                self._fail(f"the transcript has nothing more to answer {method}")
            return
        recorded = self.entries[self.position]["msg"]
        if recorded.get("method") != method:
            self._fail(f"the adapter sent {method or 'an answer'}, the recording {recorded.get('method')}")
            return
        self.position += 1
        if method is not None and "id" in recorded:
            self.ids[recorded["id"]] = message.get("id")
        self._play_until_next_send()


_INITIALIZE_RESULT: dict[str, Any] = {
    "protocolVersion": 1,
    "agentInfo": {"name": "gemini-cli (replayed transcript)"},
    "agentCapabilities": {"loadSession": False},
}


publish("unified.testing", ["ReplayError", "replay_events"], globals())
