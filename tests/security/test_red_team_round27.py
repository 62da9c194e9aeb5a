"""Red team, round 27: secrets and the network.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a SOCKS5 proxy with credentials (`ALL_PROXY=socks5://user:PASSWORD@host:1080`) reached the agent binaries'
  environment as it was, where a model's `env` or `cat /proc/$PPID/environ` printed the password (the http(s) ones
  were already stood in for by the forwarder): now the forwarder stands in for socks5/socks5h too, on the same port
  (`unified._binary.proxy`);
- a key re-cased at random, or wrapped onto lines (`fold -w10`, a terminal's `\\r\\n` wrap, `xxd -p`'s 30 bytes a
  line), was no form the redactor knew: it reached the events and the tool output sent back to the model. Now
  `Redactor.loose` looks for the key and its hex lower-cased with the line breaks taken out.

Measured and left (documented in `_printed_forms`): other separators, grouped hex dumps with offsets (`xxd`, `od -c`),
every byte percent-encoded, HTML entities, decimal bytes, rot13, base64 of base64.
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from tests.e2e.claude_code.conftest import claude_setup
from tests.hang_guard import HANG_GUARD_S
from tests.harness.closed_port import closed_port
from tests.harness.fake_proxy import fake_proxy
from tests.harness.fake_socks import fake_socks
from tests.security.test_red_team_round18 import _streamed
from tests.security.test_red_team_round20 import _CAT, _home_with
from unified._binary.proxy import ProxyForwarder, forwarded_env, upstreams_of
from unified._redaction import REDACTED, redactor
from unified.tools import ToolCall, ToolRuntime

__all__ = ["claude_setup"]

pytestmark = [pytest.mark.anyio]

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
PASSWORD = "S0cks-Pa55w0rd-Qw7Er4Ty9Ui2"


# 1. a SOCKS5 proxy's password in the child's environment


@pytest.mark.parametrize("name", ["ALL_PROXY", "all_proxy", "HTTPS_PROXY"])
@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_a_socks5_proxy_with_credentials_is_stood_in_for(name: str, scheme: str) -> None:
    """SUCCEEDED before: `forwarded_env` left `socks5://user:PASSWORD@...` as it was for the child."""
    host = {name: f"{scheme}://user:{PASSWORD}@socks.example:1080", "PATH": "/usr/bin"}
    env, forwarder = forwarded_env(host)
    assert forwarder is not None
    try:
        given = urlsplit(env[name])
        assert (given.scheme, given.hostname, given.port) == (scheme, "127.0.0.1", forwarder.port)
        assert PASSWORD not in str(env)
        assert given.password
        assert given.username
    finally:
        forwarder.stop()
    assert upstreams_of(host)[name].where == f"{scheme}://socks.example:1080"
    assert PASSWORD not in repr(upstreams_of(host)[name])


def test_a_socks4_proxy_and_one_without_credentials_stay_as_they_were() -> None:
    """Pin: a SOCKS4 user id is no password, and a proxy without userinfo has nothing to hide."""
    host = {"ALL_PROXY": "socks4://user@socks.example:1080", "all_proxy": "socks5h://socks.example:1080"}
    assert forwarded_env(host) == (host, None)


@asynccontextmanager
async def socks_forwarding(upstream_url: str) -> AsyncIterator[tuple[ProxyForwarder, str]]:
    env, forwarder = forwarded_env({"ALL_PROXY": upstream_url})
    assert forwarder is not None
    try:
        yield forwarder, env["ALL_PROXY"]
    finally:
        await anyio.to_thread.run_sync(forwarder.stop)


async def socks_ask(url: str, user: str, password: str, target: bytes, methods: bytes = b"\x02") -> bytes:
    """A SOCKS5 client's negotiation with the proxy at `url` and a CONNECT to `target` (address type, address,
    port), then "ping" through the tunnel: every byte the proxy answered."""
    async with await anyio.connect_tcp("127.0.0.1", urlsplit(url).port or 0) as stream:
        answer = b""
        with anyio.fail_after(HANG_GUARD_S):
            try:
                await stream.send(bytes([5, len(methods)]) + methods)
                answer += await stream.receive()
                if answer[-1:] != b"\x02":
                    return answer
                u, p = user.encode(), password.encode()
                await stream.send(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
                answer += await stream.receive()
                if answer[-1:] != b"\x00":
                    return answer
                await stream.send(b"\x05\x01\x00" + target)
                answer += await stream.receive()
                await stream.send(b"ping")
                while True:
                    answer += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return answer


@asynccontextmanager
async def echo() -> AsyncIterator[int]:
    """A server on 127.0.0.1 echoing what it reads, once: its port."""

    async def serve(client: anyio.abc.ByteStream) -> None:
        async with client:
            await client.send(await client.receive())

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield listener.extra(anyio.abc.SocketAttribute.local_port)
        group.cancel_scope.cancel()


def _ipv4(port: int) -> bytes:
    return b"\x01\x7f\x00\x00\x01" + port.to_bytes(2, "big")


def _name(port: int) -> bytes:
    return b"\x03\x09localhost" + port.to_bytes(2, "big")


@pytest.mark.parametrize("target", [_ipv4, _name])
async def test_a_socks5_connect_goes_through_the_upstream_with_the_hosts_credentials(target: object) -> None:
    """SUCCEEDED before: there was no forwarder for a SOCKS5 proxy (the child was given the host's password). Now
    the child's fresh credential opens a tunnel through the host's proxy, which sees the host's credential and the
    child's CONNECT as sent (an address, or a name the proxy resolves)."""
    assert callable(target)
    async with echo() as port, fake_socks(password=PASSWORD) as upstream, socks_forwarding(upstream.url) as (_, url):
        given = urlsplit(url)
        answer = await socks_ask(url, given.username or "", given.password or "", target(port))
        assert answer.startswith(b"\x05\x02\x01\x00\x05\x00"), answer
        assert answer.endswith(b"ping")
        [asked] = upstream.asked
        assert (asked.user, asked.password, asked.allowed) == (upstream.user, PASSWORD, True)
        assert asked.target.endswith(f":{port}")


async def test_bytes_a_socks5_client_sends_with_its_request_go_through_the_tunnel() -> None:
    """A client that sends its first bytes with its CONNECT request, before the answer, loses none of them."""
    async with echo() as port, fake_socks(password=PASSWORD) as upstream, socks_forwarding(upstream.url) as (_, url):
        given = urlsplit(url)
        u, p = (given.username or "").encode(), (given.password or "").encode()
        async with await anyio.connect_tcp("127.0.0.1", given.port or 0) as stream:
            with anyio.fail_after(HANG_GUARD_S):
                await stream.send(b"\x05\x01\x02")
                assert await stream.receive() == b"\x05\x02"
                await stream.send(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
                assert await stream.receive() == b"\x01\x00"
                await stream.send(b"\x05\x01\x00" + _ipv4(port) + b"early")
                answer = b""
                while not answer.endswith(b"early"):
                    answer += await stream.receive()
        assert answer[:2] == b"\x05\x00"


async def test_a_socks5_client_without_the_forwarders_credential_is_refused_and_nothing_goes_upstream() -> None:
    """Another local user who finds the port cannot ride the host's credentials: a wrong credential, the host's own,
    or no username/password method at all, is refused before anything reaches the upstream."""
    async with fake_socks(password=PASSWORD) as upstream, socks_forwarding(upstream.url) as (_, url):
        target = _ipv4(1)
        assert await socks_ask(url, "unified0", "wrong", target) == b"\x05\x02\x01\x01"
        assert await socks_ask(url, upstream.user, PASSWORD, target) == b"\x05\x02\x01\x01"
        assert await socks_ask(url, "", "", target, methods=b"\x00") == b"\x05\xff"
        assert upstream.asked == []


async def test_the_http_and_the_socks_routes_do_not_open_each_other() -> None:
    """With an http(s) and a SOCKS5 proxy, each route's credential opens its own protocol only."""
    async with fake_proxy() as http, fake_socks(password=PASSWORD) as socks:
        env, forwarder = forwarded_env({"HTTPS_PROXY": http.url, "ALL_PROXY": socks.url})
        assert forwarder is not None
        try:
            https, all_proxy = urlsplit(env["HTTPS_PROXY"]), urlsplit(env["ALL_PROXY"])
            assert https.port == all_proxy.port
            refused = await socks_ask(env["ALL_PROXY"], https.username or "", https.password or "", _ipv4(1))
            assert refused == b"\x05\x02\x01\x01"
            token = base64.b64encode(f"{all_proxy.username}:{all_proxy.password}".encode()).decode()
            async with await anyio.connect_tcp("127.0.0.1", https.port or 0) as stream:
                await stream.send(f"CONNECT x:1 HTTP/1.1\r\nProxy-Authorization: Basic {token}\r\n\r\n".encode())
                with anyio.fail_after(HANG_GUARD_S):
                    assert (await stream.receive()).startswith(b"HTTP/1.1 407 ")
        finally:
            await anyio.to_thread.run_sync(forwarder.stop)
        assert http.asked == []
        assert socks.asked == []


async def test_an_upstream_refusing_the_hosts_socks_credentials_gives_not_allowed_and_a_problem() -> None:
    async with fake_socks(password="another-password-123") as upstream:
        url = f"socks5://{upstream.user}:{PASSWORD}@127.0.0.1:{upstream.port}"
        async with socks_forwarding(url) as (forwarder, given_url):
            given = urlsplit(given_url)
            answer = await socks_ask(given_url, given.username or "", given.password or "", _ipv4(1))
        assert answer.startswith(b"\x05\x02\x01\x00\x05\x02"), answer  # "connection not allowed"
        [problem] = forwarder.problems
        assert problem.code == "proxy_auth_refused"
        assert PASSWORD not in str(problem)
        assert f"socks5://127.0.0.1:{upstream.port}" in problem.message


async def test_an_unreachable_socks_upstream_gives_a_general_failure_and_a_problem() -> None:
    with closed_port() as port:
        async with socks_forwarding(f"socks5://u:{PASSWORD}@127.0.0.1:{port}") as (forwarder, url):
            given = urlsplit(url)
            answer = await socks_ask(url, given.username or "", given.password or "", _ipv4(1))
    assert answer.startswith(b"\x05\x02\x01\x00\x05\x01"), answer
    assert [p.code for p in forwarder.problems] == ["proxy_unreachable"]


async def test_a_socks5_bind_or_udp_request_is_refused() -> None:
    """Only CONNECT is passed on: BIND and UDP ASSOCIATE would open the host's proxy in other ways."""
    async with fake_socks(password=PASSWORD) as upstream, socks_forwarding(upstream.url) as (_, url):
        given = urlsplit(url)
        async with await anyio.connect_tcp("127.0.0.1", given.port or 0) as stream:
            u, p = (given.username or "").encode(), (given.password or "").encode()
            await stream.send(b"\x05\x01\x02")
            with anyio.fail_after(HANG_GUARD_S):
                assert await stream.receive() == b"\x05\x02"
                await stream.send(bytes([1, len(u)]) + u + bytes([len(p)]) + p)
                assert await stream.receive() == b"\x01\x00"
                await stream.send(b"\x05\x03\x00" + _ipv4(1))  # UDP ASSOCIATE
                assert (await stream.receive())[:2] == b"\x05\x07"
        assert upstream.asked == []


# 2. a key re-cased or wrapped onto lines


def _fold(text: str, width: int, newline: str = "\n") -> str:
    return newline.join(text[i : i + width] for i in range(0, len(text), width))


_LOOSE = {
    "mixed case": "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(KEY)),
    "fold -w10": _fold(KEY, 10),
    "fold -w1": _fold(KEY, 1),
    "wrapped with CRLF": _fold(KEY, 16, "\r\n"),
    "xxd -p": _fold(("x=" + KEY).encode().hex(), 60),
    "xxd -p | tr a-f A-F": _fold(("x=" + KEY).encode().hex().upper(), 60),
    "mixed case, wrapped": _fold(KEY.swapcase(), 7),
}


@pytest.mark.parametrize("form", list(_LOOSE))
def test_a_re_cased_or_wrapped_key_is_replaced(form: str) -> None:
    """SUCCEEDED before: each was printed as it was (the printed forms were upper, lower, whole hex)."""
    text = f"output:\n{_LOOSE[form]}\nend\n"
    shown = redactor({"GEMINI_API_KEY": KEY})(text)
    assert REDACTED in shown, shown
    assert shown.startswith("output:\n")
    assert shown.endswith("end\n")
    bare = shown.replace("\r", "").replace("\n", "").lower()
    assert KEY.lower()[5:30] not in bare
    assert KEY.encode().hex()[10:60] not in bare


@pytest.mark.parametrize("form", ["mixed case", "fold -w10", "xxd -p"])
async def test_a_re_cased_or_wrapped_key_does_not_reach_the_events(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    """SUCCEEDED before: a text delta (a model echoing a tool's output) carried it to the caller."""
    [shown] = await _streamed(monkeypatch, [f"here:\n{_LOOSE[form]}\n"], KEY)
    assert REDACTED in shown
    assert shown.startswith("here:\n")


@pytest.mark.parametrize("form", ["fold -w10", "wrapped with CRLF", "xxd -p", "mixed case, wrapped"])
def test_a_wrapped_key_in_a_json_string_is_replaced(form: str) -> None:
    """SUCCEEDED before: in JSON (`unified sessions show --json`, `redact(json.dumps(...))`; a cassette) the line
    breaks are the two characters `\\n`, and the wrapped key was no form the redactor knew."""
    import json

    from unified._redaction import redact

    text = json.dumps({"output": f"dump:\n{_LOOSE[form]}\nend"}, indent=2)
    output = json.loads(redact(text, {"GEMINI_API_KEY": KEY}))["output"]
    assert output.startswith("dump:\n")
    assert output.endswith(f"{REDACTED}\nend")  # `xxd -p`'s dump keeps the hex of the `x=` before the key
    bare = output.replace("\r", "").replace("\n", "").lower()
    assert KEY.lower()[5:30] not in bare
    assert KEY.encode().hex()[10:60] not in bare


@pytest.mark.parametrize("form", ["fold -w10", "wrapped with CRLF", "xxd -p", "mixed case, wrapped"])
def test_a_wrapped_key_streamed_a_line_a_piece_shows_none_of_its_lines(form: str) -> None:
    """SUCCEEDED before: a command printing the key wrapped (`fold -w10`), one line a `tool_progress` piece, showed
    each line as it came (no piece held a whole form); only the last piece could be judged. Now a piece whose end,
    line breaks taken out, begins a `loose` form is held back until the rest shows what it is."""
    from unified._redaction import SplitGuard

    guard = SplitGuard(redactor({"GEMINI_API_KEY": KEY}))
    lines = _LOOSE[form].splitlines(keepends=True)
    shown = "".join([guard.feed("dump:\n"), *(guard.feed(line) for line in lines), guard.feed("\nend\n")])
    shown += guard.release()
    assert shown.startswith("dump:\n")
    assert shown.endswith("\nend\n")
    bare = shown.replace("\r", "").replace("\n", "").lower()
    assert REDACTED.lower() in bare
    assert KEY.lower()[:10] not in bare
    assert KEY.encode().hex()[4:20] not in bare


def test_ordinary_lines_streamed_are_not_held_back() -> None:
    """Pin: lines that begin no form are shown as they come."""
    from unified._redaction import SplitGuard

    guard = SplitGuard(redactor({"GEMINI_API_KEY": KEY}))
    for line in ["line one\n", "AIza is how Google keys begin\n", "ab12\n", "done\n"]:
        assert guard.feed(line) == line


def test_ordinary_wrapped_text_and_a_short_secret_across_lines_are_left_alone() -> None:
    """Pin: only a secret of `ANYWHERE_LENGTH` or more is looked for across lines (a short one, `pass\\nword123`,
    could be two ordinary lines), and a text holding none is returned as it was."""
    clean = redactor({"DB_PASSWORD": "password123", "GEMINI_API_KEY": KEY})
    text = "password\n123 is two lines\n" + _fold("ordinary text that is wrapped onto several lines", 9)
    assert clean(text) is text
    assert not clean.found_in(text)


def test_a_replaced_form_spanning_lines_keeps_what_surrounds_it() -> None:
    """The replacement stands where the form's characters stood; a key twice, once wrapped, is replaced twice."""
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(f"a {KEY} b {_fold(KEY, 13)} c") == f"a {REDACTED} b {REDACTED} c"


# 3. other tools' stored tokens, read by a model's command


_TOKEN_FILES = [
    (".config/pip/pip.conf", "[global]\nindex-url = https://u:SECRETPASSWORD123@pypi.corp.example/simple\n"),
    (".pip/pip.conf", "[global]\nextra-index-url = https://u:SECRETPASSWORD123@pypi.corp.example/simple\n"),
    (".local/share/uv/credentials/credentials.toml", '[[credential]]\npassword = "SECRETPASSWORD123"\n'),
    (".condarc", "channels:\n  - https://u:SECRETPASSWORD123@conda.corp.example\n"),
    (".composer/auth.json", '{"github-oauth": {"github.com": "SECRETTOKEN1234567890"}}\n'),
    (".config/composer/auth.json", '{"http-basic": {"repo": {"password": "SECRETPASSWORD123"}}}\n'),
    (".nuget/NuGet/NuGet.Config", '<add key="ClearTextPassword" value="SECRETPASSWORD123" />\n'),
    (".bunfig.toml", '[install.registry]\ntoken = "SECRETTOKEN1234567890"\n'),
    (".config/containers/auth.json", '{"auths": {"quay.io": {"auth": "dTpTRUNSRVRQQVNTV09SRDEyMw=="}}}\n'),
    (".config/helm/repositories.yaml", "repositories:\n- name: corp\n  password: SECRETPASSWORD123\n"),
    (".config/doctl/config.yaml", "access-token: dop_v1_SECRETTOKEN1234567890\n"),
    (".config/hcloud/cli.toml", '[[contexts]]\ntoken = "SECRETTOKEN1234567890"\n'),
    (".oci/oci_api_key.pem", "-----BEGIN PRIVATE KEY-----\nSECRET\n-----END PRIVATE KEY-----\n"),
    (".config/glab-cli/config.yml", "hosts:\n  gitlab.com:\n    token: glpat-SECRETTOKEN1234567890\n"),
    (".config/github-copilot/hosts.json", '{"github.com": {"oauth_token": "gho_SECRETTOKEN1234567890"}}\n'),
    (".config/github-copilot/apps.json", '{"github.com:Iv1": {"oauth_token": "ghu_SECRETTOKEN1234567890"}}\n'),
    (".config/configstore/firebase-tools.json", '{"tokens": {"refresh_token": "1//SECRETTOKEN1234567890"}}\n'),
    (".wrangler/config/default.toml", 'oauth_token = "SECRETTOKEN1234567890"\n'),
    (".fly/config.yml", "access_token: fo1_SECRETTOKEN1234567890\n"),
    (".pulumi/credentials.json", '{"accessTokens": {"https://api.pulumi.com": "pul-SECRETTOKEN1234567890"}}\n'),
    (".config/netlify/config.json", '{"users": {"1": {"auth": {"token": "SECRETTOKEN1234567890"}}}}\n'),
    (".config/stripe/config.toml", "[default]\ntest_mode_api_key = 'sk_test_SECRETTOKEN1234567890'\n"),
    (".circleci/cli.yml", "token: SECRETTOKEN1234567890\n"),
    (".supabase/access-token", "sbp_SECRETTOKEN1234567890\n"),
    (".config/ngrok/ngrok.yml", "authtoken: SECRETTOKEN1234567890\n"),
    (".sentryclirc", "[auth]\ntoken=SECRETTOKEN1234567890\n"),
    (".gnupg/private-keys-v1.d/0123ABCD.key", "Key: (private-key (rsa (n #00SECRET#)))\n"),
]


@pytest.mark.parametrize(("relative", "content"), _TOKEN_FILES, ids=[r for r, _ in _TOKEN_FILES])
async def test_a_shell_read_of_another_tools_token_file_is_refused_under_an_allow_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str, content: str
) -> None:
    """SUCCEEDED before: `cat ~/.config/pip/pip.conf` (and the others) ran unasked under an allow rule for `cat`,
    printing an index URL's password or a CLI's token: none was a credential file."""
    home, ws = _home_with(tmp_path, monkeypatch, relative, content)
    async with ToolRuntime(ws, policy=_CAT) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": f"cat ~/{relative}"}))
        assert decision.decision == "deny"
        assert "credential file" in str(decision.reason)
        command = f"grep -r SECRET {home / relative}"
        assert (await tools.decide(ToolCall("2", "run_shell_command", {"command": command}))).decision == "deny"


@pytest.mark.parametrize(("relative", "content"), _TOKEN_FILES[:4], ids=[r for r, _ in _TOKEN_FILES[:4]])
async def test_unified_s_read_file_of_a_hard_link_to_them_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str, content: str
) -> None:
    """SUCCEEDED before: a hard link in the workspace to `~/.config/pip/pip.conf` was read by read_file."""
    home, ws = _home_with(tmp_path, monkeypatch, relative, content)
    os.link(home / relative, ws / "notes.txt")
    async with ToolRuntime(ws) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "read_file", {"file_path": "notes.txt"})])
    assert outcome.is_error
    assert "SECRET" not in str(outcome.response)


async def test_a_pip_conf_in_the_workspace_is_still_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: the entries are the home's (`under = HOME`): a project's own `pip.conf` or `.sentryclirc` is read as
    before (its `.condarc` was asked before too: a protected name, whose channels choose what conda installs)."""
    _, ws = _home_with(tmp_path, monkeypatch, *_TOKEN_FILES[0])
    (ws / "pip.conf").write_text("[global]\ntimeout = 60\n")
    (ws / ".sentryclirc").write_text("[defaults]\norg = x\n")
    async with ToolRuntime(ws, policy=_CAT) as tools:
        for command in ("cat pip.conf", "cat .sentryclirc"):
            decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
            assert decision.decision == "allow", (command, decision.reason)


# 4. credentials in URLs given in code: the run's secrets, and what a repr or log shows

TOKEN = "Hunter2-Hunter2-Hunter2x"

_URLS = {
    "pwd": f"https://mcp.example/sse?pwd={TOKEN}",
    "pass": f"https://mcp.example/sse?user=u&pass={TOKEN}",
    "a fragment": f"https://mcp.example/cb#access_token={TOKEN}&x=1",
    "jwt": f"https://mcp.example/sse?jwt={TOKEN}",
    "an OAuth code": f"https://mcp.example/cb?state=1&code={TOKEN}",
    "after a semicolon": f"https://mcp.example/sse?a=1;token={TOKEN}",
    "a token as the user": f"https://{TOKEN}@mcp.example/sse",
    "a bearer parameter": f"https://mcp.example/sse?bearer={TOKEN}",
}


@pytest.mark.parametrize("form", list(_URLS))
def test_a_credential_in_an_mcp_server_url_is_a_secret_of_the_run(form: str) -> None:
    """SUCCEEDED before: none of these was among the run's secrets (`given_secrets`: only `?...key|token|...=`
    after `?`/`&`, and `user:password@`), so an error quoting the URL, or a tool printing it, showed the token."""
    from unified._redaction import given_secrets, redact_mapping

    url = _URLS[form]
    assert TOKEN in given_secrets({}, [{"url": url}])
    shown = str(redact_mapping({"url": url}))
    assert TOKEN not in shown
    assert "mcp.example" in shown
    assert TOKEN not in redactor({}, given_secrets({}, [{"url": url}]))(f"Client error '401' for url '{url}'")


def test_a_percent_encoded_url_password_is_hidden_decoded_too() -> None:
    """SUCCEEDED before: only `Hunter2%40...` (as written) was a secret; a driver's error quoting the decoded password
    (`Hunter2@...`) showed it."""
    from unified._redaction import secret_values

    found = secret_values({"UNIFIED_SESSION_STORE_URL": "postgresql://u:Hunter2%40Hunter2x@db.example/x"})
    assert "Hunter2@Hunter2x" in found
    assert (
        redactor({"UNIFIED_SESSION_STORE_URL": "postgresql://u:Hunter2%40Hunter2x@db.example/x"})(
            'password authentication failed: "Hunter2@Hunter2x"'
        )
        == f'password authentication failed: "{REDACTED}"'
    )


def test_a_url_with_a_token_for_its_user_in_the_environment_is_a_secret() -> None:
    """SUCCEEDED before: `GIT_REMOTE=https://<token>@git.example/o/r.git` (no password, no known shape) was no secret
    of the environment, and its token showed in events."""
    from unified._redaction import is_secret

    assert is_secret("GIT_REMOTE", f"https://{TOKEN}@git.example/o/r.git")
    assert TOKEN in redactor({"GIT_REMOTE": f"https://{TOKEN}@git.example/o/r.git"}).values


@pytest.mark.parametrize(
    "url",
    [
        "https://git@github.com/o/r.git",
        "https://example.com/search?q=passage&country_code=US",
        "https://docs.example/page#section-2",
        "ssh://deploy@host.example/srv",
    ],
)
def test_ordinary_urls_hold_no_secret(url: str) -> None:
    """Pin: a short user, a short or ordinary parameter, a fragment without `=`: nothing hidden."""
    from unified._redaction import given_secrets, is_secret, redact_mapping

    assert given_secrets({}, [{"url": url}]) == []
    assert redact_mapping({"url": url}) == {"url": url}
    assert not is_secret("SOME_URL", url)


# 5. measured with the real binary


@pytest.mark.e2e  # the real claude binary
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_e2e_claude_code_s_bash_reads_no_piece_of_a_socks_proxy_password(
    claude_setup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: with `ALL_PROXY=socks5h://user:PASSWORD@...` on the host, the model's `env` and
    `/proc/$PPID/environ` printed the password (the CLI got the variable whole). Now they print the forwarder's URL,
    with a credential of its own."""
    from tests.e2e.claude_code.test_claude_code_secrets import ENV_COMMAND, RUN_KEY, bash, claude_run
    from tests.e2e.environ_attack import pieces

    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with fake_socks(password=PASSWORD) as proxy:
        for name in ("ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # FakeAnthropic is reached directly
        seen = await claude_run(workspace, bash(ENV_COMMAND), {"ANTHROPIC_API_KEY": RUN_KEY})
    assert len(seen.bodies) >= 2, seen.events
    sent = seen.bodies[1]  # the request carrying the Bash result
    assert "--- end" in sent, sent
    assert "ALL_PROXY=socks5h://unified0:" in sent, sent
    assert pieces(PASSWORD, sent) == []
    shown = "\n".join(event.model_dump_json() for event in seen.events)
    assert pieces(PASSWORD, shown) == []


# 6. a proxy URL with credentials the forwarder cannot stand in for


@pytest.mark.parametrize(
    "value",
    [
        f"socks4://user:{PASSWORD}@socks.example:1080",
        f"socks4a://user:{PASSWORD}@socks.example:1080",
        f"socks://user:{PASSWORD}@socks.example:1080",
        f"http://user:{PASSWORD}@proxy.example:31x8",
        f"ftp://user:{PASSWORD}@proxy.example:21",
    ],
)
def test_a_proxy_url_with_credentials_the_forwarder_cannot_take_is_left_out_saying_so(value: str) -> None:
    """SUCCEEDED before: such a URL reached the child as it was ("a URL that cannot be read is left alone"), where
    `env` printed the password. Now it is left out (fail closed), with a problem naming the variable, not the value."""
    from unified._binary.proxy import unforwardable

    env, problems = unforwardable({"ALL_PROXY": value, "HTTPS_PROXY": "http://plain.example:3128", "PATH": "/bin"})
    assert env == {"HTTPS_PROXY": "http://plain.example:3128", "PATH": "/bin"}
    [problem] = problems
    assert problem.code == "proxy_not_forwarded"
    assert "ALL_PROXY" in problem.message
    assert PASSWORD not in str(problem)


def test_proxy_urls_the_forwarder_takes_or_that_carry_no_credentials_stay() -> None:
    """Pin: what `forwarded_env` stands in for, and a URL without userinfo, are no problem of `unforwardable`."""
    from unified._binary.proxy import unforwardable

    host = {
        "HTTPS_PROXY": f"http://u:{PASSWORD}@proxy.example:3128",
        "ALL_PROXY": f"socks5h://u:{PASSWORD}@socks.example",
        "all_proxy": "socks4://socks.example:1080",
        "NO_PROXY": "user@host.example",
    }
    assert unforwardable(host) == (host, [])


def test_the_problem_reaches_the_stderr_tail_of_the_process() -> None:
    """What the CLI's failure to reach the network carries (`details.stderr_tail`): why its proxy was left out."""
    from unified._binary.process import AgentSubprocess, StderrTail
    from unified._binary.proxy import unforwardable

    process = object.__new__(AgentSubprocess)
    process._tail = StderrTail(4096)
    process._tail.add(b"fetch failed\n")
    process._redact = redactor()
    process._stderr_open = False
    process._forwarder = None
    _, process._proxy_problems = unforwardable({"ALL_PROXY": f"socks4://u:{PASSWORD}@socks.example:1080"})
    tail = process.stderr_tail()
    assert tail.startswith("fetch failed\nunified: ALL_PROXY carries credentials")
    assert "(proxy_not_forwarded)" in tail
    assert PASSWORD not in tail


# 7. cassettes: a credential named in a header or a query parameter


@pytest.mark.parametrize(
    ("header", "query"),
    [
        ("x-api-key", "api_key"),
        ("X-Auth-Token", "token"),
        ("api-key", "sig"),
        ("X-Goog-Api-Key", "pwd"),
        ("Cookie", "access-token"),
    ],
)
def test_a_cassette_scrubs_a_credential_by_the_name_of_its_header_or_parameter(header: str, query: str) -> None:
    """SUCCEEDED before (each: the last two by their parameter, their header was scrubbed): a gateway's `x-api-key`
    header, or a `?api_key=` / `?token=` / `?sig=` parameter, whose value is neither an environment secret nor
    credential-shaped, was written into the cassette as it was (only five header names and the `key`/`access_token`
    parameters were scrubbed)."""
    from vcr.request import Request

    from unified.testing._cassettes import REDACTED as SCRUBBED
    from unified.testing._cassettes import scrub_request

    value = "gw-9f8e7d6c5b4a39281706"
    request = Request(
        "POST", f"https://gw.example/v1/x?alt=sse&{query}={value}", b"{}", {header: value, "Accept": "*/*"}
    )
    scrubbed = scrub_request(request)
    assert value not in scrubbed.uri
    assert "alt=sse" in scrubbed.uri
    assert scrubbed.headers[header] == SCRUBBED
    assert scrubbed.headers["Accept"] == "*/*"


def test_the_names_a_cassette_scrubs_are_not_ordinary_ones() -> None:
    """Pin: `alt`, `page`, `Content-Type`, `X-Request-Id` keep their values."""
    from unified._redaction import is_secret_name, is_secret_query

    assert [n for n in ("alt", "page", "pageSize", "q", "model") if is_secret_query(n)] == []
    assert [n for n in ("Content-Type", "X-Request-Id", "User-Agent", "Accept") if is_secret_name(n)] == []


# 8. httpx's own log of each request


def test_httpx_s_request_log_shows_no_url_password_or_query_key(caplog: pytest.LogCaptureFixture) -> None:
    """SUCCEEDED before (measured): with INFO on, httpx logged `HTTP Request: GET http://user:PASSWORD@...?api_key=...`
    whole for a client of unified's (a gateway's base URL given in code). Now its logger scrubs the record."""
    import logging

    import httpx

    from unified._internal.http import sync_client

    sync_client(5.0).close()  # unified's client puts the filter on httpx's logger
    url = f"http://user:{PASSWORD}@gateway.example/v1/x?api_key=QueryS3cretValue99&alt=sse"
    with (
        caplog.at_level(logging.INFO, logger="httpx"),
        httpx.Client(transport=httpx.MockTransport(lambda _: httpx.Response(401))) as client,
    ):
        client.get(url)
    [line] = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert line.startswith("HTTP Request: GET http://user:")
    assert PASSWORD not in line
    assert "QueryS3cretValue99" not in line
    assert "alt=sse" in line
