"""Bad input round 21, generate-content's error answers over real HTTP (google-genai against a loopback server): an
error whose body holds no `message` (a JSON string, an object of another shape, an empty or blank body) was quoted
as google-genai's `str()`, "401 None. nope" or a Python repr "{'message': '', 'status': 'Unauthorized'}"; now the
body as it came, or "an empty answer". The answers that were right (a gateway's HTML page, a JSON error, a body not
JSON) are pinned beside them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.foundation.test_bad_input_round21 import _answers, _events, _options
from unified import ExecuteParams
from unified.events import ErrorEvent, Result

pytestmark = pytest.mark.anyio


async def _error(tmp_path: Path, status: int, body: bytes, backend: str = "generate-content") -> ErrorEvent:
    with _answers([(status, body)] * 2) as server:
        params = ExecuteParams(
            prompt="hi",
            backend=backend,
            model="gemini-2.5-flash",
            cwd=tmp_path,
            backend_options=_options(server),
        )
        events = await _events(params)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1, errors
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert final.error is not None
    assert errors[0].message in final.error or final.error in errors[0].message
    return errors[0]


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
@pytest.mark.parametrize(
    ("status", "body", "code", "said"),
    [
        (401, b'"nope"', "auth_error", "): nope ("),
        (403, b'{"foo": 1}', "auth_error", '): {"foo": 1} ('),
        (400, b"[1, 2]", "bad_request", "): [1, 2] ("),
        (401, b"", "auth_error", "): an empty answer ("),
        (403, b"  \n", "auth_error", "): an empty answer ("),
    ],
    ids=["json-string", "json-object", "json-array", "empty", "blank"],
)
async def test_an_error_without_the_apis_message_quotes_the_body(
    tmp_path: Path, backend: str, status: int, body: bytes, code: str, said: str
) -> None:
    """FAILED before but for the Interactions client's json-string (read right already): "401 None. nope", "403
    None. {'foo': 1}", "Error code: 403 - {'foo': 1}", "Error code: 401", or google-genai's repr of its wrapper,
    "{'message': '', 'status': 'Unauthorized'}"."""
    error = await _error(tmp_path, status, body, backend)
    assert error.code == code
    what = "refused the credentials" if code == "auth_error" else "rejected the request"
    assert error.message.startswith(f"the Gemini API {what} ({status}")
    assert said in error.message
    assert "None." not in error.message
    assert "Error code" not in error.message
    assert "{'" not in error.message


@pytest.mark.parametrize(
    ("status", "page", "title"),
    [(502, b"Bad Gateway", "Bad Gateway"), (503, b"Service Unavailable", "Service Unavailable"), (504, b"", "")],
)
async def test_a_gateways_html_page_is_named_by_its_title(tmp_path: Path, status: int, page: bytes, title: str) -> None:
    """Pin: a 5xx HTML page is retried, then named by its title and size, never quoted whole."""
    body = b"<html><head><title>" + page + b"</title><style>p{}</style></head><body><p>x</p></body></html>"
    error = await _error(tmp_path, status, body)
    assert error.code == "backend_error"
    assert error.retryable
    assert f"({status} " in error.message
    assert "an HTML page (" + (f"{title!r}, " if title else "") + f"{len(body)} bytes)" in error.message
    assert "<style>" not in error.message


async def test_an_api_error_keeps_its_own_words(tmp_path: Path) -> None:
    """Pin: the API's own envelope is quoted by its message and status."""
    body = json.dumps({"error": {"code": 400, "message": "Invalid value at 'x'", "status": "INVALID_ARGUMENT"}})
    error = await _error(tmp_path, 400, body.encode())
    assert error.code == "bad_request"
    assert "the Gemini API rejected the request (400 INVALID_ARGUMENT): Invalid value at 'x'" in error.message
