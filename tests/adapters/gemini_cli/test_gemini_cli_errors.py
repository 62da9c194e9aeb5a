"""The CLI's errors as the API backends' codes: the JSON-RPC errors 0.61 really sends (measured against FakeGemini,
see tests/e2e/gemini_cli/test_gemini_cli_auth_and_errors.py), missing credentials, and no Node on PATH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified._adapters.gemini_cli._launch import GEMINI_CLI, gemini_env
from unified._adapters.gemini_cli._outcome import error_from_acp
from unified._binary.install import NodeUnavailable, require_node
from unified._binary.jsonrpc import RpcError


def _api(code: int, status: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message, "status": status}})


CASES = [
    # 0.61 passes a 4xx on as the JSON-RPC code, with the API's whole error body as the message
    pytest.param(400, _api(400, "INVALID_ARGUMENT", "Request contains an invalid argument."), "bad_request", id="400"),
    pytest.param(401, _api(401, "UNAUTHENTICATED", "Request had invalid credentials."), "auth_error", id="401"),
    pytest.param(403, _api(403, "PERMISSION_DENIED", "The caller does not have permission."), "auth_error", id="403"),
    pytest.param(429, _api(429, "RESOURCE_EXHAUSTED", "Quota exceeded."), "rate_limited", id="429"),
    # a missing model comes as code 500 with the API's text
    pytest.param(500, "models/unknown is not found for API version v1beta.", "model_not_found", id="404 as 500"),
    pytest.param(-32603, "RESOURCE_EXHAUSTED: quota", "rate_limited", id="quota in the text"),
    pytest.param(-32000, "Gemini API key is missing or not configured.", "auth_error", id="no key (session/new)"),
    pytest.param(-32000, "Authentication required.", "auth_error", id="no credentials"),
    pytest.param(-32603, "No more mock responses for generateContent", "backend_error", id="anything else"),
    # a stream whose connection dropped once open: node's fetch says "terminated", the CLI gives it code 500 (it was
    # `backend_error` "the Gemini API failed (500)"; e2e: test_gemini_cli_bad_input.py)
    pytest.param(500, "terminated", "stream_interrupted", id="cut stream"),
    pytest.param(500, "the job was terminated by the API", "backend_error", id="terminated in a sentence"),
]


@pytest.mark.parametrize(("code", "message", "expected"), CASES)
def test_cli_errors_get_the_api_backends_codes(code: int, message: str, expected: str) -> None:
    error = error_from_acp(RpcError("session/prompt", {"code": code, "message": message}), "line one\nline two\n")
    assert error.code == expected
    assert error.details["cli_message"] == message  # the CLI's own message
    assert error.details["stderr_tail"] == "line one\nline two"
    if expected == "auth_error":
        assert error.hint is not None
        assert "GEMINI_API_KEY" in error.hint


def test_the_api_message_is_in_the_error_not_the_json() -> None:
    error = error_from_acp(RpcError("session/prompt", {"code": 400, "message": _api(400, "INVALID_ARGUMENT", "Bad.")}))
    assert error.message == "session/prompt: the Gemini API rejected the request (400 INVALID_ARGUMENT): Bad."
    assert (error.details["http_status"], error.details["status"]) == (400, "INVALID_ARGUMENT")


def _script(tmp_path: Path, shebang: str) -> Path:
    binary = tmp_path / "gemini"
    binary.write_text(f"{shebang}\nconsole.log('hi')\n")
    binary.chmod(0o755)
    return binary


def _native(path: Path) -> Path:
    """An executable that begins as Node.js does (an ELF), which `require_node` takes as Node.js itself: it is never
    run (a shim would be asked which Node it runs)."""
    path.write_bytes(b"\x7fELF" + bytes(60))
    path.chmod(0o755)
    return path


def test_no_node_on_path_is_backend_unavailable_naming_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(NodeUnavailable) as caught:
        require_node(GEMINI_CLI, _script(tmp_path, "#!/usr/bin/env node"), {"PATH": str(tmp_path / "empty")})
    assert caught.value.code == "backend_unavailable"
    assert "Node.js was not found on PATH" in caught.value.message
    assert caught.value.hint is not None
    assert "install Node.js 20 or newer" in caught.value.hint
    assert caught.value.details["missing"] == "node"


def test_a_node_on_path_or_a_binary_that_is_no_node_script_passes(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    node = _native(bin_dir / "node")  # Node.js itself: nothing to ask it
    assert require_node(GEMINI_CLI, _script(tmp_path, "#!/usr/bin/env node"), {"PATH": str(bin_dir)}) == (str(node),)
    require_node(GEMINI_CLI, _script(tmp_path, "#!/bin/sh"), {"PATH": str(tmp_path / "empty")})


def test_a_node_that_went_away_is_missed_at_the_next_run(tmp_path: Path) -> None:
    """The node found on a PATH is remembered between runs, but checked again each time: once it is
    gone (and none other is on the PATH), the next run is refused with the same clear error."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    node = _native(bin_dir / "node")
    binary = _script(tmp_path, "#!/usr/bin/env node")
    require_node(GEMINI_CLI, binary, {"PATH": str(bin_dir)})
    node.unlink()
    with pytest.raises(NodeUnavailable):
        require_node(GEMINI_CLI, binary, {"PATH": str(bin_dir)})


def test_the_machine_s_system_settings_are_read_again_when_they_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = tmp_path / "system-settings.json"
    settings.write_text(json.dumps({"ui": {"theme": "one"}}))
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(settings))
    first = json.loads(Path(gemini_env()["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    assert first["ui"] == {"theme": "one"}
    assert first["general"]["enableAutoUpdate"] is False  # ours, merged in
    settings.write_text(json.dumps({"ui": {"theme": "a different one"}}))
    second = json.loads(Path(gemini_env()["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    assert second["ui"] == {"theme": "a different one"}
    settings.unlink()
    assert "ui" not in json.loads(Path(gemini_env()["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
