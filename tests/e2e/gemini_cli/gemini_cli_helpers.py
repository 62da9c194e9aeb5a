"""Helpers for the gemini e2e tests: model responses, event kinds, a /proc scan for orphans."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from tests.hang_guard import HANG_GUARD_S
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


def cmdline(pid: int) -> bytes:
    """Process `pid`'s command line as /proc has it (NUL-separated), or nothing once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


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


def running_as(command: str) -> set[int]:
    """The live processes whose command line is `command` (a shell command the CLI ran: the CLI starts its
    commands in a session of their own, which `sessions_of` does not see)."""
    wanted = command.encode() + b" "
    return {pid for pid, (cmdline, _) in _processes().items() if cmdline == wanted}


async def later_start_with_cleanup(home: Path, workspace: Path, chats: Path | None = None) -> None:
    """Start the real CLI in the workspace with session cleanup ON and wait until its cleanup ran.

    A decoy session with an empty duplicate (the bug's leftover), put in `chats` (the workspace's project's:
    by default `tmp/ws/chats`), proves the cleanup did run: it is deleted, while the real session must be
    left alone.
    """
    chats = chats if chats is not None else home / "tmp" / "ws" / "chats"
    decoy_id = "dec0dec0-0000-4000-8000-000000000000"
    header = {"sessionId": decoy_id, "projectHash": "x", "startTime": "2026-01-01T00:00:00Z", "kind": "main"}
    decoy = chats / "session-2026-01-01T00-00-dec0dec0.jsonl"
    decoy.write_text(json.dumps(header) + "\n" + json.dumps({"id": "u", "type": "user", "content": "hi"}) + "\n")
    (chats / "session-2026-01-01T00-01-dec0dec0.jsonl").write_text(json.dumps(header) + "\n")
    # User settings: the CLI ignores a system settings file unless root owns it and every parent.
    settings = json.loads((home / "settings.json").read_text())
    settings["general"]["sessionRetention"] = {"enabled": True, "maxAge": "3650d"}
    (home / "settings.json").write_text(json.dumps(settings))
    # Not relaunched (as unified starts it): the relaunch's second node, which does the cleanup alike, doubled the cost.
    env = {**os.environ, "GEMINI_CLI_NO_RELAUNCH": "true"}
    child = await anyio.open_process([str(LOCAL_BINARY), "--acp"], cwd=workspace, env=env, stdout=subprocess.DEVNULL)
    try:
        with anyio.fail_after(HANG_GUARD_S):
            while decoy.exists():  # noqa: ASYNC110 -- waiting on another process's file system work
                await anyio.sleep(0.1)
    finally:
        child.kill()
        await child.aclose()
