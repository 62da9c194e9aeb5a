"""doctor, routing and the run agree (issue 23): GOOGLE_API_KEY alone, Vertex AI without ADC, credentials in code.

What doctor and routing say comes from the same resolutions the runs use: `resolve_api_auth` for the API
backends, `detect_cli_auth` (the Gemini CLI's own choice over ACP) for gemini-cli. The runs themselves
against the real binary are in tests/e2e/gemini_cli/test_gemini_cli_auth_and_errors.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified import (
    ClaudeCodeOptions,
    CodexOptions,
    ExecuteParams,
    GeminiCliOptions,
    GenerateContentOptions,
    InteractionsOptions,
)
from unified._adapters.gemini_cli._launch import Launch
from unified._adapters.gemini_cli._options import gemini_cli_options
from unified._auth import NO_ADC, detect_auth, detect_cli_auth
from unified._cli.doctor import _backend_status
from unified._execute import EventStream
from unified._routing import options_auth, select_backend, select_backend_for
from unified.errors import RoutingError
from unified.events import ErrorEvent

FOUND = {"path": "/opt/bin", "found_by": "test", "version": "1.0.0", "problem": None}
BINARIES = dict.fromkeys(("gemini-cli", "claude-code", "codex"), FOUND)
VERTEX = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}


def _ready(name: str, env: dict[str, str], home: Path) -> tuple[bool, list[str]]:
    status = _backend_status(name, detect_auth(env, home=home), BINARIES)
    return status["ready"], status["problems"]


def test_google_api_key_alone_is_ready_on_gemini_cli_because_the_cli_gets_it(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"GOOGLE_API_KEY": "k-google"}
    assert _ready("gemini-cli", env, isolated_home) == (True, [])
    assert _ready("generate-content", env, isolated_home) == (True, [])
    monkeypatch.setenv("GOOGLE_API_KEY", "k-google")
    launch = Launch.of(ExecuteParams(prompt="x", backend="gemini-cli"), gemini_cli_options({"start_process": print}))
    assert launch.env["GEMINI_API_KEY"] == "k-google"  # the CLI reads only GEMINI_API_KEY
    monkeypatch.setenv("GEMINI_API_KEY", "k-gemini")
    launch = Launch.of(ExecuteParams(prompt="x", backend="gemini-cli"), gemini_cli_options({"start_process": print}))
    assert launch.env["GEMINI_API_KEY"] == "k-gemini"  # never replaced


@pytest.mark.anyio
async def test_vertex_without_adc_is_not_ready_anywhere_and_the_run_says_why(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("generate-content", "gemini-cli"):
        ready, problems = _ready(name, VERTEX, isolated_home)
        assert not ready
        assert any("no Application Default Credentials" in p or "GEMINI_API_KEY" in p for p in problems), problems
    with pytest.raises(RoutingError, match="no Application Default Credentials"):
        select_backend(detect_auth(VERTEX, home=isolated_home))
    for name, value in VERTEX.items():
        monkeypatch.setenv(name, value)
    params = ExecuteParams(prompt="hi", backend="generate-content", cwd=isolated_home)
    async with EventStream(params) as stream:
        events = [event async for event in stream]
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "auth_error"  # before any request, naming what to do
    assert "Application Default Credentials" in error.message or "gcloud auth" in str(error.message) + str(
        error.details
    )


def test_the_cli_over_acp_reads_its_own_auth_type_not_the_vertex_variable(isolated_home: Path) -> None:
    (mode,) = detect_cli_auth(VERTEX, isolated_home)
    assert (mode.mode, mode.usable) == ("api_key", False)  # what its session/new does: the API key type
    assert any("does not read GOOGLE_GENAI_USE_VERTEXAI over ACP" in note for note in mode.notes)
    settings = isolated_home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "vertex-ai"}}}))
    (mode,) = detect_cli_auth(VERTEX, isolated_home)
    assert (mode.mode, mode.problems) == ("vertex", (NO_ADC,))
    (express,) = detect_cli_auth({"GOOGLE_API_KEY": "k"}, isolated_home)
    assert (express.mode, express.usable, express.detail) == ("vertex", True, "express mode, key from GOOGLE_API_KEY")


@pytest.mark.parametrize(
    ("options", "backend", "unfit"),
    [
        pytest.param(GenerateContentOptions(api_key="k", base_url="http://127.0.0.1:9"), "generate-content", 4),
        pytest.param(InteractionsOptions(api_key="k"), "interactions", 4),
        pytest.param(GeminiCliOptions(env={"GEMINI_API_KEY": "k"}), "gemini-cli", 4),
        pytest.param(ClaudeCodeOptions(env={"ANTHROPIC_API_KEY": "k"}), "claude-code", 4),
        pytest.param(CodexOptions(api_key="k", base_url="http://127.0.0.1:9/v1"), "codex", 4),
        pytest.param({"api_key": "k"}, "generate-content", 2, id="a dict of the API backends' keys"),
        pytest.param({"env": {"GEMINI_API_KEY": "k"}, "pool_size": 0}, "gemini-cli", 2, id="a dict of gemini-cli's"),
        pytest.param({"env": {"ANTHROPIC_API_KEY": "k"}, "max_retries": 1}, "claude-code", 3, id="claude-code's"),
    ],
)
def test_auto_routes_on_credentials_given_in_code(isolated_home: Path, options: Any, backend: str, unfit: int) -> None:
    """No credential in the environment: the typed options (or a dict of one backend's keys) carry them."""
    params = ExecuteParams(prompt="hi", backend="auto", backend_options=options)
    with pytest.raises(RoutingError):
        select_backend_for(ExecuteParams(prompt="hi", backend="auto"))
    assert select_backend_for(params).backend == backend
    _, rejected = options_auth(params, detect_auth())
    assert len(rejected) == unfit  # the backends these options are not for
    assert backend not in rejected


@pytest.mark.parametrize(
    ("owner", "options"),
    [
        pytest.param("claude-code", {"env": {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}}),
        pytest.param("codex", {"api_key": "k", "base_url": "http://127.0.0.1:9/v1"}),
    ],
)
def test_a_resume_routes_to_its_owner_on_credentials_given_in_code(
    isolated_home: Path, owner: str, options: dict[str, object]
) -> None:
    """`resume` with `auto` routes to the session's own backend alone (`only`): the credentials the run gives
    in its options count there as for the Google backends (they failed with no_backend, 'no usable credentials')."""
    params = ExecuteParams(prompt="hi", backend="auto", backend_options=options)
    with pytest.raises(RoutingError, match=r"no usable credentials|needs"):
        select_backend_for(ExecuteParams(prompt="hi", backend="auto"), only=owner)
    assert select_backend_for(params, only=owner).backend == owner


def test_a_claude_login_in_the_home_option_counts(isolated_home: Path) -> None:
    home = isolated_home / "claude-home"
    credentials = home / ".claude" / ".credentials.json"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(json.dumps({"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": 0}}))
    params = ExecuteParams(prompt="hi", backend="auto", backend_options=ClaudeCodeOptions(home=home))
    selection = select_backend_for(params, only="claude-code")
    assert selection.backend == "claude-code"
    assert "Claude login" in selection.reason


def test_options_for_one_backend_route_only_to_it(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    params = ExecuteParams(prompt="hi", backend="auto", backend_options=GeminiCliOptions(pool_size=0))
    selection = select_backend_for(params)
    assert (selection.backend, selection.alternatives) == ("gemini-cli", ())
    with pytest.raises(RoutingError, match="does not take GeminiCliOptions"):
        select_backend_for(params, only="generate-content")
