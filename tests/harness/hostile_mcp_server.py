"""A hostile MCP server on stdio, run as a script by the security tests: each tool answers one way a server may
break its protocol (`huge`: a 40 MB line; `deep`: 10,000 nested arrays; `wide`: 70 levels of lists; `broken`: a
line that is not JSON; `img`: an image whose data is not base64; `fine`: an answer as it should be)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
"""What a test gives `StdioMcpServer` to run (`sys.executable SCRIPT`)."""
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}} for name in ("huge", "deep", "broken", "fine", "wide", "img")
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def call(rid: object, name: str) -> None:
    if name == "huge":
        write(f'{{"jsonrpc": "2.0", "id": {json.dumps(rid)}, "result": {{"content": [{{"type": "text", "text": "')
        for _ in range(40):
            sys.stdout.write("h" * (1024 * 1024))
        write('"}]}}\n')
    elif name == "deep":
        head = f'{{"jsonrpc": "2.0", "id": {json.dumps(rid)}, "result": {{"content": [], "structuredContent": {{"a": '
        write(head + "[" * 10000 + "]" * 10000 + "}}}\n")
    elif name == "wide":
        nested: object = 1
        for _ in range(70):
            nested = [nested]
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [], "structuredContent": {"a": nested}}})
    elif name == "img":
        image = {"type": "image", "data": "!!!notbase64", "mimeType": "image/png"}
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [image]}})
    elif name == "broken":
        write(f'{{"jsonrpc": "2.0", "id": {json.dumps(rid)}, "result": {{"content": [ not json\n')
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "fine"}]}})


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        method, rid = request.get("method"), request.get("id")
        if rid is None:
            continue
        if method == "initialize":
            info = {"name": "hostile", "version": "1"}
            version = request["params"]["protocolVersion"]
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info},
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(rid, request["params"]["name"])
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main()
