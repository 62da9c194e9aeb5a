"""Replay a recorded cassette through the real adapter code, offline: `unified replay CASSETTE`.

Two kinds of cassette exist (see `unified.testing._cassettes` and `cassettes/`):

- a vcrpy YAML cassette of an API backend (`generate-content`, `interactions`): the run goes
  through the adapter, google-genai and httpx, and vcrpy answers every request from the file in
  record mode `none`, so nothing reaches a network. A request must match a recorded one on its
  prompt, model, path and the tool outputs it sends back (`_cassettes.MATCH_ON`);
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
  transcript without them replays with a `tool_output_unavailable` warning and ACP's bare results;
- a JSONL transcript of the `claude-code` backend (a metadata line naming the backend, then the
  CLI's stream-json lines both ways): the adapter starts a stand-in CLI that answers each line it
  sends with the lines recorded after it (ids of our control requests rewritten to the live ones),
  so the real control protocol, permission bridge and translator run, in process; permission
  prompts and questions get the answers the recording sent.

What to run is read from the cassette itself: the backend from the API paths (or the transcript),
the prompt and model from the first request, the approval mode from the transcript (or an HTTP
cassette's `unified:` block). Or it is the caller's own `params` and `on_user_input`: the
orchestrator's code runs against the recording. Tools run for real in `cwd` (a fresh temporary
directory by default, holding the files an HTTP cassette's `unified: workspace:` lists).
Permission prompts get the answers the recording gave, unless the caller answers. Retry waits are
skipped.

A replay reproduces the recording or fails: when the run sends what the recording did not (another
prompt, another tool output, another answer to a permission request) or stops short of it, the
stream raises `ReplayDiverged` in place of its `result`, naming the first difference.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, cast, get_args
from urllib.parse import urlsplit

from unified._exports import publish
from unified._files import not_a_file
from unified._redaction import clip
from unified.events import ErrorEvent, Result, UnifiedEvent, UserInputRequest, UserInputResponse
from unified.testing._fake_acp import cli_home
from unified.testing._fake_process import FakeAgentProcess
from unified.testing._transcript_agent import TranscriptAgent
from unified.testing._yaml import MalformedYaml
from unified.types import ApprovalMode, BackendName, ExecuteParams, UserInputHandler

__all__ = ["CassetteInfo", "RecordedAnswer", "ReplayDiverged", "ReplayError", "describe", "replay", "replay_events"]

_ACP_MODES: Mapping[str, ApprovalMode] = {"default": "default", "autoEdit": "auto_edit", "yolo": "yolo", "plan": "plan"}
_MODES: tuple[str, ...] = get_args(ApprovalMode)


def _approval_mode(path: Path, meta: Mapping[str, Any]) -> ApprovalMode | None:
    """The metadata's `approval_mode`, None when it names none. One that is no mode (a typo in an edited cassette)
    is refused here: it ended the replay as `internal_error`, pydantic's literal_error called a bug in unified
    (gemini-cli, claude-code, the HTTP backends), and codex replayed it as `default` without a word, so a cassette
    recorded in yolo asked where the recording did not."""
    mode = meta.get("approval_mode")
    if mode is None or mode == "":
        return None
    if mode not in _MODES:
        raise ReplayError(
            f"{path}: its approval_mode {clip(json.dumps(mode), 80)} is no approval mode (one of "
            f"{', '.join(_MODES)}); mend it to the mode the cassette was recorded in"
        )
    return cast("ApprovalMode", mode)


_SOURCE_LINE = re.compile(r"^#\s*Recorded\s+\S+\s+against\s+(?P<source>.+?)\.?\s*$", re.MULTILINE)
_MODEL_IN_PATH = re.compile(r"/models/(?P<model>[^/:]+):")
_JSON_PROBLEMS = (
    ("Unterminated string", "a string is never closed (the line may have been cut short)"),
    ("Expecting value", "a value is missing"),
    ("Expecting ',' delimiter", "a comma or a closing bracket is missing"),
    ("Expecting ':' delimiter", "a colon is missing after a key"),
    ("Expecting property name", "a key is not a double-quoted string"),
    ("Extra data", "something follows the JSON object on the same line"),
    ("Invalid control character", "a string holds a raw control character (a tab or a line break)"),
    ("Invalid \\escape", "a string holds an invalid backslash escape"),
)


class ReplayError(Exception):
    """The file is not a cassette this module can replay (or lacks what a run needs)."""


class ReplayDiverged(ReplayError):
    """The replayed run did not do what the recording did: a request, a tool output or an answer differs."""


@dataclass(frozen=True)
class RecordedAnswer:
    """One answer the recorded run's `on_user_input` gave, and to what (`source` None: not compared)."""

    response: UserInputResponse
    source: str | None = None
    tool_name: str | None = None


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
    answers: tuple[RecordedAnswer, ...] = ()
    """The caller's answers during the recording, in order."""
    workspace: Mapping[str, str] = field(default_factory=dict)
    """Files (relative path: text) a replay's fresh working directory starts with (HTTP cassettes)."""
    paths_are_from: str | None = None
    """The recorded run's cwd, which the transcript's absolute paths start with (claude-code: a replay reads it
    as its own cwd)."""


def describe(path: Path) -> CassetteInfo:
    """Read a cassette's metadata without running anything.

    Raises `ReplayError`, saying what is wrong and where (`FILE:LINE: ...`), for a missing,
    unreadable or malformed file.
    """
    if path.suffix not in (".jsonl", ".yaml", ".yml"):
        raise ReplayError(  # the backends from their table: codex's transcripts were left out of this line
            f"{path}: not a cassette (expected a .yaml vcrpy cassette or a .jsonl transcript of "
            f"{', '.join(_TRANSCRIPT_BACKENDS[:-1])} or {_TRANSCRIPT_BACKENDS[-1]})"
        )
    if not path.is_file():
        raise ReplayError(f"{path}: {not_a_file(path)}; pass a cassette file")
    try:
        return _describe_transcript(path) if path.suffix == ".jsonl" else _describe_http(path)
    except ReplayError:
        raise
    except UnicodeDecodeError as exc:
        raise ReplayError(f"{path}: not a text file ({exc.reason}); pass a cassette file") from exc
    except OSError as exc:
        raise ReplayError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except json.JSONDecodeError as exc:
        raise ReplayError(f"{path}: a request body is not JSON: {_json_problem(exc)}") from exc
    except MalformedYaml as exc:
        raise ReplayError(exc.at(path)) from exc
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise ReplayError(f"{path}: not a cassette of the expected shape ({type(exc).__name__}: {exc})") from exc


def _json_problem(exc: json.JSONDecodeError) -> str:
    """What a JSON parse error means, in plain words, with the column."""
    for start, words in _JSON_PROBLEMS:
        if exc.msg.startswith(start):
            return f"{words}, at column {exc.colno}"
    return f"{exc.msg.lower()}, at column {exc.colno}"


async def replay_events(
    path: Path,
    *,
    params: ExecuteParams | None = None,
    on_user_input: UserInputHandler | None = None,
    include_native: bool = False,
    cwd: Path | None = None,
) -> AsyncGenerator[UnifiedEvent, None]:
    """Play the cassette at `path` through its backend's real adapter and yield the UnifiedEvents.

    `params` runs the caller's own parameters instead of the recorded prompt, model and approval
    mode (its backend must be the cassette's, or "auto"; its backend options are kept, with the
    cassette's endpoint or stand-in agent added). `on_user_input` answers permission prompts and
    questions instead of the recording's answers (else `params.on_user_input`, else the recorded
    answers). `include_native` keeps each raw backend event in `event.native`; `cwd` is where tools
    run (default: `params.cwd` if given, else a fresh temporary directory, removed afterwards).
    The stream is the one `unified.execute` would give: `session_started` first, `result` last.
    Raises `ReplayError` for a file that is not a replayable cassette, and `ReplayDiverged`, in
    place of the `result`, when the run did not do what the recording did.
    """
    info = describe(path)
    if params is not None and params.backend not in ("auto", info.backend):
        raise ReplayError(f"{path}: a {info.backend} cassette cannot replay a {params.backend} run")
    differences: list[str] = []
    with ExitStack() as stack:
        workdir = cwd
        if workdir is None and params is not None and "cwd" in params.model_fields_set:
            workdir = params.cwd
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="unified-replay-cwd-")))
            _write_workspace(info, workdir)
        run = _base_params(info, params, workdir, include_native)
        # a transcript is read once here (describe read its metadata and prompt)
        entries = _read_transcript(info.path)[1] if info.backend in _TRANSCRIPT_BACKENDS else []
        answer = on_user_input or (params.on_user_input if params is not None else None)
        if answer is None and info.backend == "claude-code":  # answered by request id, as recorded
            answer = _claude_answering(_claude_answers(entries))
        if answer is None and info.backend == "codex":  # answered by the call each was about, as recorded
            from unified.testing._replay_codex import codex_recorded_answers

            answer = codex_recorded_answers(entries)
        if answer is None:
            answer = _answering(list(info.answers), differences)
        run = run.model_copy(update={"on_user_input": answer})
        check: Callable[[], str | None] = _nothing  # the transcript's stand-in reports as it goes
        if info.backend in _TRANSCRIPT_BACKENDS:
            run = _transcript_params(info, entries, run, stack, differences)
        else:
            run = _http_params(info, run)
            try:
                check = stack.enter_context(_vcr_block(path))
            except Exception as exc:  # vcrpy reads the whole file: a later interaction may be malformed
                raise ReplayError(f"{path}: vcrpy cannot load it ({type(exc).__name__}: {exc})") from exc
        from unified import execute

        async with execute(run) as stream:
            async for event in stream:
                if isinstance(event, ErrorEvent) and check is not _nothing and _UNMATCHED in event.message:
                    # vcrpy refused a request the recording does not have: the run diverged here. Its exception
                    # reached the stream as an `internal_error` calling it a bug of the adapter (and quoting
                    # vcrpy's advice on record modes), where the difference is what to show.
                    difference = check()
                    if difference is not None:
                        raise ReplayDiverged(
                            f"{path}: the replay differs from the recording: {difference}{_hint(difference)}"
                        )
                if isinstance(event, Result):
                    difference = differences[0] if differences else check()
                    if difference is not None:
                        raise ReplayDiverged(
                            f"{path}: the replay differs from the recording: {difference}{_hint(difference)}"
                        )
                yield event


replay = replay_events
"""`replay(path)` is `replay_events(path)`."""


def _nothing() -> str | None:
    return None


_UNMATCHED = "CannotOverwriteExistingCassetteException"
"""What vcrpy raises, in replay mode, for a request no recorded interaction matches."""


def _hint(difference: str) -> str:
    if "the output of" in difference:
        return " (the tools ran in another workspace than the recording's? replay in a copy of it: cwd=, --cwd DIR)"
    return ""


def _base_params(info: CassetteInfo, params: ExecuteParams | None, cwd: Path, include_native: bool) -> ExecuteParams:
    if params is None:
        return ExecuteParams(
            prompt=info.prompt,
            backend=info.backend,
            model=info.model,
            cwd=cwd,
            approval_mode=info.approval_mode,
            include_native=include_native,
        )
    return params.model_copy(
        update={"backend": info.backend, "cwd": cwd, "include_native": include_native or params.include_native}
    )


def _workspace(path: Path, files: Mapping[Any, Any]) -> dict[str, str]:
    """The `unified: workspace:` files of an HTTP cassette, each name checked before anything runs: a relative path
    inside the workspace, without a NUL, and no file's name a folder of another's ("a" and "a/b"). The last two
    ended the replay as `internal_error` when the fresh workspace was written ("embedded null byte", "File
    exists", exit 70)."""
    workspace: dict[str, str] = {}
    for name, text in files.items():
        parts = PurePosixPath(str(name)).parts
        if not parts or PurePosixPath(str(name)).is_absolute() or ".." in parts or "\0" in str(name):
            raise ReplayError(f"{path}: the workspace file {str(name)!r} is not a relative path inside it")
        workspace["/".join(parts)] = str(text)  # "./a" is "a"
    for relative in workspace:
        parts = PurePosixPath(relative).parts
        clash = next((folder for end in range(1, len(parts)) if (folder := "/".join(parts[:end])) in workspace), None)
        if clash is not None:
            raise ReplayError(
                f"{path}: the workspace names {clash!r} a file and a folder (of {relative!r}); rename one of them"
            )
    return workspace


def _write_workspace(info: CassetteInfo, cwd: Path) -> None:
    for relative, text in info.workspace.items():
        target = cwd.joinpath(*PurePosixPath(relative).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _asked(request: UserInputRequest) -> str:
    return f"{request.source} {request.tool_name}" if request.tool_name else request.source


def _answering(answers: list[RecordedAnswer], differences: list[str]) -> UserInputHandler:
    """The recorded answers, in order; a question the recording did not ask gets none, and is a difference."""

    async def answer(request: UserInputRequest) -> UserInputResponse:
        if not answers:
            differences.append(f"the run asked ({_asked(request)}) after every recorded answer was given")
            return UserInputResponse(cancelled=True)
        recorded = answers.pop(0)
        if recorded.source is not None and (recorded.source, recorded.tool_name) != (request.source, request.tool_name):
            then = f"{recorded.source} {recorded.tool_name}" if recorded.tool_name else recorded.source
            differences.append(f"the run asked ({_asked(request)}) where the recording asked ({then})")
            return UserInputResponse(cancelled=True)
        return recorded.response

    return answer


# --- API backends: vcrpy cassettes ---------------------------------------------------------------------


def _response_problem(response: object) -> str | None:
    """What keeps a vcrpy response from being served, or None. vcrpy reads the fields as it serves them: a status
    that is no mapping was an `internal_error` ('int' object is not subscriptable) blamed on the adapter, a code
    that is no number a `backend_error` blamed on the request ('<=' not supported ...)."""
    if not isinstance(response, dict):
        return "is missing or no mapping"
    status = response.get("status")
    if not isinstance(status, dict):
        return "has no `status` mapping (`code:` and `message:`)"
    code = status.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or not 100 <= code <= 599:
        return f"has `status.code` {clip(repr(code), 60)}, not an HTTP status from 100 to 599"
    headers = response.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))
        for value in headers.values()
    ):
        return "has `headers` that are no mapping of names to lists of strings"
    body = response.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("string"), str | bytes):
        return "has no `body.string` text"
    return None


def _describe_http(path: Path) -> CassetteInfo:
    from unified.testing._cassettes import UNIFIED_KEY
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
    for number, interaction in enumerate(interactions, 1):
        problem = _response_problem(interaction.get("response") if isinstance(interaction, dict) else None)
        if problem is not None:
            raise ReplayError(
                f"{path}: interaction {number}'s response {problem}; the file was edited or cut: re-record it "
                "(`unified record`, or UNIFIED_RECORD=1 for the test cassettes) or mend that field"
            )
    url = urlsplit(str(request["uri"]))
    body = json.loads(request.get("body") or "{}")
    source = _SOURCE_LINE.search(text)
    block = data.get(UNIFIED_KEY)
    if block is not None and not isinstance(block, dict):  # was read as no block: its answers and files unplayed
        raise ReplayError(
            f"{path}: its `{UNIFIED_KEY}:` block is a {type(block).__name__}, not a mapping (approval_mode, answers, "
            "workspace); mend it or remove it"
        )
    meta: Mapping[str, Any] = block or {}
    common: dict[str, Any] = {
        "path": path,
        "source": source["source"] if source else "unknown (the cassette does not say)",
        "base_url": f"{url.scheme}://{url.netloc}",
        "api_version": url.path.strip("/").split("/")[0] or None,
        "approval_mode": _approval_mode(path, meta) or "default",
        "answers": tuple(_answer_of(path, item) for item in meta.get("answers") or ()),
        "workspace": _workspace(path, meta.get("workspace") or {}),
    }
    if "/interactions" in url.path:
        return CassetteInfo(backend="interactions", prompt=_interaction_prompt(body), model=body.get("model"), **common)
    model = _MODEL_IN_PATH.search(url.path)
    if model is None:
        raise ReplayError(f"{path}: the first request ({url.path}) is neither generateContent nor interactions")
    contents = body.get("contents") or [{}]
    prompt = "".join(str(p.get("text", "")) for p in contents[0].get("parts", []))
    return CassetteInfo(backend="generate-content", prompt=prompt, model=model["model"], **common)


def _answer_of(path: Path, item: Any) -> RecordedAnswer:
    if not isinstance(item, dict) or not isinstance(item.get("response"), dict):
        raise ReplayError(f"{path}: an entry of `unified: answers:` has no `response` mapping")
    return RecordedAnswer(
        response=UserInputResponse.model_validate(item["response"]),
        source=str(item.get("source") or "permission"),
        tool_name=str(item["tool_name"]) if item.get("tool_name") else None,
    )


def _interaction_prompt(body: Mapping[str, Any]) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "user_input":
            return "".join(str(c.get("text", "")) for c in item.get("content", []) if isinstance(c, dict))
    raise ReplayError("the first interaction has no user input")


def _http_params(info: CassetteInfo, run: ExecuteParams) -> ExecuteParams:
    options: dict[str, object] = {
        **run.backend_options_dict(),
        "api_key": "replay",  # any key: vcrpy answers, and cassettes hold no real one
        "base_url": info.base_url,
        "retry_delay_scale": 0.0,  # a recorded 429 asks for seconds; the replay need not wait them
    }
    if info.api_version:
        options["api_version"] = info.api_version
    return run.model_copy(update={"backend_options": options})


@contextmanager
def _vcr_block(path: Path) -> Iterator[Callable[[], str | None]]:
    """Replay `path`; yields what tells, once the run is over, the first way it differed from the recording."""
    from unified.testing._cassettes import _RequestLog, first_difference, make_vcr

    log = _RequestLog()
    recorder = make_vcr(path.parent, log=log)
    recorder.record_mode = "none"  # a replay never records, whatever UNIFIED_RECORD says
    with recorder.use_cassette(path.name) as cassette:
        log.reset()

        def difference() -> str | None:
            found = first_difference(cassette, log.requests)
            if found is None and not cassette.all_played:
                played = sum(cassette.play_counts.values())
                found = f"the run made {played} of the {len(cassette)} recorded requests"
            return found

        yield difference


# --- gemini-cli: JSON-RPC transcripts ------------------------------------------------------------------


def _read_transcript(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines: list[Any] = []
    numbers: list[int] = []
    # an editor's byte order mark is no part of the transcript (YAML reads past it on its own)
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if line.strip():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ReplayError(f"{path}:{number}: not JSON: {_json_problem(exc)}") from exc
            numbers.append(number)
    for number, line in zip(numbers, lines, strict=True):
        if not isinstance(line, dict):
            raise ReplayError(f"{path}:{number}: a JSON {type(line).__name__}; every line of a transcript is an object")
    if not lines:
        raise ReplayError(f"{path}: the file is empty; a transcript is a metadata line, then its messages")
    if "dir" in lines[0]:
        raise ReplayError(f"{path}:1: a transcript starts with a metadata line (no `dir` key); this line has one")
    backend = lines[0].get("backend", "gemini-cli")  # the first gemini-cli cassettes name no backend
    if backend not in _TRANSCRIPT_BACKENDS:
        raise ReplayError(
            f"{path}:1: the metadata line names the backend {clip(json.dumps(backend), 80)}; a transcript is of "
            f"{', '.join(_TRANSCRIPT_BACKENDS)}"
        )
    entries = lines[1:]
    for number, entry in zip(numbers[1:], entries, strict=True):
        if entry.get("dir") == "chat":
            if not isinstance(entry.get("record"), dict) or not _is_chat_file(entry.get("file")):
                raise ReplayError(
                    f"{path}:{number}: a chat record without a JSON object `record` or with a `file` that is "
                    "not a relative tmp/<project>/chats/....jsonl path"
                )
        elif entry.get("dir") not in ("send", "recv") or not isinstance(entry.get("msg"), dict):
            raise ReplayError(
                f"{path}:{number}: neither {{'dir': 'send'|'recv', 'msg': {{...}}}} "
                "nor {'dir': 'chat', 'file': ..., 'record': {...}}"
            )
    sent: tuple[int, object] | None = None
    for number, entry in zip(numbers[1:], entries, strict=True):
        if entry["dir"] != "send":
            continue
        if sent is not None and entry["msg"] == sent[1]:  # the stand-in waited for a repeat the adapter never sends
            raise ReplayError(
                f"{path}:{number}: this line repeats the message of line {sent[0]}, which the adapter sends once: a "
                "replay would wait for the repeat without end; remove the line, or record the cassette again"
            )
        sent = (number, entry["msg"])
    stray = None if backend == "claude-code" else _stray_answer(entries)
    if stray is not None:
        raise ReplayError(
            f"{path}:{numbers[1 + stray[0]]}: an answer to request {stray[1]}, which no line before it sends (its "
            "line was removed, or this one moved): the adapter would meet an answer it never asked for; record the "
            "cassette again"
        )
    unanswered = _unanswered(backend, entries)
    if unanswered is not None:
        raise ReplayError(
            f"{path}:{numbers[1 + unanswered[0]]}: the run waits here for {unanswered[1]}, which the transcript "
            "never gives (it was cut short, or a line of it removed: a replay would wait without end); record the "
            "cassette again"
        )
    return lines[0], entries


def _unanswered(backend: str, entries: list[dict[str, Any]]) -> tuple[int, str] | None:
    """The first recorded message the adapter waits on that the transcript never answers, as (its index, what is
    missing), or None. A transcript cut at a line's end (a recording stopped early, lines deleted by hand) replayed
    until the stand-in had played everything, then the run waited for ever (codex, gemini-cli) or until its stall
    bound (claude-code: 90 s, then "the model's answer stalled"). Waited on: the answer to each JSON-RPC request
    (gemini-cli, codex), the `turn/completed` of a codex thread whose turn started (`turn/start`, a subagent's
    `turn/started`: the run waits for both), a claude-code user message's
    `result` and a control request's response."""
    waiting: dict[object, tuple[int, str]] = {}
    for index, entry in enumerate(entries):
        msg, sent = entry.get("msg") or {}, entry["dir"] == "send"
        if backend == "claude-code":
            if sent and msg.get("type") == "user":
                waiting.setdefault("result", (index, "the `result` line after the user message"))
            elif not sent and msg.get("type") == "result":
                waiting.pop("result", None)
            elif sent and msg.get("type") == "control_request":
                what = f"the answer to the control request {(msg.get('request') or {}).get('subtype')}"
                waiting[("control", str(msg.get("request_id")))] = (index, what)
            elif not sent and msg.get("type") == "control_response":
                waiting.pop(("control", str((msg.get("response") or {}).get("request_id"))), None)
            continue
        if sent and "method" in msg and "id" in msg:
            waiting[("answer", json.dumps(msg["id"]))] = (index, f"the answer to {msg['method']}")
        elif not sent and "method" not in msg and "id" in msg:
            waiting.pop(("answer", json.dumps(msg["id"])), None)
        params = msg.get("params")
        thread = params.get("threadId") if isinstance(params, dict) else None
        if backend == "codex" and msg.get("method") == ("turn/start" if sent else "turn/started"):
            waiting.setdefault(("turn", json.dumps(thread)), (index, f"the `turn/completed` of {msg['method']}'s turn"))
        elif backend == "codex" and not sent and msg.get("method") == "turn/completed":
            waiting.pop(("turn", json.dumps(thread)), None)
    return min(waiting.values(), default=None)


def _stray_answer(entries: list[dict[str, Any]]) -> tuple[int, str] | None:
    """The first recorded JSON-RPC answer of the agent (gemini-cli, codex) to a request id no earlier line sends,
    as (its index, the id), or None. With the request's line removed, the stand-in played that answer at once, the
    adapter failed the run ("answered a request unified never sent") and `unified replay` exited 0: the
    difference was the stand-in's to see, and it had seen none."""
    sent: set[str] = set()
    for index, entry in enumerate(entries):
        msg = entry["msg"] if entry["dir"] in ("send", "recv") else {}
        if entry["dir"] == "send" and "method" in msg and "id" in msg:
            sent.add(json.dumps(msg["id"]))
        elif entry["dir"] == "recv" and "method" not in msg and "id" in msg and json.dumps(msg["id"]) not in sent:
            return index, clip(json.dumps(msg["id"]), 40)
    return None


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


def _prompt_text(params: Mapping[str, Any]) -> str:
    return "".join(str(b.get("text", "")) for b in params.get("prompt") or [] if isinstance(b, dict))


def _describe_transcript(path: Path) -> CassetteInfo:
    meta, entries = _read_transcript(path)
    if meta.get("backend") == "claude-code":
        return _describe_claude(path, meta, entries)
    if meta.get("backend") == "codex":
        from unified.testing._replay_codex import codex_prompt

        prompt_text, codex_model = codex_prompt(entries)
        if not prompt_text:
            raise ReplayError(f"{path}: the transcript never sends turn/start")
        return CassetteInfo(
            path=path,
            backend="codex",
            source=str(meta.get("recorded_from") or "unknown (the cassette does not say)"),
            prompt=prompt_text,
            model=codex_model,
            approval_mode=_approval_mode(path, meta) or "default",
        )
    prompt = _sent(entries, "session/prompt")
    if prompt is None:
        raise ReplayError(f"{path}: the transcript never sends session/prompt")
    model = (_sent(entries, "session/set_model") or {}).get("modelId")
    mode = _approval_mode(path, meta) or _ACP_MODES.get(str((_sent(entries, "session/set_mode") or {}).get("modeId")))
    return CassetteInfo(
        path=path,
        backend="gemini-cli",
        source=str(meta.get("recorded_from") or "unknown (the cassette does not say)"),
        prompt=_prompt_text(prompt),
        model=model,
        approval_mode=mode or "default",
        answers=tuple(RecordedAnswer(answer) for answer in _recorded_answers(entries)),
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


_TRANSCRIPT_BACKENDS = ("gemini-cli", "claude-code", "codex")
"""The backends whose cassettes are JSONL transcripts of an agent binary's protocol, played by a stand-in."""


def _transcript_params(
    info: CassetteInfo, entries: list[dict[str, Any]], run: ExecuteParams, stack: ExitStack, differences: list[str]
) -> ExecuteParams:
    """`run` on the stand-in agent that plays the transcript's `entries`."""
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="unified-replay-")))
    if info.backend == "claude-code":
        return _claude_params(entries, run, scratch, differences, info.paths_are_from)
    if info.backend == "codex":
        from unified.testing._replay_codex import codex_run

        return codex_run(entries, run, scratch, differences)
    home = scratch / "home"  # the CLI's home as the adapter sees it: empty, never the user's
    home.mkdir()

    def start(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAgentProcess:
        process = FakeAgentProcess(argv=argv, env=env)
        process.handler = _TranscriptAgent(entries, process, differences).answer
        return process

    options = {
        **run.backend_options_dict(),
        "start_process": start,
        "pool_size": 0,
        "env": {"HOME": str(home), "GEMINI_CLI_HOME": str(home)},
    }
    return run.model_copy(update={"backend_options": options})


class _TranscriptAgent(TranscriptAgent):
    """The stand-in `gemini --acp`: answers the adapter's JSON-RPC from a recorded transcript.

    Each message the adapter sends must match the next recorded `send`: the same method (or both a
    response), and, where the recording holds it, the same prompt text, model, mode and answer to
    a permission request. The recorded `recv` messages that followed it are then written out, with
    the ids of answers rewritten to the live request ids, and the `chat` records among them
    appended to their chat file under this process's CLI home, each before the message after it.
    `initialize` (sent before recording starts) is answered here. A mismatch ends the process
    (`TranscriptAgent`).
    """

    def __init__(self, entries: list[dict[str, Any]], process: FakeAgentProcess, differences: list[str]) -> None:
        super().__init__(entries, process, differences)
        self.home = cli_home(process.env)
        self.ids: dict[Any, Any] = {}
        self.asked: dict[Any, Mapping[str, Any]] = {}
        """Recorded permission requests by live id: what the adapter's answer is compared against."""
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
            if reply.get("method") == "session/request_permission":
                self.asked[reply.get("id")] = reply.get("params") or {}
            self._write(reply)

    def answer(self, line: str) -> None:
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": _INITIALIZE_RESULT})
            return
        if self.position >= len(self.entries):
            # a request is a mismatch; a notification or answer the recording never needed (a late cancel) passes
            if "id" in message and method is not None:
                self._fail(f"the adapter sent {method}, after the end of the recording")
            return
        recorded = self.entries[self.position]["msg"]
        if recorded.get("method") != method:
            then = recorded.get("method") or "an answer"
            self._fail(f"the adapter sent {method or 'an answer'} where the recording sent {then}")
            return
        difference = self._differs(message, recorded)
        if difference is not None:
            self._fail(difference)
            return
        self.position += 1
        if method is not None and "id" in recorded:
            self.ids[recorded["id"]] = message.get("id")
        self._play_until_next_send()

    def _differs(self, message: Mapping[str, Any], recorded: Mapping[str, Any]) -> str | None:
        """How what the adapter sent differs from the recording, where it matters to the run."""
        method = message.get("method")
        live, then = message.get("params") or {}, recorded.get("params") or {}
        if method == "session/prompt" and _prompt_text(live) != _prompt_text(then):
            return f"the prompt is {_prompt_text(live)!r} where the recording has {_prompt_text(then)!r}"
        for name, key in (("session/set_model", "modelId"), ("session/set_mode", "modeId")):
            if method == name and live.get(key) != then.get(key):
                return f"{name} asks for {live.get(key)!r} where the recording asked for {then.get(key)!r}"
        if method is None and message.get("id") in self.asked:
            outcome = (message.get("result") or {}).get("outcome") or {}
            recorded_outcome = (recorded.get("result") or {}).get("outcome") or {}
            if outcome != recorded_outcome:
                asked = self.asked[message.get("id")]
                title = (asked.get("toolCall") or {}).get("title") or (asked.get("toolCall") or {}).get("toolCallId")
                return (
                    f"the answer to the permission request for {title!r} is {_option(outcome)} "
                    f"where the recording answered {_option(recorded_outcome)}"
                )
        return None


def _option(outcome: Mapping[str, Any]) -> str:
    return str(outcome.get("optionId") or outcome.get("outcome") or "nothing")


# --- claude-code: stream-json transcripts --------------------------------------------------------------


def _describe_claude(path: Path, meta: Mapping[str, Any], entries: list[dict[str, Any]]) -> CassetteInfo:
    # the adapter always sends one: a transcript cut before it (whatever its metadata says of the prompt) had the
    # stand-in answer the adapter's user message with nothing, and the replay waited out the 90 s stall bound
    first = next((e["msg"] for e in entries if e["dir"] == "send" and e["msg"].get("type") == "user"), None)
    if first is None:
        raise ReplayError(f"{path}: the transcript never sends a user message (it was cut short?); record it again")
    prompt = meta.get("prompt")
    if not isinstance(prompt, str):
        content = first.get("message", {}).get("content")
        prompt = content if isinstance(content, str) else ""
    model = meta.get("model")
    return CassetteInfo(
        path=path,
        backend="claude-code",
        source=str(meta.get("recorded_from") or "unknown (the cassette does not say)"),
        prompt=prompt,
        model=model if isinstance(model, str) else None,
        approval_mode=_approval_mode(path, meta) or "default",
        paths_are_from=meta["paths_are_from"] if isinstance(meta.get("paths_are_from"), str) else None,
    )


def _claude_answers(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The client's recorded answers to the CLI's `can_use_tool` requests, by request id."""
    asked = {
        e["msg"].get("request_id") for e in entries if e["dir"] == "recv" and e["msg"].get("type") == "control_request"
    }
    answers: dict[str, dict[str, Any]] = {}
    for entry in entries:
        msg = entry["msg"]
        response = msg.get("response") if isinstance(msg.get("response"), dict) else {}
        if entry["dir"] == "send" and msg.get("type") == "control_response" and response.get("request_id") in asked:
            inner = response.get("response")
            answers[str(response["request_id"])] = inner if isinstance(inner, dict) else {"behavior": "deny"}
    return answers


def _claude_answering(
    answers: Mapping[str, Mapping[str, Any]],
) -> UserInputHandler:
    async def answer(request: UserInputRequest) -> UserInputResponse:
        recorded = answers.get(request.request_id.split(":", 1)[-1])
        if recorded is None:
            return UserInputResponse(cancelled=True)
        if request.source == "model-tool":
            given = (recorded.get("updatedInput") or {}).get("answers") or {}
            return UserInputResponse(answers={q.id: str(given.get(q.prompt, "")) for q in request.questions})
        if recorded.get("behavior") != "allow":
            if recorded.get("interrupt"):
                return UserInputResponse.stop_run()
            message = str(recorded.get("message") or "")
            said = message.split(". The user says: ", 1)
            return UserInputResponse.deny(said[1] if len(said) == 2 else None)
        if recorded.get("updatedPermissions"):
            return UserInputResponse.allow(always=True)
        changed = recorded.get("updatedInput")
        return UserInputResponse.allow(updated_input=dict(changed) if isinstance(changed, dict) else None)

    return answer


def _claude_params(
    entries: list[dict[str, Any]],
    run: ExecuteParams,
    scratch: Path,
    differences: list[str],
    recorded_cwd: str | None,
) -> ExecuteParams:

    def start(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAgentProcess:
        process = FakeAgentProcess(argv=argv, env=env)
        moved = None if recorded_cwd is None else (recorded_cwd, str(cwd))
        process.handler = _ClaudeTranscriptAgent(entries, process, differences, moved).answer
        return process

    options = {**run.backend_options_dict(), "start_process": start, "home": scratch / "home"}
    return run.model_copy(update={"backend_options": options})


class _ClaudeTranscriptAgent(TranscriptAgent):
    """The stand-in `claude`: answers the adapter's stream-json lines from a recorded transcript.

    Each line the adapter sends must match the next recorded `send` (the same `type`, and for a
    control request the same `subtype`, for an answer to a permission request the same `behavior`); the
    recorded `recv` lines up to the next `send` are then written out, the request ids of our own control
    requests (random per run) rewritten to the live ones, and the recorded run's cwd in them to the replay's
    (`moved`): the CLI's permission requests carry absolute paths, which unified's policy judged outside the
    replay's workspace, asking about a read the recording's policy allowed unasked. A mismatch ends the
    process (`TranscriptAgent`).
    """

    def __init__(
        self,
        entries: list[dict[str, Any]],
        process: FakeAgentProcess,
        differences: list[str],
        moved: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(entries, process, differences)
        self.moved = None if moved is None else tuple(json.dumps(path)[1:-1] for path in moved)
        self.ids: dict[str, str] = {}
        self.asked: dict[str, str] = {}
        """The CLI's permission requests played so far: request id -> the tool it asked about."""

    def _play_until_next_send(self) -> None:
        while self.position < len(self.entries) and self.entries[self.position]["dir"] != "send":
            reply = json.loads(json.dumps(self.entries[self.position]["msg"]))
            self.position += 1
            response = reply.get("response")
            if reply.get("type") == "control_response" and isinstance(response, dict):
                response["request_id"] = self.ids.get(str(response.get("request_id")), response.get("request_id"))
            request = reply.get("request")
            if reply.get("type") == "control_request" and isinstance(request, dict):
                self.asked[str(reply.get("request_id"))] = str(request.get("tool_name") or request.get("subtype"))
            line = json.dumps(reply, separators=(",", ":"))
            if self.moved is not None and self.moved[0] != self.moved[1]:
                line = line.replace(self.moved[0], self.moved[1])
            self.process.emit(line)

    def answer(self, line: str) -> None:
        message = json.loads(line)
        kind = message.get("type")
        subtype = (message.get("request") or {}).get("subtype") if kind == "control_request" else None
        if self.position >= len(self.entries):
            if kind == "control_request" and subtype != "interrupt":
                self._fail(f"the transcript has nothing more to answer {subtype}")
            return
        recorded = self.entries[self.position]["msg"]
        recorded_subtype = (recorded.get("request") or {}).get("subtype") if kind == "control_request" else None
        if recorded.get("type") != kind or recorded_subtype != subtype:
            self._fail(f"the adapter sent {subtype or kind}, the recording {recorded.get('type')}")
            return
        live, then = _claude_behavior(message), _claude_behavior(recorded)
        if kind == "control_response" and then is not None and live != then:
            asked = self.asked.get(str((message.get("response") or {}).get("request_id")), "a tool")
            self._fail(
                f"the answer to the permission request for {asked!r} is {live} where the recording answered {then}"
            )
            return
        self.position += 1
        if kind == "control_request":
            self.ids[str(recorded.get("request_id"))] = str(message.get("request_id"))
        self._play_until_next_send()


def _claude_behavior(message: Mapping[str, Any]) -> str | None:
    """`allow` or `deny`: what a `control_response` answered to a permission request (None: another answer)."""
    response = message.get("response")
    inner = response.get("response") if isinstance(response, dict) else None
    behavior = inner.get("behavior") if isinstance(inner, dict) else None
    return behavior if isinstance(behavior, str) else None


_INITIALIZE_RESULT: dict[str, Any] = {
    "protocolVersion": 1,
    "agentInfo": {"name": "gemini-cli (replayed transcript)"},
    "agentCapabilities": {"loadSession": False},
}


publish("unified.testing", ["ReplayDiverged", "ReplayError", "replay_events"], globals())
