"""The option fields every backend that drives an agent binary has, typed once.

`start_process` (the transport seam: tests start a stand-in `AgentProcess` instead of the binary)
and a transcript list (cassette recording: the adapter appends every message both ways to the
caller's own list, so it must be kept by identity, never copied or validated item by item).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator

from unified._binary.process import ProcessStarter

__all__ = ["StartProcessOption", "TranscriptOption"]


def _callable(value: object) -> ProcessStarter | None:
    if value is not None and not callable(value):
        raise ValueError(f"must be callable (argv, cwd, env) -> AgentProcess, not {type(value).__name__}")
    return value


def _same_list(value: object) -> list[dict[str, Any]] | None:
    """The caller's own list, not a copy: the adapter appends to it and the caller reads it."""
    if value is not None and not isinstance(value, list):
        raise ValueError(f"must be a list, not {type(value).__name__}")
    return value


StartProcessOption = Annotated[ProcessStarter | None, PlainValidator(_callable)]
TranscriptOption = Annotated[list[dict[str, Any]] | None, PlainValidator(_same_list)]
