"""Record and replay HTTP traffic of the API backends with vcrpy, secrets scrubbed, network blocked.

The API backends inject their own `httpx.AsyncClient` into google-genai, and vcrpy (>= 7) patches
httpx, so every request of a run can be recorded once and replayed offline::

    from unified.testing.cassettes import use_cassette

    with use_cassette(Path("cassettes/generate-content"), "text-turn") as cassette:
        events = [e async for e in execute(params)]

Replays use record mode `none`: a request the cassette lacks fails instead of reaching a
network, and leaving the block with interactions unplayed fails too (`cassette.all_played`).
Setting `UNIFIED_RECORD=1` re-records every cassette used (mode `all`); `cassette_endpoint(turns)`
gives the `base_url` to point the run at either way (an unreachable address on replay, a
FakeGemini serving the script while recording). Recorded cassettes get
a YAML comment at the top saying what they were recorded against (`source`), and
`x-goog-api-key`, `authorization`, cookies and `key=`/`access_token=` query parameters never
reach the file; nor does, anywhere in a request or response (URL, header, body), a secret value
of the environment or a credential-shaped string (`AIza...`, `ya29....`, bearer tokens, OAuth
token fields): `scrub_text` replaces them, in vcrpy's log lines too, and the JSON-RPC transcript
recorders use it as well.
vcrpy is a test dependency: this module imports it only when used.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unified._internal.redact import redact_key_shapes, redactor

if TYPE_CHECKING:
    from unified.testing.scenario import Fault, Turn

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
REDACTED = "<redacted>"
MATCH_ON = ("method", "path", "query")
"""Not host and port (a recording server's port is random), not body (tool descriptions may change)."""

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


def scrub_text(text: str) -> str:
    """`text` without the environment's secret values and without credential-shaped strings."""
    text = redact_key_shapes(redactor()(text, REDACTED), REDACTED)
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
        if name.lower() in SECRET_HEADERS:
            request.headers[name] = REDACTED
        else:
            request.headers[name] = scrub_text(request.headers[name])
    if any(key in SECRET_QUERY for key, _ in request.query):
        from urllib.parse import urlencode, urlsplit, urlunsplit

        parts = urlsplit(request.uri)
        query = urlencode([(k, REDACTED if k in SECRET_QUERY else v) for k, v in request.query])
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
        from vcr.serializers import yamlserializer

        stamp = datetime.now(UTC).strftime("%Y-%m-%d")
        header = (
            f"# Recorded {stamp} against {self.source}.\n"
            f"# Secrets scrubbed ({', '.join(SECRET_HEADERS)}, query {', '.join(SECRET_QUERY)}, "
            "secret values and credential-shaped strings in URLs and bodies).\n"
            f"# Re-record with {RECORD_ENV}=1.\n"
        )
        return header + str(yamlserializer.serialize(cassette_dict))

    def deserialize(self, cassette_string: str) -> dict[str, Any]:
        from vcr.serializers import yamlserializer

        data: dict[str, Any] = yamlserializer.deserialize(cassette_string)
        return data


def make_vcr(directory: Path, *, source: str = DEFAULT_SOURCE) -> Any:
    """A `vcr.VCR` set up for unified's cassettes (record mode from `UNIFIED_RECORD`)."""
    import vcr

    recorder = vcr.VCR(
        cassette_library_dir=str(directory),
        record_mode="all" if recording() else "none",
        match_on=list(MATCH_ON),
        before_record_request=scrub_request,
        before_record_response=scrub_response,
        decode_compressed_response=True,
    )
    for name in _VCR_LOGGERS:
        logging.getLogger(name).addFilter(_SCRUB_LOGS)  # a no-op when already there
    recorder.register_serializer("annotated-yaml", _AnnotatedYaml(source))
    recorder.serializer = "annotated-yaml"
    return recorder


@contextmanager
def use_cassette(directory: Path, name: str, *, source: str = DEFAULT_SOURCE) -> Iterator[Any]:
    """Replay (or, with `UNIFIED_RECORD=1`, record) `<directory>/<name>.yaml`.

    On replay, raises AssertionError if the block left interactions of the cassette unplayed.
    """
    path = name if name.endswith(".yaml") else f"{name}.yaml"
    if not recording() and not (directory / path).is_file():
        raise FileNotFoundError(f"no cassette {directory / path}; record it with {RECORD_ENV}=1")
    with make_vcr(directory, source=source).use_cassette(path) as cassette:
        yield cassette
    if not recording() and not cassette.all_played:
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
    from unified.testing.fake_gemini import FakeGemini

    async with FakeGemini(turns) as server:
        for index, fault in (faults or {}).items():
            server.inject(fault, at_request=index)
        yield server.base_url
