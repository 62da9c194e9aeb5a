"""docs/protocol.md's example stream is what `unified run "What is here?" --backend scripted --json` prints.

The example is compared with a real run of the scripted backend, so it cannot go stale: its
capabilities are the matrix's (all of them, however many there are), its events the protocol's (one
`permission_decision` per client-side call). Only what differs between runs is left aside: the
timestamps, the duration and the working directory. `python -m tests.foundation.test_docs_protocol`
rewrites the example from a fresh run.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio

from unified import ExecuteParams, execute
from unified import capabilities as matrix
from unified.events import dump_event

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "docs" / "protocol.md"
COMMAND = '`unified run "What is here?" --backend scripted --json`'
_EXAMPLE = re.compile(r"(?P<head>## An example stream\n\n.*?\n\n```json\n)(?P<lines>.*?)(?P<tail>^```$)", re.S | re.M)
VOLATILE = ("timestamp", "duration_ms", "cwd")


def documented() -> list[dict[str, Any]]:
    match = _EXAMPLE.search(PROTOCOL.read_text(encoding="utf-8"))
    assert match is not None, "docs/protocol.md has no '## An example stream' json block"
    assert COMMAND in match["head"]
    return [json.loads(line) for line in match["lines"].splitlines()]


async def _stream() -> list[str]:
    params = ExecuteParams(prompt="What is here?", backend="scripted", cwd=Path("/"))
    async with execute(params) as events:
        return [dump_event(event) async for event in events]


def actual() -> list[dict[str, Any]]:
    """The events of the command, as its JSON lines, without `native` (the example leaves it out)."""
    lines = [json.loads(line) for line in anyio.run(_stream)]
    for line in lines:
        line.pop("native", None)
    return lines


def _stable(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in line.items() if k not in VOLATILE} for line in lines]


def test_the_example_stream_is_a_real_run_of_the_scripted_backend() -> None:
    assert _stable(documented()) == _stable(actual()), "run `python -m tests.foundation.test_docs_protocol`"


def test_the_example_lists_every_capability_of_the_matrix() -> None:
    started = documented()[0]
    assert started["type"] == "session_started"
    assert list(started["capabilities"]) == list(matrix.CAPABILITIES)
    assert started["capabilities"] == matrix.snapshot("scripted")


def test_the_example_has_one_permission_decision_per_client_side_call() -> None:
    lines = documented()
    calls = [line["tool_use_id"] for line in lines if line["type"] == "tool_use" and not line["server_side"]]
    decided = [line["tool_use_id"] for line in lines if line["type"] == "permission_decision"]
    assert calls == decided != []


def rewrite() -> None:
    """Put a fresh run into docs/protocol.md (with the example's working directory, /work/demo)."""
    lines = actual()
    for line in lines:
        if "cwd" in line:
            line["cwd"] = "/work/demo"
    text = PROTOCOL.read_text(encoding="utf-8")
    body = "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in lines)
    PROTOCOL.write_text(_EXAMPLE.sub(lambda m: m["head"] + body + m["tail"], text), encoding="utf-8")


if __name__ == "__main__":
    rewrite()
    sys.stdout.write(f"rewrote the example stream of {PROTOCOL}\n")
