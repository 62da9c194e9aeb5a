"""Helpers for the gemini e2e tests: model responses, event kinds, a /proc scan for orphans."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.harness.recordings import recordings_dir
from unified.events import UnifiedEvent

ROOT = Path(__file__).resolve().parents[3]
LOCAL_BINARY = ROOT / ".gemini-cli" / "node_modules" / ".bin" / "gemini"
Run = Callable[..., Awaitable[list[UnifiedEvent]]]
"""The `run_gemini` fixture: (responses file, prompt, **ExecuteParams fields) → events."""
RECORDINGS = recordings_dir()


def stream_line(*parts: dict[str, Any], prompt_tokens: int = 100, output_tokens: int = 5) -> str:
    """One `generateContentStream` call answering with `parts` in a single chunk."""
    chunk = {
        "candidates": [{"content": {"parts": list(parts), "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": output_tokens,
            "totalTokenCount": prompt_tokens + output_tokens,
        },
    }
    return json.dumps({"method": "generateContentStream", "response": [chunk]})


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def thought(value: str) -> dict[str, Any]:
    return {"text": value, "thought": True}


def kinds(events: list[UnifiedEvent]) -> list[str]:
    return [e.type for e in events]


def _processes() -> dict[int, tuple[bytes, int]]:
    """Live (not zombie) processes: pid → (command line, session id). A /proc scan, no psutil."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            found[int(entry.name)] = (cmdline, int(fields[3]))
    return found


def sessions_of(marker: str) -> set[int]:
    """The session ids of processes whose command line mentions `marker` (a test's own responses file).

    The adapter starts every gemini in a new session, so its descendants (node, shells, MCP servers)
    keep that id even when orphaned; other suites' gemini processes on the machine do not match.
    """
    return {sid for cmdline, sid in _processes().values() if marker.encode() in cmdline}


def alive_in(sessions: set[int]) -> set[int]:
    return {pid for pid, (_, sid) in _processes().items() if sid in sessions}
