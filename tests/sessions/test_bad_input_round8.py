"""Bad input round 8, refused where it is given: an HTTP/SSE MCP server whose URL names no HTTP endpoint (a port
out of range or no number, no host, another scheme, a control character). Each failed at the first connection in
the HTTP client's words ("InvalidURL: Invalid port", an OverflowError) on unified's own runtime, or inside an agent
binary; now describing the server raises a ValidationError naming the server and the fix, on every backend alike
(they all take these types), and never shows the URL's password or key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from unified import ExecuteParams
from unified.types import HttpMcpServer, SseMcpServer

BAD_URLS = {
    "http://localhost:99999/mcp": "its port is not a port number from 1 to 65535",
    "http://localhost:abc/mcp": "its port is not a port number from 1 to 65535",
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


def test_a_bad_mcp_url_given_as_a_dict_to_execute_params_is_refused_without_its_secrets() -> None:
    server = {"type": "http", "name": "tickets", "url": "http://user:pw-s3cret@h:99999/mcp?key=k3y-s3cret"}
    with pytest.raises(ValidationError, match="MCP server 'tickets'") as raised:
        ExecuteParams(prompt="hi", backend="generate-content", mcp_servers=[server])
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/mcp", "https://[::1]:443/mcp", "HTTPS://example.com/a b"])
def test_a_url_the_http_client_takes_is_kept(url: str) -> None:
    assert HttpMcpServer(name="tickets", url=url).url == url
