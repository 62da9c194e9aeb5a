"""What `unified doctor` and `backend="auto"` say about OpenAI credentials is what a codex run does.

Each case sets the environment the way a user would (OPENAI_API_KEY / OPENAI_BASE_URL / a ChatGPT
login in the Codex home), asks doctor and routing, then runs: the run reaches the server they named,
with the credential they named, or fails with the problem they named."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._cli.doctor import doctor_report
from unified._execute import EventStream
from unified._routing import select_backend_for
from unified.errors import RoutingError
from unified.events import ErrorEvent, Result, ToolResult, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeOpenAI, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def collect(params: ExecuteParams) -> list[UnifiedEvent]:
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params) as stream:
            return [event async for event in stream]


def codex_status(report: dict[str, Any]) -> dict[str, Any]:
    return next(b for b in report["backends"] if b["backend"] == "codex")


def mode(report: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((m for m in report["auth"]["modes"] if m["mode"] == name), None)


async def test_a_key_and_a_base_url_in_the_environment_reach_that_server(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeOpenAI([ModelTurn(text="Reached.")], api_key="sk-env-key-0123456789") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        report = doctor_report()
        found = mode(report, "openai_base_url")
        assert found is not None
        assert found["usable"]
        assert codex_status(report)["ready"]
        assert report["auto"]["backend"] == "codex"
        params = ExecuteParams(prompt="hello", backend="auto", model=CODEX_MODEL, cwd=workspace)
        assert select_backend_for(params).backend == "codex"
        events = await collect(params)
        requests = server.requests
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.final_text == "Reached."
    # FakeOpenAI refuses any other key (401); no WebSocket attempt, plain HTTP to the custom provider
    assert [(r.method, r.path) for r in requests] == [("POST", "/v1/responses")]


async def test_a_base_url_without_a_key_is_a_problem_doctor_names_and_the_run_reports(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    report = doctor_report()
    found = mode(report, "openai_base_url")
    assert found is not None
    assert not found["usable"]
    assert "OPENAI_API_KEY" in found["problems"][0]
    assert not codex_status(report)["ready"]
    with pytest.raises(RoutingError):
        select_backend_for(ExecuteParams(prompt="x", cwd=workspace))
    events = await collect(ExecuteParams(prompt="hello", backend="codex", cwd=workspace))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "configuration_error"
    assert "OPENAI_API_KEY" in error.message


async def test_no_credentials_no_codex(workspace: Path) -> None:
    report = doctor_report()
    assert not codex_status(report)["ready"]
    assert "needs credentials" in codex_status(report)["problems"][0]
    events = await collect(ExecuteParams(prompt="hello", backend="codex", cwd=workspace))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "backend_unavailable"
    assert "no credentials" in error.message


def _jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


async def test_a_chatgpt_login_in_the_codex_home_is_what_the_run_uses(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_home = tmp_path / "my-codex"
    user_home.mkdir()
    auth = {
        "https://api.openai.com/auth": {"chatgpt_account_id": "acct-1", "chatgpt_plan_type": "plus"},
        "exp": 4000000000,
    }
    access = _jwt(auth)
    login = {
        "auth_mode": "chatgpt",
        "OPENAI_API_KEY": None,
        "tokens": {
            "id_token": _jwt({"email": "me@example.invalid", **auth}),
            "access_token": access,
            "refresh_token": "rt-1",
            "account_id": "acct-1",
        },
        "last_refresh": "2026-12-01T00:00:00Z",
    }
    (user_home / "auth.json").write_text(json.dumps(login))
    monkeypatch.setenv("CODEX_HOME", str(user_home))
    report = doctor_report()
    found = mode(report, "chatgpt_login")
    assert found is not None
    assert found["usable"]
    assert codex_status(report)["ready"]
    assert report["auto"]["backend"] == "codex"
    async with FakeOpenAI() as server:
        root = server.base_url.removesuffix("/v1")
        params = ExecuteParams(
            prompt="hello",
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            backend_options={"chatgpt_base_url": f"{root}/backend-api/", "provider_timeout_s": 2.0},
        )
        events = await collect(params)
        requests = server.requests
    # The login's own token went to ChatGPT's routes (the fake answers none of them): the run used it,
    # and ended in a typed error instead of waiting for a server that never answers.
    assert any(r.path.startswith("/backend-api/") and r.headers.get("authorization") == "<redacted>" for r in requests)
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    assert next(e for e in events if isinstance(e, ErrorEvent)).code in ("backend_error", "auth_error")
    assert json.loads((user_home / "auth.json").read_text()) == login, (
        "the user's login file is never rewritten for nothing"
    )
    assert not (user_home / "sessions").exists(), "the run lived in unified's own Codex home"


async def test_the_models_commands_see_no_key_and_no_stray_variable(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_PROJECT_SETTING", "visible-only-if-allowlisted")
    call = FunctionCall(name="run_shell_command", args={"command": "env"})
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        params = ExecuteParams(
            prompt="env please",
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            approval_mode="yolo",
            backend_options={
                "base_url": server.base_url,
                "api_key": "sk-secret-key-0123456789",
                "env": {"EXTRA_GIVEN": "yes"},
            },
        )
        events = await collect(params)
    output = next(e for e in events if isinstance(e, ToolResult)).output or ""
    assert "PATH=" in output
    assert "EXTRA_GIVEN=yes" in output
    assert "OPENAI_API_KEY" not in output
    assert "sk-secret-key" not in output
    assert "[REDACTED]" not in output
    assert "MY_PROJECT_SETTING" not in output
    assert os.environ["MY_PROJECT_SETTING"]
