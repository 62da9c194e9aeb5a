"""Every translator, fed recorded native messages with one value of the wrong type (issue 24, "Malformed input").

A native message comes from a model or a binary that may be broken or hostile. For each backend, real
messages (the project's cassettes, the bench transcripts, the shipped real recordings) are replayed into
the translator as its adapter feeds them; then, at every path of each message (every key of every nested
object, the first elements of every list), the value there is replaced by each of: null, nothing (the key
or element removed), an int, a float, a bool, a string, an empty string, a list, an object, a list nested
200 deep, and, where a string was, a string of 100,000 characters. The variant is fed after the message's
predecessors, so the translator is in the state a real stream puts it in, followed by what the adapter
does once the stream ends (a turn's `finish`, its usage and history, a prompt's end).

Each variant must either be accepted, every event it produced valid (`model_validate(model_dump())`), or
raise a `UnifiedError` (the typed error that reaches the consumer as an `error` event). An
`AttributeError`/`TypeError`/`KeyError`/... from inside a translator would reach the consumer as
`internal_error`, "a bug in unified", which blames unified for the backend's fault: the test lists every
one, naming the seed, the message, the path and the replacement.

Bounded to stay fast: messages of a shape already fuzzed (the hundredth text delta) are replayed but not
fuzzed again, lists are entered at their first two elements, a message at its first 120 paths.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import pickle
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from unified._adapters.claude_code._outcome import error_from_result, status_of_result
from unified._adapters.claude_code._translate import StreamTranslator, TurnResult, usage_from_model_usage
from unified._adapters.codex._translate import AppServerTranslator
from unified._adapters.gemini_cli._outcome import prompt_end
from unified._adapters.gemini_cli._translate import AcpTranslator
from unified._adapters.generate_content._translate import GenerateContentTranslator
from unified._adapters.interactions._translate import InteractionsTranslator
from unified._binary.jsonrpc import as_dict
from unified.errors import UnifiedError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # google-genai warns of each unknown enum value

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "cassettes"
TRANSCRIPTS = ROOT / "bench" / "transcripts"
RECORDINGS = ROOT / "tests" / "recordings"
"""Real Gemini CLI recordings shipped with the project (`unified.testing.recordings()`): no seed depends on a
folder outside the clone."""

MAX_LIST_ELEMENTS = 2
MAX_PATHS_PER_MESSAGE = 120
LONG = "L" * 100_000
DEPTH = 200
_MISSING: Any = object()

Path_ = tuple[str | int, ...]


def _deep_list() -> list[Any]:
    value: list[Any] = []
    for _ in range(DEPTH):
        value = [value]
    return value


REPLACEMENTS: list[tuple[str, Callable[[], Any]]] = [
    ("null", lambda: None),
    ("missing", lambda: _MISSING),
    ("int", lambda: 7),
    ("float", lambda: 2.5),
    ("bool", lambda: True),
    ("string", lambda: "x"),
    ("empty string", lambda: ""),
    ("list", lambda: [1, "a"]),
    ("object", lambda: {"k": "v"}),
    (f"list nested {DEPTH} deep", _deep_list),
]
"""Each call makes a fresh value: a translator may keep (and grow) what it was given."""


# --- messages and their paths -----------------------------------------------------------------------


def _paths(value: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) below `value`: every key of every object, the first elements of every list."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, key), inner
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:MAX_LIST_ELEMENTS]):
            yield (*prefix, index), inner
            yield from _paths(inner, (*prefix, index))


def _replaced(message: Any, path: Path_, new: Any) -> Any:
    """`message` with the value at `path` replaced by `new` (removed for `_MISSING`): only the containers
    on the path are copied, the rest is shared (a translator never changes what it is given in place...
    and if one does, the next variant still starts from the seed: see `_fresh`)."""
    top = copy.copy(message)
    node = top
    for step in path[:-1]:
        child = copy.copy(node[step])
        node[step] = child
        node = child
    last = path[-1]
    if new is _MISSING:
        del node[last]
    else:
        node[last] = new
    return top


def _shape(value: Any) -> Any:
    """The message's skeleton (its keys and the types of its leaves): a shape fuzzed once is not fuzzed again."""
    if isinstance(value, dict):
        return tuple((k, _shape(v)) for k, v in value.items())
    if isinstance(value, list):
        return ("list", tuple(_shape(v) for v in value[:MAX_LIST_ELEMENTS]))
    if isinstance(value, str) and len(value) < 40:
        return value  # a kind, a status, a method: the value matters
    return type(value).__name__


def _variants(message: Any) -> Iterator[tuple[str, Any]]:
    for count, (path, old) in enumerate(_paths(message)):
        if count >= MAX_PATHS_PER_MESSAGE:
            return
        where = "/".join(str(step) for step in path)
        replacements = REPLACEMENTS + ([("long string", lambda: LONG)] if isinstance(old, str) else [])
        for name, make in replacements:
            yield f"{where} <- {name}", _replaced(message, path, make())


# --- what counts as accepted --------------------------------------------------------------------------


def _check(produced: Any) -> None:
    """Every event (and every model a marker carries) must survive its own validation."""
    for item in produced if isinstance(produced, list) else [produced]:
        if isinstance(item, BaseModel):
            type(item).model_validate(item.model_dump())
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for field in dataclasses.fields(item):
                inner = getattr(item, field.name)
                if isinstance(inner, BaseModel):
                    type(inner).model_validate(inner.model_dump())


@dataclasses.dataclass
class Seed:
    """One recorded stream: `messages` in order, fed by `feed` into what `start` makes; `end` is what the
    adapter does with the translator once the stream is over."""

    name: str
    messages: list[Any]
    start: Callable[[], Any]
    feed: Callable[[Any, Any], Any]
    end: Callable[[Any], Any] | None = None


def _escaped(exc: Exception) -> str:
    """The exception and the line of unified that raised it (the innermost frame of `src/unified`)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/unified/" in f.filename]
    at = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = " ".join(str(exc).split())[:160]
    return f"{type(exc).__name__}{at}: {text}"


def _fuzz(seeds: list[Seed]) -> tuple[int, list[str]]:
    """(variants fed, failures) over `seeds`."""
    failures: list[str] = []
    fed = 0
    shapes: set[Any] = set()
    for seed in seeds:
        translator = seed.start()
        for index, message in enumerate(seed.messages):
            shape = _shape(message)
            if shape not in shapes:
                shapes.add(shape)
                snapshot = pickle.dumps(translator)  # a copy of the state to start each variant from
                for what, variant in _variants(message):
                    fed += 1
                    state = pickle.loads(snapshot)
                    try:
                        _check(seed.feed(state, variant))
                        if seed.end is not None:
                            _check(seed.end(state))
                    except UnifiedError:
                        pass  # a typed error: what a malformed message must give
                    except Exception as exc:
                        failures.append(f"{seed.name} message {index}: {what}: {_escaped(exc)}")
            with contextlib.suppress(UnifiedError):  # a seed may hold an error on purpose (an error answer)
                seed.feed(translator, message)
    return fed, failures


def _assert_clean(backend: str, seeds: list[Seed]) -> None:
    assert seeds, f"no seeds found for {backend}"
    fed, failures = _fuzz(seeds)
    assert fed > 500, f"only {fed} variants for {backend}: the seeds are gone?"
    assert not failures, f"{len(failures)} of {fed} variants escaped the {backend} translator untyped:\n" + "\n".join(
        failures
    )


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _received(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(a cassette's header, the messages the binary sent, in order)."""
    lines = _jsonl(path)
    return lines[0], [entry["msg"] for entry in lines[1:] if entry.get("dir") == "recv"]


def _sse_bodies(path: Path) -> list[list[Any]]:
    """The SSE events (parsed `data:` lines) of each response of a VCR cassette."""
    recorded = yaml.safe_load(path.read_text())
    bodies = []
    for interaction in recorded["interactions"]:
        body = interaction["response"]["body"]
        text = body.get("string", "") if isinstance(body, dict) else str(body)
        events = []
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    events.append(json.loads(line[5:]))
                except ValueError:
                    continue  # not an event (a keep-alive, `[DONE]`)
        if events:
            bodies.append(events)
    return bodies


# --- claude code: stream-json lines --------------------------------------------------------------------


def _claude_feed(translator: StreamTranslator, message: Any) -> Any:
    # the run (`_run._pump`) keeps control lines to itself and hands every other line to the translator
    if message.get("type") in ("control_request", "control_response", "control_cancel_request"):
        return []
    items: list[Any] = translator.line(message)
    for result in [item for item in items if isinstance(item, TurnResult)]:  # as `_run._result` reads it
        items.append(usage_from_model_usage(result.raw.get("model_usage_since_last_result")))
        if status_of_result(result.raw) == "error":
            raise error_from_result(result.raw)
    return items


def test_claude_code_translator() -> None:
    seeds = []
    for path in sorted((CASSETTES / "claude-code").glob("*.jsonl")):
        _, messages = _received(path)
        seeds.append(Seed(f"claude-code/{path.name}", messages, StreamTranslator, _claude_feed))
    _assert_clean("claude-code", seeds)


# --- codex: app-server notifications -------------------------------------------------------------------


def _codex_seed(name: str, header: dict[str, Any], messages: list[dict[str, Any]]) -> Seed:
    thread = next(
        m["result"]["thread"]["id"] for m in messages if isinstance(m.get("result"), dict) and "thread" in m["result"]
    )
    turn = next(
        (m["result"]["turn"]["id"] for m in messages if isinstance(m.get("result"), dict) and "turn" in m["result"]),
        "turn",
    )

    def start() -> AppServerTranslator:
        translator = AppServerTranslator(main_thread=thread, cwd=header.get("paths_are_from"))
        translator.start_turn(turn)
        return translator

    def feed(translator: AppServerTranslator, message: Any) -> Any:
        # as `_run` does: answers and server requests (the approval bridge's) are not the translator's
        if "method" not in message or "id" in message:
            return []
        return translator.notification(str(message["method"]), as_dict(message.get("params")))

    return Seed(name, messages, start, feed)


def test_codex_translator() -> None:
    seeds = []
    for path in sorted((CASSETTES / "codex").glob("*.jsonl")):
        header, messages = _received(path)
        seeds.append(_codex_seed(f"codex/{path.name}", header, messages))
    _assert_clean("codex", seeds)


# --- gemini-cli: ACP messages --------------------------------------------------------------------------


def _acp_feed(translator: AcpTranslator, message: Any) -> Any:
    # as `_run._pump` and the permission bridge do
    params = as_dict(message.get("params"))
    method = message.get("method")
    if method == "session/update":
        return translator.update(params.get("update") or {})
    if method == "session/request_permission" and "id" in message:
        return translator.permission_request(params, "/ws")
    if "result" in message or "error" in message:
        if isinstance(message.get("result"), dict) and "stopReason" in message["result"]:
            end = prompt_end(message, "abcd1234")
            return [end.usage] if end.usage is not None else []
        if "error" in message and "id" in message:
            prompt_end(message, "abcd1234")
    return []


def test_gemini_cli_translator() -> None:
    seeds = []
    for path in sorted((CASSETTES / "gemini-cli").glob("*.jsonl")):
        _, messages = _received(path)
        seeds.append(Seed(f"gemini-cli/{path.name}", messages, AcpTranslator, _acp_feed))
    for name in ("parallel-tools", "policy-headless-shell-denied", "memory.multi-function-call"):
        path = TRANSCRIPTS / "acp" / f"{name}.jsonl"
        if path.exists():
            seeds.append(Seed(f"bench/acp/{name}", _jsonl(path), AcpTranslator, _acp_feed))
    _assert_clean("gemini-cli", seeds)


# --- generateContent: streamed chunks ------------------------------------------------------------------


def _gc_feed(translator: GenerateContentTranslator, chunk: Any) -> Any:
    return translator.feed(chunk)


def _gc_end(translator: GenerateContentTranslator) -> Any:
    # what `_turns.send` and `keep_turn` read once the stream ended
    events = translator.finish()
    out: list[Any] = [*events, translator.usage]
    _ = (translator.malformed, translator.truncated, translator.fatal, translator.calls, translator.text)
    if translator.parts:
        translator.content()
    return [e for e in out if e is not None]


def _gc_streams() -> list[tuple[str, list[Any]]]:
    streams = []
    for path in sorted((CASSETTES / "generate-content").glob("*.yaml")):
        for n, body in enumerate(_sse_bodies(path)):
            streams.append((f"generate-content/{path.name}#{n}", body))
    for name in ("hooks-system.allow-tool.responses", "parallel-tools.responses"):  # thoughts, signed calls
        for n, call in enumerate(_jsonl(RECORDINGS / name)):
            response = call["response"]
            streams.append((f"recordings/{name}#{n}", response if isinstance(response, list) else [response]))
    return streams


def test_generate_content_translator() -> None:
    seeds = [
        Seed(name, chunks, lambda: GenerateContentTranslator(turn=1), _gc_feed, _gc_end)
        for name, chunks in _gc_streams()
    ]
    _assert_clean("generate-content", seeds)


# --- the Interactions API: streamed events -------------------------------------------------------------


def _interactions_start() -> InteractionsTranslator:
    translator = InteractionsTranslator()
    translator.begin_interaction()
    return translator


def _interactions_end(translator: InteractionsTranslator) -> Any:
    # what `_turns` reads once the interaction's stream ended (steps kept for a `store=false` session)
    translator.model_steps()
    return [translator.usage]


def test_interactions_translator() -> None:
    seeds = []
    for path in sorted((CASSETTES / "interactions").glob("*.yaml")):
        for n, body in enumerate(_sse_bodies(path)):
            seeds.append(
                Seed(
                    f"interactions/{path.name}#{n}",
                    body,
                    _interactions_start,
                    InteractionsTranslator.feed,
                    _interactions_end,
                )
            )
    for name in ("parallel-tools", "memory.multi-function-call"):
        path = TRANSCRIPTS / "interactions" / f"{name}.jsonl"
        if path.exists():
            seeds.append(
                Seed(
                    f"bench/interactions/{name}",
                    _jsonl(path),
                    _interactions_start,
                    InteractionsTranslator.feed,
                    _interactions_end,
                )
            )
    _assert_clean("interactions", seeds)


@pytest.mark.parametrize(
    ("message", "path", "expected"),
    [
        ({"a": {"b": [1, 2, 3]}}, ("a", "b", 1), {"a": {"b": [1, None, 3]}}),
        ({"a": {"b": 1, "c": 2}}, ("a", "c"), {"a": {"b": 1}}),
    ],
)
def test_a_variant_changes_one_path_and_leaves_the_seed_alone(message: Any, path: Path_, expected: Any) -> None:
    before = copy.deepcopy(message)
    new = None if path[-1] == 1 else _MISSING
    assert _replaced(message, path, new) == expected
    assert message == before
