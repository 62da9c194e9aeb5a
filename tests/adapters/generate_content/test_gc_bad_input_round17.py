"""Bad input round 17, the Gemini API's error answers of odd shapes, as google-genai hands them on (`APIError`, whose
`message` and `status` are the body's, whatever their type). A 500 whose `error.message` is a number ended the run
as `internal_error` (a TypeError in `api_errors._page_said`'s regex); now each is the status's typed error, the odd
value quoted as its JSON. Measured against a raw loopback server: 200 with an HTML page, 401/403/404/413 with plain,
empty, HTML and non-envelope bodies, gzip garbage, a chunked body cut, a status line that is no HTTP were typed
already; only this one was not."""

from __future__ import annotations

from typing import Any, cast

import pytest
from google.genai import errors

from unified._adapters.generate_content._failures import failure_from_exception
from unified._internal.api_errors import error_from_status


@pytest.mark.parametrize(
    ("code", "error", "kind", "said"),
    [
        (500, {"code": "abc", "message": 5, "status": []}, "backend_error", "(500): 5"),
        (503, {"message": ["over", "loaded"], "status": {"x": 1}}, "backend_error", '["over", "loaded"]'),
        (400, {"message": {"nested": True}, "status": "INVALID_ARGUMENT"}, "bad_request", '{"nested": true}'),
        (401, {"message": None, "status": 7}, "auth_error", "(401)"),
        (429, {"message": 1.5, "status": "RESOURCE_EXHAUSTED"}, "rate_limited", "1.5"),
    ],
)
def test_an_error_body_whose_message_or_status_is_no_string_is_the_status_s_typed_error(
    code: int, error: dict[str, Any], kind: str, said: str
) -> None:
    failure = failure_from_exception(errors.APIError(code, {"error": error}), "gemini-2.5-flash", 90.0)
    assert failure is not None
    assert failure.error.code == kind, failure.error.message
    assert said in failure.error.message


@pytest.mark.parametrize("status", [[], {"code": 1}, 404, True], ids=["list", "object", "number", "bool"])
def test_a_status_that_is_no_string_is_left_out_of_the_error_s_words(status: object) -> None:
    error = error_from_status(404, cast(Any, status), "models/x is not found", body=None, model="gemini-x")
    assert error.code == "model_not_found"
    assert "(404): models/x is not found" in error.message
    assert error.details["status"] is None
