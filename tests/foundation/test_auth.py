"""Auth detection from the environment and the isolated home; no secret ever kept or shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified._auth import NO_ADC, detect_auth, resolve_api_auth
from unified._redaction import REDACTED, redact, secret_values

SECRET = "AIzaSy-a-fake-secret-value-1234567890"


def _write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_nothing_found_in_a_clean_home(isolated_home: Path) -> None:
    report = detect_auth()
    assert report.modes == ()
    assert report.usable_modes == ()
    assert report.describe() == "no credentials found"


def test_api_key_google_wins_over_gemini() -> None:
    report = detect_auth({"GEMINI_API_KEY": SECRET, "GOOGLE_API_KEY": SECRET + "x"})
    mode = report.get("api_key")
    assert mode is not None
    assert mode.source == "GOOGLE_API_KEY"
    assert any("both set" in note for note in mode.notes)
    assert report.usable_modes == ("api_key",)


def test_gemini_api_key_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    mode = detect_auth().get("api_key")
    assert mode is not None
    assert mode.source == "GEMINI_API_KEY"


ADC = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}
VERTEX_PROJECT_ENV = {
    "GOOGLE_GENAI_USE_VERTEXAI": "true",
    "GOOGLE_CLOUD_PROJECT": "proj-1",
    "GOOGLE_CLOUD_LOCATION": "europe-west4",
}


def _gcloud_adc(home: Path) -> Path:
    return _write_json(home / ".config" / "gcloud" / "application_default_credentials.json", ADC)


def test_vertex_from_env_flag_project_and_location(isolated_home: Path) -> None:
    _gcloud_adc(isolated_home)
    report = detect_auth(VERTEX_PROJECT_ENV)
    mode = report.get("vertex")
    assert mode is not None
    assert mode.usable
    assert mode.source == "GOOGLE_GENAI_USE_VERTEXAI"
    assert mode.detail is not None
    assert "proj-1" in mode.detail
    assert "europe-west4" in mode.detail


def test_vertex_without_adc_is_not_usable_where_no_metadata_server_gives_them(isolated_home: Path) -> None:
    """What the run would find at its first request (google-auth's DefaultCredentialsError), said up front."""
    mode = detect_auth(VERTEX_PROJECT_ENV).get("vertex")
    assert mode is not None
    assert not mode.usable
    assert "no Application Default Credentials" in mode.problems[0]
    on_cloud_run = detect_auth({**VERTEX_PROJECT_ENV, "K_SERVICE": "svc", "NO_GCE_CHECK": ""}).get("vertex")
    assert on_cloud_run is not None
    assert on_cloud_run.usable  # the metadata server gives them there
    assert any("metadata server" in note for note in on_cloud_run.notes)


def test_vertex_flag_without_project_is_incomplete() -> None:
    mode = detect_auth({"GOOGLE_GENAI_USE_VERTEXAI": "1"}).get("vertex")
    assert mode is not None
    assert not mode.usable
    assert "GOOGLE_CLOUD_PROJECT" in mode.problems[0]


def test_vertex_from_gcloud_adc_file_reads_only_the_project(isolated_home: Path) -> None:
    adc = _write_json(
        isolated_home / ".config" / "gcloud" / "application_default_credentials.json",
        {"type": "authorized_user", "refresh_token": SECRET, "quota_project_id": "adc-proj"},
    )
    unflagged = detect_auth().get("vertex")
    # Without GOOGLE_GENAI_USE_VERTEXAI the API backends use the Gemini API: the file alone is not usable.
    assert unflagged is not None
    assert not unflagged.usable
    assert unflagged.source == str(adc)
    assert "GOOGLE_GENAI_USE_VERTEXAI" in unflagged.problems[0]
    report = detect_auth({"HOME": str(isolated_home), "GOOGLE_GENAI_USE_VERTEXAI": "true"})
    mode = report.get("vertex")
    assert mode is not None
    assert mode.usable
    assert mode.source == "GOOGLE_GENAI_USE_VERTEXAI"
    assert f"project adc-proj from the credentials file, location global, credentials {adc}" in (mode.detail or "")
    assert SECRET not in report.model_dump_json()


def test_vertex_from_google_application_credentials(tmp_path: Path) -> None:
    key_file = _write_json(tmp_path / "sa.json", {"type": "service_account", "private_key": SECRET})
    env = {
        "GOOGLE_APPLICATION_CREDENTIALS": str(key_file),
        "GOOGLE_CLOUD_PROJECT": "p",
        "GOOGLE_GENAI_USE_VERTEXAI": "1",
    }
    mode = detect_auth(env).get("vertex")
    assert mode is not None
    assert mode.usable
    assert str(key_file) in (mode.detail or "")


def test_vertex_express_mode_with_api_key() -> None:
    mode = detect_auth({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_API_KEY": SECRET}).get("vertex")
    assert mode is not None
    assert mode.usable
    assert "express" in (mode.detail or "")


def test_code_assist_from_cli_home(isolated_home: Path) -> None:
    creds = _write_json(isolated_home / ".gemini" / "oauth_creds.json", {"access_token": SECRET, "refresh_token": "r"})
    report = detect_auth()
    mode = report.get("code_assist")
    assert mode is not None
    assert mode.usable
    assert mode.source == str(creds)
    assert SECRET not in repr(report) + str(report) + report.model_dump_json() + report.describe()


def test_code_assist_follows_gemini_cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_home = tmp_path / "cli-home"
    _write_json(cli_home / ".gemini" / "oauth_creds.json", {"access_token": "t"})
    assert detect_auth().get("code_assist") is None
    monkeypatch.setenv("GEMINI_CLI_HOME", str(cli_home))
    assert detect_auth().has("code_assist")


def test_code_assist_flag_without_creds_is_incomplete() -> None:
    mode = detect_auth({"GOOGLE_GENAI_USE_GCA": "true"}).get("code_assist")
    assert mode is not None
    assert not mode.usable
    assert "log in" in mode.problems[0]


def test_gateway_keeps_only_the_origin() -> None:
    report = detect_auth({"GOOGLE_GEMINI_BASE_URL": f"https://user:{SECRET}@gw.example:8443/v1?key={SECRET}"})
    mode = report.get("gateway")
    assert mode is not None
    assert mode.detail == "to https://gw.example:8443"
    assert not mode.usable  # google-genai will not start without a key, gateway or not
    assert "set GEMINI_API_KEY" in mode.problems[0]
    assert SECRET not in report.model_dump_json() + repr(report) + report.describe()
    keyed = detect_auth({"GOOGLE_GEMINI_BASE_URL": "https://gw.example:8443/v1", "GEMINI_API_KEY": "k" * 12})
    assert keyed.usable_modes == ("gateway",)


def test_cli_selected_type_is_read_from_settings(isolated_home: Path) -> None:
    _write_json(isolated_home / ".gemini" / "settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}}})
    assert detect_auth().cli_selected_type == "gemini-api-key"


def test_no_secret_in_any_form_of_the_report(isolated_home: Path) -> None:
    env = {
        "GEMINI_API_KEY": SECRET,
        "GOOGLE_API_KEY": SECRET[::-1],
        "GOOGLE_GENAI_USE_VERTEXAI": "true",
        "GOOGLE_CLOUD_PROJECT": "p",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
    }
    _gcloud_adc(isolated_home)
    report = detect_auth(env)
    # google-genai: on Vertex AI a project from the environment beats a key from it, and the
    # Gemini API's base URL does not apply, so the only mode is Vertex AI with ADC.
    assert report.usable_modes == ("vertex",)
    assert report.api is not None
    assert (report.api.kind, report.api.api_key) == ("vertex_adc", None)
    for text in (repr(report), str(report), report.model_dump_json(), report.describe()):
        assert SECRET not in text
        assert SECRET[::-1] not in text


def test_redact_replaces_known_and_guessed_secrets() -> None:
    env = {
        "GEMINI_API_KEY": "dummy-key",
        "GOOGLE_API_KEY": "dummy",  # known, but too short to tell from ordinary text
        "MY_SERVICE_TOKEN": "tok-0123456789",
        "SHORT_TOKEN": "abc",
        "GOOGLE_APPLICATION_CREDENTIALS": "/etc/creds.json",
        "PATH": "/usr/bin",
    }
    text = "key=dummy-key short=dummy auth=tok-0123456789 abc /etc/creds.json /usr/bin"
    assert redact(text, env) == f"key={REDACTED} short=dummy auth={REDACTED} abc /etc/creds.json /usr/bin"
    assert secret_values({"A_API_KEY": "x" * 10, "B_API_KEY": "x" * 12}) == ["x" * 12, "x" * 10]


VERTEX_ENV = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "env-proj", "GOOGLE_API_KEY": SECRET}


_RESOLUTION_CASES: list[tuple[dict[str, str], dict[str, Any], tuple[str, str | None, str | None, bool]]] = [
    # google-genai's precedence (its BaseApiClient.__init__), one row per branch.
    (VERTEX_ENV, {}, ("vertex_adc", "env-proj", "global", False)),
    (VERTEX_ENV, {"api_key": "explicit-key"}, ("vertex_express", None, None, True)),
    ({**VERTEX_ENV, "GOOGLE_CLOUD_PROJECT": ""}, {}, ("vertex_express", None, None, True)),
    (
        {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_API_KEY": SECRET},
        {"project": "p"},
        ("vertex_adc", "p", "global", False),
    ),
    (VERTEX_ENV, {"credentials": True}, ("vertex_adc", "env-proj", "global", False)),
    ({**VERTEX_ENV, "GOOGLE_GENAI_USE_VERTEXAI": "yes"}, {}, ("api_key", None, None, True)),
    ({**VERTEX_ENV, "GOOGLE_GENAI_USE_ENTERPRISE": "false"}, {}, ("api_key", None, None, True)),
    (
        {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_LOCATION": "eu", "GOOGLE_CLOUD_PROJECT": "p"},
        {},
        ("vertex_adc", "p", "eu", False),
    ),
]


@pytest.mark.parametrize(("env", "explicit", "expected"), _RESOLUTION_CASES)
def test_resolution_follows_google_genai(
    env: dict[str, str], explicit: dict[str, Any], expected: tuple[str, str | None, str | None, bool]
) -> None:
    auth = resolve_api_auth(env, home=Path("/nonexistent"), **explicit)
    assert (auth.kind, auth.project, auth.location, auth.api_key is not None) == expected
    # ADC live outside the environment (a file, a metadata server): without them the mode is named, not usable
    assert auth.problems == ((NO_ADC,) if auth.kind == "vertex_adc" and not explicit.get("credentials") else ())
    if auth.kind == "vertex_express":
        assert auth.base_url == "https://aiplatform.googleapis.com/"
    if auth.location == "eu":
        assert auth.base_url == "https://aiplatform.eu.rep.googleapis.com/"


@pytest.mark.parametrize(
    "env",
    [
        *(case[0] for case in _RESOLUTION_CASES),
        {},
        {"GOOGLE_GENAI_USE_VERTEXAI": "1"},
        {"GOOGLE_GENAI_USE_VERTEXAI": "TRUE"},
        {"GOOGLE_GENAI_USE_ENTERPRISE": "true"},
        {"GOOGLE_GENAI_USE_ENTERPRISE": "true", "GOOGLE_GENAI_USE_VERTEXAI": "false"},
        {"GOOGLE_GENAI_USE_ENTERPRISE": "", "GOOGLE_GENAI_USE_VERTEXAI": "true"},
    ],
)
def test_the_options_vertex_flag_is_the_resolutions(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`ApiOptions.vertex()` reads the flag alone; it is the one the whole resolution decides."""
    from unified._internal.api_options import ApiOptions

    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ApiOptions().vertex() is resolve_api_auth(env, home=Path("/nonexistent")).vertexai
    assert ApiOptions(vertexai=False).vertex() is False
    assert ApiOptions(vertexai=True).vertex() is True


# The SDK warns that GOOGLE_GENAI_USE_ENTERPRISE wins over a conflicting GOOGLE_GENAI_USE_VERTEXAI: a case here.
@pytest.mark.filterwarnings("ignore:.*conflicting values:UserWarning")
@pytest.mark.parametrize(("env", "explicit", "expected"), _RESOLUTION_CASES)
def test_google_genai_itself_agrees(
    env: dict[str, str],
    explicit: dict[str, Any],
    expected: tuple[str, str | None, str | None, bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real SDK, left to read the same environment, picks the same mode, project, location and host."""
    from google import genai
    from google.oauth2.credentials import Credentials

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    given = {**explicit, "credentials": Credentials(token="t")} if explicit.get("credentials") else explicit  # type: ignore[no-untyped-call]
    sdk = genai.Client(**given)._api_client
    ours = resolve_api_auth(env, home=Path("/nonexistent"), **explicit)
    assert (bool(sdk.vertexai), bool(sdk.api_key), sdk._http_options.base_url) == (
        ours.vertexai,
        ours.api_key is not None,
        ours.base_url,
    )
    if ours.vertexai:
        assert (sdk.project or None, sdk.location or None) == (ours.project, ours.location)


def test_resolved_auth_never_shows_its_key_or_full_base_url() -> None:
    auth = resolve_api_auth(
        {"GEMINI_API_KEY": SECRET, "GOOGLE_GEMINI_BASE_URL": f"https://gw.example/p?token={SECRET}"}
    )
    assert auth.api_key == SECRET
    assert SECRET in auth.base_url  # sent as given ...
    for text in (repr(auth), str(auth), auth.model_dump_json(), auth.describe()):
        assert SECRET not in text  # ... never shown
    assert auth.describe() == "Gateway (custom GOOGLE_GEMINI_BASE_URL), key from GEMINI_API_KEY, to https://gw.example"


def test_a_key_with_an_explicit_project_is_refused_up_front() -> None:
    auth = resolve_api_auth({}, vertexai=True, api_key=SECRET, project="p")
    assert not auth.usable
    assert "both given" in auth.problems[0]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1", "its IPv6 host's `[` is not closed by `]`"),
        ("http://127.0.0.1:99999", "its port is not a number of 1-65535"),
        ("http://127.0.0.1:abc", "its port is not a number of 1-65535"),
        ("http://gw.exa\u2100mple", "its host holds characters a URL cannot (after Unicode normalization)"),
        ("http://127.0.0.1:0", "its port is 0"),
        ("localhost:8080/v1", "its scheme is 'localhost', not http or https"),
        ("gw.example", "it has no http:// or https://"),
        ("http://:80", "it names no host"),
    ],
)
@pytest.mark.parametrize("vertex", [False, True])
def test_a_base_url_no_request_can_go_to_is_refused_up_front(url: str, why: str, vertex: bool) -> None:
    """A base URL google-genai cannot parse or connect to failed only at the first request: `internal_error`
    ("a bug in unified": ValueError, InvalidURL, an ExceptionGroup) or a `stream_interrupted` that said to run
    again. Now the auth says so before anything starts, never repeating the URL (a gateway's may hold a token)."""
    variable = "GOOGLE_VERTEX_BASE_URL" if vertex else "GOOGLE_GEMINI_BASE_URL"
    env = {"GOOGLE_API_KEY": SECRET, variable: url + f"/?token={SECRET}"}
    auth = resolve_api_auth(env, vertexai=vertex)
    assert auth.problems == (f"the base URL in {variable} is not one google-genai can send requests to: {why}",)
    assert auth.hint == f"set {variable} to an http:// or https:// URL (a host, a port of 1-65535, a path), or unset it"
    assert SECRET not in auth.describe()
    option = resolve_api_auth({"GOOGLE_API_KEY": SECRET}, vertexai=vertex, base_url=url)
    assert option.problems[0].startswith("the base URL in the base_url option is not one")


@pytest.mark.parametrize(
    ("key", "what"),
    [
        (SECRET + "\n", f"a line break (at character {len(SECRET)})"),
        ("AIza\r\nX-Evil: 1", "a line break (at character 4)"),
        ("AIza\u200bkey", "the character U+200B (at character 4)"),
        ("clé", "the character U+00E9 (at character 2)"),
        ("AIza\x00key", "the character U+0000 (at character 4)"),
    ],
)
def test_a_key_no_http_header_can_carry_is_refused_up_front(key: str, what: str) -> None:
    """A key pasted with a line break or a zero-width space failed at the first request (`internal_error`,
    UnicodeEncodeError; `stream_interrupted`, "Illegal header value" with the key in it). Never repeated."""
    auth = resolve_api_auth({"GEMINI_API_KEY": key})
    assert auth.problems == (f"the API key from GEMINI_API_KEY holds {what}, which no HTTP header can carry",)
    assert auth.hint == "copy the key into GEMINI_API_KEY again, without it"
    assert key not in auth.describe()
    assert resolve_api_auth({}, api_key="inner space is sent").usable


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_run_with_an_unsendable_base_url_or_key_fails_before_any_request(backend: str, tmp_path: Path) -> None:
    """A key no header can carry is the credential's fault (`auth_error`); a base URL no request can go to is the
    configuration's, in every backend's words (round 12: it was an `auth_error` too)."""
    from unified import execute

    for options, code, start in (
        ({"api_key": "k", "base_url": "http://[::1"}, "configuration_error", "the base URL in the base_url option "),
        ({"api_key": "k\u00e9", "base_url": "http://127.0.0.1:9"}, "auth_error", f"the {backend} backend cannot "),
    ):
        async with execute(prompt="hi", backend=backend, cwd=tmp_path, backend_options=options) as stream:
            events = [event async for event in stream]
        [error] = [event for event in events if event.type == "error"]
        assert error.code == code, error.message
        assert error.message.startswith(start), error.message
        assert events[-1].type == "result"
