"""The HTTP MCP relay's environment holds the server's headers (a bearer token): the model's commands, run as the
same user, must not read it in `/proc/<pid>/environ` (docs/backends/codex.md, `mcp_servers`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.harness.another_user import not_root_prefix
from unified._adapters.codex import _resources_relay

pytestmark = [
    pytest.mark.e2e,  # starts the relay and a reader
    pytest.mark.skipif(sys.platform != "linux", reason="/proc/<pid>/environ and PR_SET_DUMPABLE are Linux's"),
]

TOKEN = "relay-bearer-0123456789abcdefghij"


def test_a_command_of_the_same_user_cannot_read_the_http_relay_s_headers() -> None:
    """SUCCEEDED before: `cat /proc/<relay>/environ` by a process of the relay's user printed the bearer token."""
    prefix = not_root_prefix()  # the relay and its reader: one user, not root
    env = {
        "PATH": os.environ["PATH"],
        _resources_relay.URL_VARIABLE: "http://127.0.0.1:9/mcp",  # the discard port: nothing answers
        _resources_relay.HEADERS_VARIABLE: json.dumps({"Authorization": f"Bearer {TOKEN}"}),
    }
    relay = subprocess.Popen(
        [*prefix, sys.executable, "-I", "-S", _resources_relay.__file__, "--http"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert relay.stdin is not None
        assert relay.stdout is not None
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        relay.stdin.write(json.dumps(ping).encode() + b"\n")
        relay.stdin.flush()
        answer = json.loads(relay.stdout.readline())  # the relay is past its start: it read and answered a message
        assert answer["id"] == 1
        assert "error" in answer, answer
        reader = subprocess.run(
            [*prefix, "cat", f"/proc/{relay.pid}/environ"], capture_output=True, env={"PATH": os.environ["PATH"]}
        )
        assert TOKEN.encode() not in reader.stdout
        assert reader.returncode != 0
        assert b"Permission denied" in reader.stderr, reader
    finally:
        relay.kill()
        relay.wait()
