"""What every stand-in agent of a transcript replay shares (`_replay`'s gemini-cli and claude-code ones,
`_replay_codex`'s): its place in the recording, and how it ends the process where the adapter diverges from it."""

from __future__ import annotations

from typing import Any

from unified.testing._fake_process import FakeAgentProcess

__all__ = ["TranscriptAgent"]


class TranscriptAgent:
    """A stand-in agent binary that answers the adapter from a recorded transcript (`entries`, played from
    `position`) on `process`. A mismatch ends the process (exit 1) with the reason on stderr, which the adapter
    reports, and in `differences`, which the replay reports."""

    def __init__(self, entries: list[dict[str, Any]], process: FakeAgentProcess, differences: list[str]) -> None:
        self.entries = entries
        self.process = process
        self.differences = differences
        self.position = 0

    def _fail(self, reason: str) -> None:
        self.differences.append(reason)
        self.process.write_stderr(f"replay: {reason}\n")
        self.process.exit(1)
