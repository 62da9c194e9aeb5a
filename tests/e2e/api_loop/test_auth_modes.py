"""Each auth mode end to end: routing's reason, `doctor`'s JSON and the request the built client sends.

What `detect_auth` says must be what google-genai does, so every mode is checked three ways from the
same environment, against FakeGemini (which refuses what Google's servers refuse, `projects/None`
included). Vertex AI with ADC runs offline on credentials built in the test
(`google.oauth2.credentials.Credentials(token=...)`, passed as the `credentials` option): nothing
refreshes, nothing leaves 127.0.0.1. See docs/auth.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.oauth2.credentials import Credentials

from unified import RoutingError, execute
from unified._auth import detect_auth
from unified._cli.doctor import doctor_report
from unified._routing import select_backend
from unified.events import ErrorEvent, Result, UnifiedEvent
from unified.testing import REDACTED, FakeGemini
from unified.testing._scenario import InteractionTurn, ModelTurn, TextStep
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

KEY = "AIza-auth-mode-test-key-0123456789"
TOKEN = "ya29.auth-mode-test-token-0123456789"
MODEL = "gemini-2.5-flash"
BASE = "{base}"
"""Stands for FakeGemini's base URL in the tables below."""


@dataclass(frozen=True)
class Mode:
    env: dict[str, str]
    reason: str
    """The start of routing's reason (`{base}`: FakeGemini's URL)."""
    kind: str
    gc_path: str
    interactions_path: str
    bearer: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    """Run options on top of the environment (the Gemini API's host is moved only by a base URL)."""


MODES = {
    "api_key": Mode(
        env={"GEMINI_API_KEY": KEY},
        reason="generate-content: Gemini API key from GEMINI_API_KEY (key from GEMINI_API_KEY, "
        "to https://generativelanguage.googleapis.com)",
        kind="api_key",
        gc_path=f"/v1beta/models/{MODEL}:streamGenerateContent",
        interactions_path="/v1beta/interactions",
        options={"base_url": BASE},
    ),
    "gateway": Mode(
        env={"GOOGLE_GEMINI_BASE_URL": BASE, "GEMINI_API_KEY": KEY},
        reason="generate-content: Gateway (custom GOOGLE_GEMINI_BASE_URL) from GEMINI_API_KEY "
        "(key from GEMINI_API_KEY, to {base})",
        kind="gateway",
        gc_path=f"/v1beta/models/{MODEL}:streamGenerateContent",
        interactions_path="/v1beta/interactions",
    ),
    "vertex_express": Mode(
        env={"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_API_KEY": KEY, "GOOGLE_VERTEX_BASE_URL": BASE},
        reason="generate-content: Vertex AI from GOOGLE_GENAI_USE_VERTEXAI (express mode, key from GOOGLE_API_KEY, "
        "to {base})",
        kind="vertex_express",
        gc_path=f"/v1beta1/publishers/google/models/{MODEL}:streamGenerateContent",
        interactions_path="/v1beta1/interactions",
    ),
    "vertex_adc": Mode(
        # The key is ignored: google-genai lets a project from the environment win over a key from it.
        env={
            "GOOGLE_GENAI_USE_VERTEXAI": "true",
            "GOOGLE_CLOUD_PROJECT": "proj-1",
            "GOOGLE_CLOUD_LOCATION": "us-central1",
            "GOOGLE_API_KEY": KEY,
            "GOOGLE_VERTEX_BASE_URL": BASE,
        },
        reason="generate-content: Vertex AI from GOOGLE_GENAI_USE_VERTEXAI (with ADC, project proj-1 from "
        "GOOGLE_CLOUD_PROJECT, location us-central1, credentials {adc}, to {base})",
        kind="vertex_adc",
        gc_path=f"/v1beta1/projects/proj-1/locations/us-central1/publishers/google/models/{MODEL}:streamGenerateContent",
        interactions_path="/v1beta1/projects/proj-1/locations/us-central1/interactions",
        bearer=True,
        options={"credentials": Credentials(token=TOKEN)},  # type: ignore[no-untyped-call]
    ),
}


def _apply(server: FakeGemini, monkeypatch: pytest.MonkeyPatch, mode: Mode) -> dict[str, Any]:
    for name, value in mode.env.items():
        monkeypatch.setenv(name, value.replace(BASE, server.base_url))
    if mode.bearer:  # gcloud's ADC file, as `gcloud auth application-default login` leaves it (never read for a run
        # given credentials in code; without it doctor and routing rightly say Vertex AI has no credentials)
        adc = Path(os.environ["HOME"]) / ".config" / "gcloud" / "application_default_credentials.json"
        adc.parent.mkdir(parents=True, exist_ok=True)
        adc.write_text(
            json.dumps({"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"})
        )
    options = {k: v.replace(BASE, server.base_url) if isinstance(v, str) else v for k, v in mode.options.items()}
    return {"retry_delay_scale": 0.001, **options}


async def _run(backend: str, workspace: Path, options: dict[str, Any]) -> list[UnifiedEvent]:
    params = ExecuteParams(prompt="hi", backend=backend, model=MODEL, cwd=workspace, backend_options=options)
    async with execute(params) as stream:
        events = [event async for event in stream]
    assert isinstance(events[-1], Result)
    return events


def _doctor(tmp_path: Path) -> dict[str, Any]:
    """`doctor --json`'s data (only the auth part is under test)."""
    report = doctor_report(env={**os.environ, "PATH": str(tmp_path)})
    return dict(json.loads(json.dumps(report)))


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert KEY not in text
        assert TOKEN not in text


@pytest.mark.parametrize("name", list(MODES))
async def test_each_mode_is_said_and_sent_the_same_way(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    mode = MODES[name]
    gc_refused = mode.bearer and anyio_backend == "trio"
    # Known limit: google-genai's async token handling is asyncio-only, so generate-content refuses
    # Vertex AI with ADC on trio before sending anything (docs/auth.md); interactions runs it.
    turns = [] if gc_refused else [ModelTurn(text="gc")]
    with FakeGemini([*turns, InteractionTurn(steps=[TextStep(text="it")])]) as server:
        options = _apply(server, monkeypatch, mode)
        selection = select_backend(detect_auth())
        adc = str(Path(os.environ["HOME"]) / ".config" / "gcloud" / "application_default_credentials.json")
        assert selection.reason.startswith(mode.reason.replace(BASE, server.base_url).replace("{adc}", adc))
        doctor = _doctor(tmp_path)
        assert doctor["auth"]["api"]["kind"] == mode.kind
        ready = {b["backend"]: b for b in doctor["backends"]}
        assert ready["generate-content"]["ready"]
        assert doctor["auto"]["reason"] == selection.reason

        gc = await _run("generate-content", tmp_path, options)
        it = await _run("interactions", tmp_path, options)
        _no_secret(selection.reason, json.dumps(doctor), *(e.model_dump_json() for e in gc + it))

        if gc_refused:
            error = next(e for e in gc if isinstance(e, ErrorEvent))
            assert error.code == "backend_unavailable"
            assert [r.api_method for r in server.requests] == ["interactions.create"]
        else:
            assert isinstance(gc[-1], Result)
            assert gc[-1].final_text == "gc"
            [request] = server.requests_for("generateContentStream")
            assert request.path == mode.gc_path
        assert isinstance(it[-1], Result)
        assert it[-1].final_text == "it"
        for request in server.requests:
            if request.api_method == "interactions.create":
                assert request.path == mode.interactions_path
            assert ("authorization" in request.headers) is mode.bearer
            assert ("x-goog-api-key" in request.headers) is not mode.bearer
            assert request.headers.get("x-goog-api-key", REDACTED) == REDACTED
            assert "None" not in request.path
        assert server.problems == []


async def test_a_gateway_without_a_key_is_ready_on_the_cli_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeGemini() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        # The Gemini CLI sends its gateway requests with no key at all (docs/auth.md): only it is ready.
        selection = select_backend(detect_auth())
        assert selection.backend == "gemini-cli"
        with pytest.raises(RoutingError, match="a gateway without an API key") as caught:
            select_backend(detect_auth(), only="generate-content")
        assert "set GEMINI_API_KEY" in str(caught.value)
        doctor = _doctor(tmp_path)
        for backend in ("generate-content", "interactions"):
            status = next(b for b in doctor["backends"] if b["backend"] == backend)
            assert not status["ready"]
            assert any("a gateway without an API key" in p for p in status["problems"])
            events = await _run(backend, tmp_path, {})
            error = next(e for e in events if isinstance(e, ErrorEvent))
            assert (error.code, error.fatal) == ("auth_error", True)
            assert "GEMINI_API_KEY" in error.message
        assert server.requests == []  # known up front: nothing was sent


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({}, "GEMINI_API_KEY"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}, "GOOGLE_CLOUD_PROJECT"),
    ],
)
async def test_missing_credentials_are_the_same_auth_error_on_both_api_backends(
    env: dict[str, str], variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for backend in ("generate-content", "interactions"):
        events = await _run(backend, tmp_path, {})
        error = next(e for e in events if isinstance(e, ErrorEvent))
        assert (error.code, error.fatal) == ("auth_error", True)
        assert variable in error.message


async def test_a_code_assist_login_routes_to_the_cli_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    creds = isolated_home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(json.dumps({"access_token": TOKEN, "refresh_token": "r"}))
    # The CLI uses its login when its settings chose it (`/auth`), as `gemini` writes them.
    (creds.parent / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "oauth-personal"}}}))
    selection = select_backend(detect_auth())
    assert selection.reason.startswith(f"gemini-cli: Code Assist login (Gemini CLI OAuth) from {creds}")
    assert selection.alternatives == ()
    doctor = _doctor(tmp_path)
    status = {b["backend"]: b for b in doctor["backends"]}
    assert status["gemini-cli"]["auth"] == ["code_assist"]
    assert not status["generate-content"]["ready"]
    events = await _run("generate-content", tmp_path, {})
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "auth_error"
    _no_secret(json.dumps(doctor), selection.reason, *(e.model_dump_json() for e in events))
