"""Record and replay HTTP traffic of the API backends with vcrpy, secrets scrubbed, network blocked.

The API backends inject their own `httpx.AsyncClient` into google-genai, and vcrpy (>= 7) patches
httpx, so every request of a run can be recorded once and replayed offline::

    from unified.testing._cassettes import use_cassette

    with use_cassette(Path("cassettes/generate-content"), "text-turn") as cassette:
        events = [e async for e in execute(params)]

Replays use record mode `none`: a request the cassette lacks fails instead of reaching a
network, and leaving the block with interactions unplayed fails too (`cassette.all_played`).
A request matches a recorded one on method, path, query, the model and prompt in its body, and
the tool outputs it sends back (`tool_outputs`): a replay whose tools answered differently (another
workspace, another permission answer) fails naming the call, instead of playing on as recorded.
Setting `UNIFIED_RECORD=1` re-records every cassette used (mode `all`); `cassette_endpoint(turns)`
gives the `base_url` to point the run at either way (an unreachable address on replay, a
FakeGemini serving the script while recording). Recorded cassettes get
a YAML comment at the top saying what they were recorded against (`source`), and
`x-goog-api-key`, `authorization`, cookies and `key=`/`access_token=` query parameters never
reach the file; nor does, anywhere in a request or response (URL, header, body), a secret value
of the environment or a credential-shaped string (`AIza...`, `ya29....`, bearer tokens, OAuth
token fields): `scrub_text` replaces them, in vcrpy's log lines too, and the JSON-RPC transcript
recorders use it as well.
vcrpy comes with the `cassettes` extra: this module imports it only when used, and says how to
install it when it is missing.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from unified._exports import publish
from unified._redaction import is_secret_name, is_secret_query, redact_key_shapes, redactor
from unified.testing._yaml import import_extra

if TYPE_CHECKING:
    from unified.testing._scenario import Fault, Turn

__all__ = [
    "DEFAULT_SOURCE",
    "MATCH_ON",
    "RECORD_ENV",
    "REDACTED",
    "SECRET_HEADERS",
    "SECRET_QUERY",
    "SECRET_RESPONSE_HEADERS",
    "UNIFIED_KEY",
    "UNREACHABLE",
    "cassette_endpoint",
    "first_difference",
    "make_vcr",
    "metadata_of",
    "prompt",
    "recording",
    "scrub_body",
    "scrub_request",
    "scrub_response",
    "scrub_text",
    "tool_outputs",
    "use_cassette",
    "with_metadata",
]

RECORD_ENV = "UNIFIED_RECORD"
SECRET_HEADERS = (
    "x-goog-api-key",
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-goog-iam-authorization-token",
)
SECRET_RESPONSE_HEADERS = ("set-cookie",)
SECRET_QUERY = ("key", "access_token")
"""Named in the cassette's header; any parameter whose name says it carries a credential is scrubbed too
(`unified._redaction.is_secret_query`: `api_key`, `token`, `sig`, `pwd`, ...), and any header whose name does
(`is_secret_name`: `x-api-key`, `X-Auth-Token`)."""
REDACTED = "<redacted>"
MATCH_ON = ("method", "path", "query", "prompt", "tool_outputs")
"""Not host and port (a recording server's port is random), not the whole body (tool descriptions may
change): `prompt` compares the model named in the body and the user's prompt, `tool_outputs` the tool
results sent back to the model."""
UNIFIED_KEY = "unified"
"""The cassette's own top-level key (vcrpy reads only `interactions`): what the run needs besides HTTP,
such as the approval mode and the answers the caller gave (`record_run` writes it, a replay reads it)."""

DEFAULT_SOURCE = "unified.testing.FakeGemini on 127.0.0.1 (a local fake server), not Google's API"
UNREACHABLE = "http://127.0.0.1:9"
"""Where replays point a backend: a request vcrpy let through would fail to connect rather than reach anything."""


_TOKEN_FIELD = re.compile(
    r"""(?P<head>["']?\b(?:refresh_token|access_token|id_token|client_secret|api_?key)["']?\s*[:=]\s*["']?)"""
    r"""(?!<redacted>)(?P<value>[^\s"'&,;}]+)""",
    re.IGNORECASE,
)
"""OAuth token fields and api keys in JSON or form bodies: `"refresh_token": "..."`, `api_key=...`."""
_BEARER = re.compile(r"(?P<head>\b[Bb]earer\s+)(?!<redacted>)[A-Za-z0-9._~+/\-]{8,}=*")


def scrub_text(text: str, extra: Iterable[str] = ()) -> str:
    """`text` without the environment's secret values (and `extra`: those a run was given in code,
    `unified._redaction.run_secrets`) and without credential-shaped strings."""
    text = redact_key_shapes(redactor(extra=extra)(text, REDACTED), REDACTED)
    text = _BEARER.sub(lambda m: m["head"] + REDACTED, text)
    return _TOKEN_FIELD.sub(lambda m: m["head"] + REDACTED, text)


def scrub_body(body: bytes | str | None) -> bytes | str | None:
    """`scrub_text` for a recorded body; bytes that are not UTF-8 survive unchanged around what it replaces."""
    if isinstance(body, bytes):
        return scrub_text(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    return scrub_text(body) if isinstance(body, str) else body


_VCR_LOGGERS = ("vcr", "vcr.cassette", "vcr.matchers", "vcr.request", "vcr.stubs", "vcr.stubs.httpx_stubs")
"""vcrpy's loggers that print requests and responses (`Appending request ... and response ...`), unscrubbed."""


class _ScrubbingFilter(logging.Filter):
    """Scrubs a log record's text before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = scrub_text(record.getMessage()), None
        return True


_SCRUB_LOGS = _ScrubbingFilter()


def recording() -> bool:
    """True when `UNIFIED_RECORD=1`: cassettes are re-recorded instead of replayed."""
    return os.environ.get(RECORD_ENV, "").strip() == "1"


def scrub_request(request: Any) -> Any:
    """vcrpy `before_record_request` hook: redact credentials in headers, the URL and the body."""
    for name in list(request.headers):
        # by its name too (round 27): `x-api-key`, `X-Auth-Token`, a gateway's `api-key` kept their values
        if name.lower() in SECRET_HEADERS or is_secret_name(name):
            request.headers[name] = REDACTED
        else:
            request.headers[name] = scrub_text(request.headers[name])
    if any(key in SECRET_QUERY or is_secret_query(key) for key, _ in request.query):
        from urllib.parse import urlencode, urlsplit, urlunsplit

        parts = urlsplit(request.uri)
        query = urlencode([(k, REDACTED if k in SECRET_QUERY or is_secret_query(k) else v) for k, v in request.query])
        request.uri = urlunsplit(parts._replace(query=query))
    request.uri = scrub_text(request.uri)
    request.body = scrub_body(request.body_bytes)
    return request


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    """vcrpy `before_record_response` hook: drop cookies the server set, redact credentials in the rest."""
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in SECRET_RESPONSE_HEADERS:
            del headers[name]
        else:
            headers[name] = [scrub_text(value) for value in headers[name]]
    body = response.get("body") or {}
    content = scrub_body(body.get("string"))
    if content is not None:
        body["string"] = content
        size = len(content if isinstance(content, bytes) else content.encode())
        for name in list(headers):
            if name.lower() == "content-length":
                headers[name] = [str(size)]
    return response


class _AnnotatedYaml:
    """vcrpy's YAML serializer plus a leading comment that says where the cassette came from."""

    def __init__(self, source: str) -> None:
        self.source = source

    def serialize(self, cassette_dict: dict[str, Any]) -> str:
        yamlserializer = import_extra("vcr.serializers.yamlserializer", "writing a cassette")
        stamp = datetime.now(UTC).strftime("%Y-%m-%d")
        header = (
            f"# Recorded {stamp} against {self.source}.\n"
            f"# Secrets scrubbed ({', '.join(SECRET_HEADERS)}, query {', '.join(SECRET_QUERY)}, any header or query "
            "parameter named as a credential, secret values and credential-shaped strings in URLs and bodies).\n"
            f"# Re-record with {RECORD_ENV}=1.\n"
        )
        return header + str(yamlserializer.serialize(cassette_dict))

    def deserialize(self, cassette_string: str) -> dict[str, Any]:
        yamlserializer = import_extra("vcr.serializers.yamlserializer", "reading a cassette")
        data: dict[str, Any] = yamlserializer.deserialize(cassette_string)
        return data


def _prompt_of(request: Any) -> tuple[str | None, str | None]:
    """(model named in the body, the user's prompt text) of a generateContent or interactions request."""
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, TypeError):
        return None, None
    if not isinstance(body, dict):
        return None, None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    for content in body.get("contents") or []:  # generateContent: the first user turn
        if isinstance(content, dict) and content.get("role", "user") == "user":
            texts = [str(p["text"]) for p in content.get("parts", []) if isinstance(p, dict) and "text" in p]
            if texts:
                return model, "".join(texts)
    items = body.get("input")
    if isinstance(items, str):
        return model, items
    for item in items if isinstance(items, list) else []:  # interactions: the user_input item
        if isinstance(item, dict) and item.get("type") == "user_input":
            parts = item.get("content", [])
            return model, "".join(str(c.get("text", "")) for c in parts if isinstance(c, dict))
    return model, None


def prompt(live: Any, recorded: Any) -> None:
    """vcrpy matcher: the same model in the body and the same user prompt as the recording."""
    (model, text), (recorded_model, recorded_text) = _prompt_of(live), _prompt_of(recorded)
    if model != recorded_model:
        raise AssertionError(f"model {model!r} instead of the recorded {recorded_model!r}")
    if text != recorded_text:
        raise AssertionError(f"prompt {text!r} instead of the recorded {recorded_text!r}")


_RUN_IDS = re.compile(r"(?m)^(?P<head>(?:Process Group PGID|Background PIDs): )[\d, ]+$")
"""What differs between two runs of the same shell command (unified's shell tool reports its pids)."""


def _outputs_of(request: Any) -> list[tuple[str, str, str]]:
    """(tool name, call id, output as JSON) of every tool result a request sends back to the model."""
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, TypeError):
        return []
    found: list[tuple[str, str, str]] = []
    if not isinstance(body, dict):
        return found
    for content in body.get("contents") or []:  # generateContent: functionResponse parts of the history
        for part in content.get("parts", []) if isinstance(content, dict) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                output = json.dumps(response.get("response"), sort_keys=True, ensure_ascii=False)
                found.append((str(response.get("name")), str(response.get("id")), output))
    items = body.get("input")
    for item in items if isinstance(items, list) else []:  # interactions: function_result items
        if isinstance(item, dict) and item.get("type") == "function_result":
            output = json.dumps(item.get("result"), sort_keys=True, ensure_ascii=False)
            found.append((str(item.get("name")), str(item.get("call_id")), output))
    return [(name, call, _RUN_IDS.sub(lambda m: m["head"] + "<pid>", output)) for name, call, output in found]


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def tool_outputs(live: Any, recorded: Any) -> None:
    """vcrpy matcher: the request sends back the tool outputs the recorded one sent (pids aside)."""
    made, expected = _outputs_of(live), _outputs_of(recorded)
    for (name, call, output), (_, _, recorded_output) in zip(made, expected, strict=False):
        if output != recorded_output:
            raise AssertionError(
                f"the output of {name} ({call}) is {_short(output)} where the recording has {_short(recorded_output)}"
            )
    if len(made) != len(expected):
        raise AssertionError(
            f"it sends back {_count(len(made), 'tool output')} where the recording sent {len(expected) or 'none'}"
        )


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'s' * (number != 1)}" if number else f"no {thing}"


def metadata_of(text: str) -> dict[str, Any]:
    """The cassette's `unified:` block (empty when it has none), from the YAML text of the cassette."""
    from unified.testing._yaml import load_yaml

    data = load_yaml(text, "reading a cassette")
    block = data.get(UNIFIED_KEY) if isinstance(data, dict) else None
    return block if isinstance(block, dict) else {}


def with_metadata(text: str, metadata: Mapping[str, Any]) -> str:
    """The cassette's YAML text with its `unified:` block set to `metadata` (a top-level key, at the end)."""
    yaml = import_extra("yaml", "writing a cassette")

    class Dumper(yaml.SafeDumper):  # type: ignore[name-defined,misc]  # PyYAML has no type hints here
        """Multi-line text as a literal block, as a person would write a file's content."""

    def text_block(dumper: Any, data: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)

    Dumper.add_representer(str, text_block)
    block = yaml.dump({UNIFIED_KEY: dict(metadata)}, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=120)
    return text.rstrip("\n") + "\n" + str(block)


class _RequestLog:
    """Every request the code made inside a cassette, in order (scrubbed as vcrpy would record it)."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self._seen: set[tuple[str, str, bytes]] = set()

    def reset(self) -> None:
        """Forget what came through so far (vcrpy passes the cassette's own requests through on load)."""
        self.requests.clear()
        self._seen.clear()

    def __call__(self, request: Any) -> Any:
        request = scrub_request(request)
        body = request.body if isinstance(request.body, bytes) else str(request.body or "").encode()
        key = (request.method, request.uri, body)
        if key not in self._seen:  # vcrpy passes each request through here more than once
            self._seen.add(key)
            self.requests.append(request)
        return request


def first_difference(cassette: Any, made: list[Any]) -> str | None:
    """The first request the code made that no recorded request matches, and how it differs."""
    from vcr.matchers import requests_match

    for number, request in enumerate(made, 1):
        if any(requests_match(request, stored, cassette._match_on) for stored in cassette.requests):
            continue
        where = f"request {number} ({request.method} {urlsplit(request.uri).path})"
        similar = cassette.find_requests_with_most_matches(request)
        if not similar:
            return f"{where} is like none in the cassette"
        recorded_at = cassette.requests[number - 1] if number <= len(cassette.requests) else None
        same_place = [match for match in similar if match[0] is recorded_at]  # request n against recorded n
        stored, _, failed = (same_place or similar)[0]
        why = "; ".join(
            str(message) if name in _OWN_MATCHERS else f"{name}: {message}".strip().rstrip(":")
            for name, message in failed
        )
        recorded = f"{stored.method} {urlsplit(stored.uri).path}"
        than = (
            "the recording"
            if recorded == f"{request.method} {urlsplit(request.uri).path}"
            else f"the recorded {recorded}"
        )
        return f"{where} differs from {than}: {why}"
    return None


_OWN_MATCHERS = ("prompt", "tool_outputs")
"""Matchers whose messages say what differs on their own."""


def make_vcr(directory: Path, *, source: str = DEFAULT_SOURCE, log: _RequestLog | None = None) -> Any:
    """A `vcr.VCR` set up for unified's cassettes (record mode from `UNIFIED_RECORD`).

    `log`, if given, receives every request made under it (see `first_difference`).
    """
    vcr = import_extra("vcr", "an HTTP cassette")
    recorder = vcr.VCR(
        cassette_library_dir=str(directory),
        record_mode="all" if recording() else "none",
        match_on=list(MATCH_ON),
        before_record_request=log or scrub_request,
        before_record_response=scrub_response,
        decode_compressed_response=True,
    )
    for name in _VCR_LOGGERS:
        logging.getLogger(name).addFilter(_SCRUB_LOGS)  # a no-op when already there
    recorder.register_matcher("prompt", prompt)
    recorder.register_matcher("tool_outputs", tool_outputs)
    recorder.register_serializer("annotated-yaml", _AnnotatedYaml(source))
    recorder.serializer = "annotated-yaml"
    return recorder


@contextmanager
def use_cassette(
    directory: Path, name: str, *, source: str = DEFAULT_SOURCE, metadata: Mapping[str, Any] | None = None
) -> Iterator[Any]:
    """Replay (or, with `UNIFIED_RECORD=1`, record) `<directory>/<name>.yaml`.

    On replay, raises AssertionError when a request differs from the recorded ones (naming how) or
    the block left interactions of the cassette unplayed. `metadata` becomes the recorded
    cassette's `unified:` block (e.g. `{"workspace": {"a.txt": "alpha\\n"}}`, the files
    `unified replay` gives its fresh directory).
    """
    path = name if name.endswith(".yaml") else f"{name}.yaml"
    if not recording() and not (directory / path).is_file():
        raise FileNotFoundError(f"no cassette {directory / path}; record it with {RECORD_ENV}=1")
    log = _RequestLog()
    with make_vcr(directory, source=source, log=log).use_cassette(path) as cassette:
        log.reset()
        yield cassette
    if recording():
        if metadata:
            written = directory / path
            written.write_text(with_metadata(written.read_text(encoding="utf-8"), metadata), encoding="utf-8")
        return
    difference = first_difference(cassette, log.requests)
    if difference is not None:
        raise AssertionError(
            f"cassette {directory / path}: {difference}; re-record with {RECORD_ENV}=1 if the change is intended"
        )
    if not cassette.all_played:
        played = sum(cassette.play_counts.values())
        raise AssertionError(
            f"cassette {directory / path} has unplayed interactions ({played} of {len(cassette)} played): "
            f"the code made fewer requests than were recorded; re-record with {RECORD_ENV}=1 if that is intended"
        )


@asynccontextmanager
async def cassette_endpoint(turns: Iterable[Turn], faults: Mapping[int, Fault] | None = None) -> AsyncIterator[str]:
    """The `base_url` for a run inside `use_cassette`.

    On replay, `UNREACHABLE`. When recording (`UNIFIED_RECORD=1`), a FakeGemini serving `turns`,
    with each of `faults` injected at its request index, running until the block ends.
    """
    if not recording():
        yield UNREACHABLE
        return
    from unified.testing._fake_gemini import FakeGemini

    async with FakeGemini(turns) as server:
        for index, fault in (faults or {}).items():
            server.inject(fault, at_request=index)
        yield server.base_url


publish("unified.testing", ["cassette_endpoint", "scrub_text", "use_cassette"], globals())
