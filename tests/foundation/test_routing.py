"""backend="auto": which backend each auth mode leads to, and the explanations when none qualifies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.not_regular import NOT_REGULAR, not_a_regular_file
from unified._auth import AuthReport, detect_auth
from unified._files import NotRegularFile
from unified._routing import requirements_of, select_backend, select_backend_for
from unified.errors import ConfigurationError, RoutingError
from unified.events import UserInputRequest, UserInputResponse
from unified.types import ExecuteParams, ImageInput, StdioMcpServer, ThinkingConfig

NO_HOME = Path("/nonexistent-unified-home")


def _auth(env: dict[str, str]) -> AuthReport:
    return detect_auth(env, home=NO_HOME)


API_KEY = {"GEMINI_API_KEY": "k"}
VERTEX = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}
GATEWAY = {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8080", "GEMINI_API_KEY": "k"}


def _code_assist(home: Path) -> AuthReport:
    """A Google login as `gemini` leaves it: the credentials and the auth type its settings select (over ACP
    the CLI uses the login only when selected)."""
    creds = home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir(parents=True, exist_ok=True)
    creds.write_text('{"access_token": "t"}', encoding="utf-8")
    selected = {"security": {"auth": {"selectedType": "oauth-personal"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(selected), encoding="utf-8")
    return detect_auth({}, home=home)


def _adc(tmp_path: Path) -> dict[str, str]:
    """Application Default Credentials as a file (`GOOGLE_APPLICATION_CREDENTIALS`): Vertex AI needs them."""
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps({"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"})
    )
    return {"GOOGLE_APPLICATION_CREDENTIALS": str(adc)}


def test_api_key_prefers_generate_content_with_the_others_as_alternatives() -> None:
    selection = select_backend(_auth(API_KEY))
    assert selection.backend == "generate-content"
    assert selection.alternatives == ("gemini-cli", "interactions")
    assert "GEMINI_API_KEY" in selection.reason


def test_vertex_excludes_interactions_and_needs_adc(tmp_path: Path) -> None:
    selection = select_backend(_auth({**VERTEX, **_adc(tmp_path)}))
    assert selection.backend == "generate-content"
    # The Gemini CLI reads no GOOGLE_GENAI_USE_VERTEXAI over ACP: only its settings' auth type selects Vertex AI.
    assert selection.alternatives == ()
    assert "Vertex AI" in selection.reason
    with pytest.raises(RoutingError, match="no Application Default Credentials"):
        select_backend(_auth(VERTEX))  # what the run would meet at its first request


def test_vertex_on_gemini_cli_follows_the_clis_own_auth_type(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "vertex-ai"}}}))
    auth = detect_auth({**VERTEX, **_adc(tmp_path)}, home=tmp_path)
    assert auth.usable_modes_for("gemini-cli") == ("vertex",)
    assert select_backend(auth, prefer="gemini-cli").backend == "gemini-cli"
    without_adc = detect_auth(VERTEX, home=tmp_path)
    (mode,) = without_adc.modes_for("gemini-cli")
    assert mode.problems[0].startswith("no Application Default Credentials")


def test_google_api_key_alone_is_ready_on_every_backend() -> None:
    """The CLI reads only GEMINI_API_KEY; the gemini-cli backend hands it GOOGLE_API_KEY, so it is ready too."""
    auth = _auth({"GOOGLE_API_KEY": "k"})
    assert select_backend(auth).alternatives == ("gemini-cli", "interactions")
    (mode,) = auth.modes_for("gemini-cli")
    assert (mode.mode, mode.usable, mode.detail) == (
        "api_key",
        True,
        "key from GOOGLE_API_KEY, to https://generativelanguage.googleapis.com/",
    )


def test_code_assist_login_only_works_with_gemini_cli(tmp_path: Path) -> None:
    selection = select_backend(_code_assist(tmp_path))
    assert selection.backend == "gemini-cli"
    assert selection.alternatives == ()
    assert "Code Assist" in selection.reason


def test_gateway_works_with_every_api_backend() -> None:
    selection = select_backend(_auth(GATEWAY))
    assert selection.backend == "generate-content"
    assert set(selection.alternatives) == {"gemini-cli", "interactions"}
    assert selection.reason.startswith("generate-content: Gateway (custom GOOGLE_GEMINI_BASE_URL) from GEMINI_API_KEY")


def test_a_gateway_without_a_key_is_ready_only_for_the_gemini_cli() -> None:
    """google-genai will not start without a key; the CLI's gateway type sends its requests without one."""
    auth = _auth({"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8080"})
    selection = select_backend(auth)
    assert (selection.backend, selection.alternatives) == ("gemini-cli", ())
    with pytest.raises(RoutingError, match=r"a gateway without an API key.*set GEMINI_API_KEY"):
        select_backend(auth, only="generate-content")


def test_nothing_present_explains_what_to_set() -> None:
    with pytest.raises(RoutingError) as caught:
        select_backend(_auth({}))
    message = str(caught.value)
    assert "no usable credentials" in message
    assert "GEMINI_API_KEY" in message
    assert "gemini` once and log in" in message
    assert "`unified demo` runs every backend against local fake servers" in message


def test_with_some_credentials_the_hint_does_not_offer_the_demo(tmp_path: Path) -> None:
    with pytest.raises(RoutingError) as caught:
        select_backend(_code_assist(tmp_path), requires=["background_agents", "subagent_ids_on_deltas"])
    assert "ANTHROPIC_API_KEY" in str(caught.value)  # claude-code has both: its credentials are named
    assert "unified demo" not in str(caught.value)


def test_incomplete_credentials_are_named() -> None:
    with pytest.raises(
        RoutingError,
        match=r"Vertex AI from GOOGLE_GENAI_USE_VERTEXAI .*: incomplete, Vertex AI with ADC needs a project",
    ):
        select_backend(_auth({"GOOGLE_GENAI_USE_VERTEXAI": "true"}))


def test_capability_picks_the_only_backend_offering_it() -> None:
    auth = _auth(API_KEY)
    assert select_backend(auth, ["background_agents"]).backend == "interactions"


def test_partial_support_loses_to_full_or_emulated() -> None:
    selection = select_backend(_auth(API_KEY), ["server_side_tools"])
    assert selection.backend == "interactions"  # full beats generate-content's and gemini-cli's partial
    assert selection.alternatives == ("generate-content", "gemini-cli")
    assert "server_side_tools full" in selection.reason
    emulated = select_backend(_auth(API_KEY), ["permission_requests", "plan_mode", "usage_accuracy"])
    assert emulated.backend == "generate-content"  # emulated by unified counts as supported
    assert emulated.alternatives == ("interactions", "gemini-cli")  # gemini-cli's usage_accuracy is partial
    delegating = select_backend(_auth(API_KEY), ["subagent_lifecycle"])
    assert delegating.backend == "generate-content"  # unified's delegate tool beats gemini-cli's partial invoke_agent
    assert delegating.alternatives == ("interactions", "gemini-cli")


def test_capability_missing_for_the_only_authenticated_backend(tmp_path: Path) -> None:
    with pytest.raises(RoutingError) as caught:
        select_backend(_code_assist(tmp_path), ["background_agents"])
    message = str(caught.value)
    assert "no backend offering background_agents can run with the credentials present" in message
    assert "gemini-cli does not support background_agents" in message
    assert "generate-content needs" in message
    assert "for interactions, claude-code: set GEMINI_API_KEY" in message


def test_no_backend_offers_the_combination() -> None:
    with pytest.raises(RoutingError, match="drop a requirement") as caught:
        select_backend(_auth(API_KEY), ["background_agents", "subagent_lifecycle"], only="generate-content")
    assert "generate-content does not support background_agents" in str(caught.value)


def test_unknown_capability_is_refused() -> None:
    with pytest.raises(RoutingError, match="unknown capability 'teleport'"):
        select_backend(_auth(API_KEY), ["teleport"])


def test_prefer_wins_when_it_qualifies_and_is_explained_when_not() -> None:
    auth = _auth(API_KEY)
    assert select_backend(auth, prefer="interactions").backend == "interactions"
    assert select_backend(auth, prefer="scripted").backend == "scripted"
    passed_over = select_backend(auth, ["background_agents"], prefer="generate-content")
    assert passed_over.backend == "interactions"
    assert "preferred generate-content does not support background_agents" in passed_over.reason
    with pytest.raises(ConfigurationError, match="unknown backend"):
        select_backend(auth, prefer="nope")


def test_scripted_is_never_chosen_alone() -> None:
    with pytest.raises(RoutingError):
        select_backend(_auth({}))


async def _answer(request: UserInputRequest) -> UserInputResponse:
    return UserInputResponse.allow()


def test_requirements_of_params(tmp_path: Path) -> None:
    assert requirements_of(ExecuteParams(prompt="hi")) == set()
    params = ExecuteParams(
        prompt="hi",
        resume="abc12345",
        mcp_servers=(StdioMcpServer(name="s", command="srv"),),
        thinking=ThinkingConfig(budget=1024),
        on_user_input=_answer,
    )
    assert requirements_of(params) == {"session_resume", "mcp", "thinking", "permission_requests"}
    yolo = ExecuteParams(prompt="hi", approval_mode="yolo", on_user_input=_answer)
    assert requirements_of(yolo) == set()
    assert requirements_of(ExecuteParams(prompt="hi", approval_mode="plan")) == {"plan_mode"}
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(8))
    assert requirements_of(ExecuteParams(prompt="hi", images=(ImageInput.from_path(png),))) == {"image_input"}
    hidden = ExecuteParams(prompt="hi", thinking=ThinkingConfig(level="low", include_thoughts=False))
    assert requirements_of(hidden) == set()


def test_select_backend_for_uses_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert select_backend_for(ExecuteParams(prompt="hi")).backend == "generate-content"
    assert select_backend_for(ExecuteParams(prompt="hi", approval_mode="plan")).backend == "generate-content"
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(RoutingError):
        select_backend_for(ExecuteParams(prompt="hi"))


@pytest.mark.e2e  # runs a real subprocess
def test_light_imports() -> None:
    code = (
        "import sys, json, unified, unified._routing, unified._auth, unified.capabilities;"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {'google','acp','mcp','typer','rich'}"
        " or m.startswith('google.genai'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_thoughts_from_a_model_that_does_not_think_are_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "a-key-long-enough-0000")
    thinking = ThinkingConfig(level="low")
    image_model = ExecuteParams(prompt="draw", model="gemini-3-pro-image-preview", thinking=thinking)
    with pytest.raises(RoutingError, match="gemini-3-pro-image-preview does not think"):
        select_backend_for(image_model)
    for thinker in ("gemini-3-flash-preview", "some-future-model"):  # a thinking model, a model with no facts
        assert select_backend_for(image_model.model_copy(update={"model": thinker})).backend == "generate-content"


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_an_image_path_that_is_not_a_file_is_refused_not_waited_on(tmp_path: Path, kind: str) -> None:
    with not_a_regular_file(tmp_path / "a.png", kind) as path, pytest.raises(NotRegularFile, match="not a regular"):
        ImageInput.from_path(path)
