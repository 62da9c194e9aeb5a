"""Bad input round 12: a base URL no request can be sent to ended an API backend's run (generate-content,
interactions) as `auth_error`, "cannot authenticate", though no credential would help, where each binary backend
ends it as `configuration_error` naming where the URL came from. Now every backend says it in the same words
(`unified._urls.base_url_refusal`), before anything is sent; and, `configuration_error` not being among the
default `failover_on` codes, the run ends there rather than going on on a fallback (as a binary backend's does)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from unified import ExecuteParams
from unified._execute import EventStream
from unified.errors import ConfigurationError
from unified.events import ErrorEvent, Failover, Result, UnifiedEvent

pytestmark = pytest.mark.anyio

SECRET = "tok_live_round12_secret"


async def _events(params: ExecuteParams) -> list[UnifiedEvent]:
    with anyio.fail_after(30):
        async with EventStream(params) as stream:
            return [event async for event in stream]


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
@pytest.mark.parametrize(
    ("variable", "vertex"),
    [("GOOGLE_GEMINI_BASE_URL", False), ("GOOGLE_VERTEX_BASE_URL", True)],
    ids=["gemini", "vertex"],
)
async def test_an_api_backend_refuses_the_url_as_a_configuration_error_in_the_binaries_words(
    backend: str, variable: str, vertex: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-key")
    monkeypatch.setenv(variable, f"http://{SECRET}@127.0.0.1:99999/v1")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true" if vertex else "false")
    params = ExecuteParams(prompt="hi", backend=backend, cwd=tmp_path, fallback=("scripted",))
    events = await _events(params)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "configuration_error"
    assert error.message.startswith(
        f"the base URL in {variable} is not one google-genai can send requests to: its port is not a number of 1-65535"
    )
    assert f"set {variable} to an http:// or https:// URL (a host, a port of 1-65535, a path), or unset it" in (
        error.message
    )
    assert SECRET not in error.model_dump_json()
    assert not any(isinstance(e, Failover) for e in events)  # not among the default failover_on codes
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"


async def test_the_binary_backends_say_it_in_the_same_words(tmp_path: Path) -> None:
    """The shape every backend's refusal has: where the URL came from, what would send to it, why, what to do."""
    from unified._adapters.claude_code._launch import _check_base_url
    from unified._adapters.claude_code._options import ClaudeCodeOptions

    with pytest.raises(ConfigurationError) as raised:
        _check_base_url({"ANTHROPIC_BASE_URL": "http://127.0.0.1:99999"}, ClaudeCodeOptions())
    assert raised.value.message == (
        "the base URL in ANTHROPIC_BASE_URL is not one Claude Code can send requests to: "
        "its port is not a number of 1-65535"
    )
    assert raised.value.hint == (
        "set ANTHROPIC_BASE_URL to an http:// or https:// URL (a host, a port of 1-65535, a path), or unset it"
    )
