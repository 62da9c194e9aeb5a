"""No secret reaches a repr, a log line or an event: keys given in code are as safe as keys in the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified import ExecuteParams, HttpMcpServer, SseMcpServer, StdioMcpServer, execute
from unified.testing import FakeGemini, Fault, ModelTurn

KEY = "AIzaSyD-a-key-that-must-never-show-0123456789"
TOKEN = "ya29.a-bearer-token-that-must-never-show"


def test_reprs_hide_keys_headers_and_env() -> None:
    params = ExecuteParams(
        prompt="x",
        backend_options={"api_key": KEY, "env": {"GEMINI_API_KEY": KEY, "HOME": "/home/me"}, "base_url": "http://h"},
        mcp_servers=(
            HttpMcpServer(name="a", url="http://a", headers={"Authorization": f"Bearer {TOKEN}"}),
            SseMcpServer(name="b", url="http://b", headers={"X-Goog-Api-Key": KEY}),
            StdioMcpServer(name="c", command="srv", env={"SERVICE_TOKEN": TOKEN, "LANG": "C"}),
        ),
    )
    for text in (repr(params), str(params), repr(params.mcp_servers), str(params.mcp_servers[2])):
        assert KEY not in text
        assert TOKEN not in text
    assert "/home/me" in repr(params)  # only secrets are hidden
    assert "LANG" in repr(params.mcp_servers[2])
    assert params.backend_options_dict()["api_key"] == KEY  # the value itself is untouched


@pytest.mark.anyio
async def test_a_refused_key_appears_in_no_event(tmp_path: Path) -> None:
    with FakeGemini([ModelTurn(text="never", fault=Fault(kind="unauthenticated"))]) as server:
        options = {"api_key": KEY, "base_url": server.base_url}
        stream = execute(prompt="hi", backend="generate-content", cwd=tmp_path, backend_options=options)
        async with stream:
            events = [e async for e in stream]
        assert KEY not in "".join(r.headers.get("x-goog-api-key", "") for r in server.requests)  # the log too
    assert events[-1].type == "result"
    assert any(e.type == "error" and e.code == "auth_error" for e in events)
    for event in events:
        assert KEY not in event.model_dump_json()
