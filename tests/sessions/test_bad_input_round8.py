"""Bad input round 8, refused where it is given: an HTTP/SSE MCP server whose URL names no HTTP endpoint (a port
out of range or no number, no host, another scheme, a control character). Each failed at the first connection in
the HTTP client's words ("InvalidURL: Invalid port", an OverflowError) on unified's own runtime, or inside an agent
binary; now describing the server raises a ValidationError naming the server and the fix, on every backend alike
(they all take these types), and never shows the URL's password or key. And a codex rollout whose message
`content` is no list, which broke `unified sessions list`."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from unified import ExecuteParams
from unified.errors import CorruptSession
from unified.types import HttpMcpServer, SseMcpServer

BAD_URLS = {
    "http://localhost:99999/mcp": "its port is not a number of 1-65535",
    "http://localhost:abc/mcp": "its port is not a number of 1-65535",
    "http://localhost:0/mcp": "its port is 0",
    "http://:8080/mcp": "it names no host",
    "ftp://localhost/mcp": "its scheme is 'ftp', not http or https",
    "localhost:8080/mcp": "its scheme is 'localhost', not http or https",
    "/mcp": "it has no http:// or https://",
    "http://localhost:8080/m\ncp": "it holds a control character",
}


@pytest.mark.parametrize("url", list(BAD_URLS))
@pytest.mark.parametrize("kind", [HttpMcpServer, SseMcpServer])
def test_an_mcp_url_that_names_no_http_endpoint_is_refused_naming_the_server_and_the_fix(
    kind: type[HttpMcpServer | SseMcpServer], url: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        kind(name="tickets", url=url)
    message = str(raised.value)
    assert "MCP server 'tickets'" in message
    assert BAD_URLS[url] in message
    assert "give the server's full http:// or https:// URL" in message


def test_a_token_where_an_mcp_url_s_port_goes_is_not_repeated() -> None:
    """The URL parser's error quotes the port's text ("Port could not be cast to integer value as '...'"), and
    the message quoted the URL itself, whose port a token stood in: neither is repeated now."""
    with pytest.raises(ValidationError, match="its port is not a number of 1-65535") as raised:
        HttpMcpServer(name="tickets", url="https://gw:tok_live_s3cret/mcp")
    assert "s3cret" not in str(raised.value)


def test_a_bad_mcp_url_given_as_a_dict_to_execute_params_is_refused_without_its_secrets() -> None:
    server = {"type": "http", "name": "tickets", "url": "http://user:pw-s3cret@h:99999/mcp?key=k3y-s3cret"}
    with pytest.raises(ValidationError, match="MCP server 'tickets'") as raised:
        ExecuteParams(prompt="hi", backend="generate-content", mcp_servers=[server])
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/mcp", "https://[::1]:443/mcp", "HTTPS://example.com/a b"])
def test_a_url_the_http_client_takes_is_kept(url: str) -> None:
    assert HttpMcpServer(name="tickets", url=url).url == url


# --- a codex rollout whose message `content` is no list ------------------------------------------------------


@pytest.mark.parametrize("content", [5, 7.5, True])
def test_a_codex_rollout_whose_message_content_is_no_list_is_listed_and_shown_and_refused_by_export(
    tmp_path: Path, content: object
) -> None:
    """`"content": 5` in a user message broke `unified sessions list` (every codex session with it) with a bare
    TypeError ('int' object is not iterable), and `show`. Such content is read as none there; an export, which
    another backend would continue from, stays `CorruptSession` naming it (the message would be lost silently)."""
    from unified._adapters.codex._sessions import CodexSessionLocator

    folder = tmp_path / "codex-home" / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True)
    thread_id = "019a0000-0000-7000-8000-000000000001"
    meta = {"type": "session_meta", "payload": {"id": thread_id, "cwd": "/p", "timestamp": "2026-11-29T10:00:00Z"}}
    bad = {"type": "response_item", "payload": {"type": "message", "role": "user", "content": content}}
    said = [{"type": "output_text", "text": "hi there"}]
    answer = {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": said}}
    path = folder / f"rollout-2026-11-29T10-00-00-{thread_id}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in (meta, bad, answer)))
    locator = CodexSessionLocator(env={"UNIFIED_CODEX_HOME": str(tmp_path / "codex-home")})

    [listed] = anyio.run(locator.list_sessions)
    shown = anyio.run(locator.show, thread_id)
    with pytest.raises(CorruptSession, match=r"a user message's content is .*, not a list"):
        anyio.run(locator.export, thread_id)

    assert (listed.session_id, listed.problem) == (thread_id, None)
    assert {"role": "assistant", "text": "hi there"} in shown["messages"]
    assert path.read_text().count("\n") == 3  # left as it was


# --- a stored generate-content session whose contents is no list ---------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("contents", [5, "text", {"role": "user"}])
async def test_a_stored_session_whose_contents_is_no_list_says_so_on_resume(tmp_path: Path, contents: object) -> None:
    """It said "holds a state unified cannot read (TypeError: 'int' object is not iterable)"; a dict was read
    as its keys. Now the field and its type are named; the record is kept."""
    from tests.sessions.records import stored_session
    from unified import execute
    from unified.events import ErrorEvent
    from unified.sessions import FileSessionStore
    from unified.testing import FakeGemini, ModelTurn

    store = FileSessionStore(tmp_path / "sessions")
    session = stored_session()
    session.state["contents"] = contents
    await store.save(session)
    with FakeGemini([ModelTurn(text="never")]) as fake:
        options = {"api_key": "k", "base_url": fake.base_url}
        params = ExecuteParams(
            prompt="again", cwd=tmp_path, resume=session.session_id, session_store=store, backend_options=options
        )
        async with execute(params.model_copy(update={"backend": "generate-content"})) as stream:
            events = [event async for event in stream]
        assert fake.requests == []
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "corrupt_session"
    assert "its contents is" in error.message, error.message
    assert "not a list of contents" in error.message
    assert "not iterable" not in error.message
    assert (await store.load("generate-content", session.session_id)).state["contents"] == contents


@pytest.mark.parametrize(
    ("contents", "words"),
    [
        (5, "its contents is a number, not a list of contents"),
        ([{"role": "user", "parts": [{"text": 5}]}], "(text: Input should be a valid string)"),
    ],
)
def test_exporting_a_stored_session_whose_contents_does_not_fit_names_what(
    tmp_path: Path, contents: object, words: str
) -> None:
    """`unified sessions export` said only "holds a state unified cannot read (TypeError)"; now it says what, as
    a resume does, and the record is kept."""
    from tests.sessions.records import stored_session
    from unified._adapters.generate_content._sessions import GenerateContentSessionLocator
    from unified.errors import CorruptSession
    from unified.sessions import FileSessionStore

    store = FileSessionStore(tmp_path / "sessions")
    session = stored_session()
    session.state["contents"] = contents
    anyio.run(store.save, session)
    with pytest.raises(CorruptSession) as raised:
        anyio.run(GenerateContentSessionLocator(store=store).export, session.session_id)
    assert words in raised.value.message, raised.value.message
    assert anyio.run(store.load, "generate-content", session.session_id).state["contents"] == contents
