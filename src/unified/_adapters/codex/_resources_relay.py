"""A stdio MCP server with its resources taken away: Codex starts this (`python -I -S <this file> -- <command>
<args>...`) in place of the server, and it relays every line both ways but two.

Codex 0.171 offers the model `list_mcp_resources`, `list_mcp_resource_templates` and `read_mcp_resource` with any
MCP server and runs them without asking the client (no setting turns them off or makes them ask; interrupting the
turn comes after the read: measured), where unified has the caller decide every MCP call. So, outside yolo, the
server's answer to `initialize` loses its `resources` capability, and a `resources/*` request Codex still sends is
answered here with an error, never reaching the server. Its tools, prompts and notifications pass unchanged.

Run by path with the standard library alone (`-I -S`: no site-packages, no PYTHON* variables), as a process of its
own between Codex and the server: the server's exit status is this process's.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from typing import Any

__all__ = ["main"]

REFUSAL = (
    "unified turned this server's resources off: Codex reads them without asking, and the run's approval mode "
    "has every MCP call decided by the caller (they are available with approval_mode='yolo')"
)


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: _resources_relay.py -- <command> [args...]\n")
        return 2
    try:
        server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write(f"could not start the MCP server {argv[0]!r}: {exc}\n")
        return 127
    stdin, stdout = server.stdin, server.stdout
    assert stdin is not None
    assert stdout is not None
    out = sys.stdout.buffer
    writing = threading.Lock()
    initialize_ids: set[str] = set()

    def to_codex(line: bytes) -> None:  # from both threads: the server's lines and the refusals
        with writing:
            out.write(line)
            out.flush()

    def from_codex() -> None:
        try:
            for line in sys.stdin.buffer:
                # Only a line that may be a resources request or the `initialize` is read (a call's arguments
                # may be large): JSON spells a method name with its characters as they are, or with escapes, so
                # a line holding `\\` is read too.
                suspect = b"resources/" in line or b"initialize" in line or b"\\" in line
                message = _message(line) if suspect else None
                method = message.get("method") if message is not None else None
                if message is not None and isinstance(method, str):
                    if method.startswith("resources/"):
                        if "id" in message:
                            error = {"code": -32601, "message": REFUSAL}
                            to_codex(
                                json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode() + b"\n"
                            )
                        continue
                    if method == "initialize" and "id" in message:
                        initialize_ids.add(json.dumps(message["id"]))
                stdin.write(line)
                stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    threading.Thread(target=from_codex, daemon=True).start()
    try:
        for line in stdout:
            message = _message(line) if initialize_ids and b"resources" in line else None
            if message is not None and "method" not in message and json.dumps(message.get("id")) in initialize_ids:
                initialize_ids.discard(json.dumps(message.get("id")))
                result = message.get("result")
                capabilities = result.get("capabilities") if isinstance(result, dict) else None
                if isinstance(capabilities, dict) and "resources" in capabilities:
                    del capabilities["resources"]
                    line = json.dumps(message).encode() + b"\n"
            to_codex(line)
    except (BrokenPipeError, OSError):
        server.kill()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
