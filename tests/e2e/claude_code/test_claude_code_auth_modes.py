"""Each of Claude Code's auth modes end to end: what routing and `doctor` say, and what the real CLI sends.

What `detect_auth` reports must be what the binary does, so every mode is checked from one
environment three ways: routing's reason, `doctor`'s JSON, and a run of the real `claude` against
FakeAnthropic (which answers the first-party, Bedrock and Vertex paths, and refuses a first-party
request without credentials as Anthropic does). An API key and a Claude login would reach
api.anthropic.com: those runs move the CLI to FakeAnthropic with ANTHROPIC_BASE_URL given only
to the child (the backend's `env` option), which detection never sees.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import claude_home, run_claude
from unified import RoutingError
from unified._auth import detect_auth
from unified._cli.doctor import doctor_report
from unified._routing import select_backend
from unified.events import ErrorEvent, Result
from unified.testing import REDACTED, FakeAnthropic, ModelTurn

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def no_gemini_probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`doctor` would start the gemini binary for its version (seconds of Node); these tests look at
    claude-code only."""
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", str(tmp_path / "no-gemini-here"))


KEY = "sk-ant-api03-auth-mode-test-key-0123456789"
BASE = "{base}"


@dataclass(frozen=True)
class Mode:
    env: dict[str, str]
    reason: str
    path: str
    header: str | None
    child_env: dict[str, str] = field(default_factory=dict)
    login: bool = False


MODES = {
    "anthropic_api_key": Mode(
        env={"ANTHROPIC_API_KEY": KEY},
        reason="claude-code: Anthropic API key from ANTHROPIC_API_KEY (key from ANTHROPIC_API_KEY, to "
        "https://api.anthropic.com)",
        path="/v1/messages",
        header="x-api-key",
        child_env={"ANTHROPIC_BASE_URL": BASE},
    ),
    "anthropic_gateway": Mode(
        env={"ANTHROPIC_BASE_URL": BASE, "ANTHROPIC_AUTH_TOKEN": KEY},
        reason="claude-code: Anthropic gateway (custom ANTHROPIC_BASE_URL) from ANTHROPIC_AUTH_TOKEN (key from "
        "ANTHROPIC_AUTH_TOKEN, to {base})",
        path="/v1/messages",
        header="authorization",
    ),
    "bedrock": Mode(
        env={
            "CLAUDE_CODE_USE_BEDROCK": "1",
            "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",
            "AWS_REGION": "us-east-1",
            "ANTHROPIC_BEDROCK_BASE_URL": BASE,
        },
        reason="claude-code: Claude on Amazon Bedrock from CLAUDE_CODE_USE_BEDROCK (region us-east-1, no request "
        "signing (CLAUDE_CODE_SKIP_BEDROCK_AUTH), to {base})",
        path="/invoke-with-response-stream",
        header=None,
    ),
    "claude_vertex": Mode(
        env={
            "CLAUDE_CODE_USE_VERTEX": "1",
            "CLAUDE_CODE_SKIP_VERTEX_AUTH": "1",
            "CLOUD_ML_REGION": "us-east5",
            "ANTHROPIC_VERTEX_PROJECT_ID": "fake-project",
            "ANTHROPIC_VERTEX_BASE_URL": BASE,
        },
        reason="claude-code: Claude on Google Vertex AI from CLAUDE_CODE_USE_VERTEX (project fake-project, region "
        "us-east5, no credentials (CLAUDE_CODE_SKIP_VERTEX_AUTH), to {base})",
        path="/projects/fake-project/locations/us-east5/publishers/anthropic/models/",
        header=None,
    ),
    "claude_login": Mode(
        env={},
        reason="claude-code: Claude login (Claude Code OAuth) from {credentials} (subscription max)",
        path="/v1/messages",
        header="authorization",
        child_env={"ANTHROPIC_BASE_URL": BASE},
        login=True,
    ),
}


def _write_login(home: Path) -> Path:
    creds = home / ".claude" / ".credentials.json"
    creds.parent.mkdir(parents=True, exist_ok=True)
    expires = int((time.time() + 24 * 3600) * 1000)  # not expired: the CLI would try to refresh it
    oauth = {
        "accessToken": "sk-ant-oat01-FAKE-access-token-for-tests",
        "refreshToken": "sk-ant-ort01-FAKE-refresh-token-for-tests",
        "expiresAt": expires,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max",
    }
    creds.write_text(json.dumps({"claudeAiOauth": oauth}))
    return creds


@pytest.mark.parametrize("name", list(MODES))
async def test_each_mode_is_said_and_sent_the_same_way(
    name: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mode = MODES[name]
    async with FakeAnthropic([ModelTurn(text=f"Answered through {name}.")]) as server:
        for variable, value in mode.env.items():
            monkeypatch.setenv(variable, value.replace(BASE, server.base_url))
        credentials = _write_login(claude_home()) if mode.login else None
        auth = detect_auth()
        assert auth.has(name), auth.describe()  # type: ignore[arg-type]
        selection = select_backend(auth)
        expected = mode.reason.replace(BASE, server.base_url).replace("{credentials}", str(credentials))
        assert selection.backend == "claude-code"
        assert selection.reason == expected
        report = doctor_report()
        [status] = [b for b in report["backends"] if b["backend"] == "claude-code"]
        assert status["ready"], status["problems"]
        assert report["auto"]["backend"] == "claude-code"
        child = {k: v.replace(BASE, server.base_url) for k, v in mode.child_env.items()}
        events = await run_claude(server, workspace, "Hello", options={"env": child}, backend="auto")
        [request] = server.requests_for("messages")
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", [e for e in events if isinstance(e, ErrorEvent)]
    assert mode.path in request.path
    if mode.header is not None:
        assert request.headers.get(mode.header) == REDACTED, request.headers
    else:
        assert "x-api-key" not in request.headers
        assert "authorization" not in request.headers


async def test_no_credentials_is_said_by_routing_and_doctor_and_is_an_auth_error(workspace: Path) -> None:
    with pytest.raises(RoutingError, match="no usable credentials"):
        select_backend(detect_auth(), prefer="claude-code", only="claude-code")
    [status] = [b for b in doctor_report()["backends"] if b["backend"] == "claude-code"]
    assert not status["ready"]
    async with FakeAnthropic([ModelTurn(text="Never sent.")]) as server:
        events = await run_claude(server, workspace, "Hello", options={"env": {}})
        assert not server.requests_for("messages"), "the CLI sends nothing without credentials"
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "auth_error"


async def test_a_gateway_without_a_key_is_not_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    auth = detect_auth()
    mode = auth.get("anthropic_gateway")
    assert mode is not None
    assert not mode.usable
    assert "without a key" in mode.problems[0]
    [status] = [b for b in doctor_report()["backends"] if b["backend"] == "claude-code"]
    assert not status["ready"]


async def test_your_own_claude_login_is_named_but_never_used(isolated_home: Path) -> None:
    own = isolated_home / ".claude" / ".credentials.json"
    own.parent.mkdir(parents=True)
    own.write_text("{}")
    mode = detect_auth().get("claude_login")
    assert mode is not None
    assert not mode.usable
    assert "never reads or writes ~/.claude" in mode.problems[0]
    assert own.read_text() == "{}"
