"""Record a run of any backend as a cassette that `unified replay` and `replay_events` play back.

    events = await record_run(params, Path("cassettes/mine/tool-call.yaml"), source="Google's API")

- `generate-content` and `interactions`: vcrpy writes every HTTP exchange of the run to a YAML
  file (credential headers, cookies and `key=` query values scrubbed, see `cassettes`);
- `gemini-cli`: the ACP JSON-RPC messages both ways go to a JSONL transcript, after a metadata
  line saying what it was recorded from, with the approval mode and the workspace.

The run is a real one: whatever `params` point at (Google's API with your credentials, a
gateway, a FakeGemini) answers, and tools run in `params.cwd`. Every line written passes through
`redact()`, so no secret from the environment reaches the file. `unified record` is this as a
command (docs/testing.md, "Recording cassettes").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unified.events import UnifiedEvent
from unified.redaction import redact
from unified.types import ExecuteParams

__all__ = ["RecordError", "record_run"]


class RecordError(Exception):
    """The cassette cannot be written as asked (wrong file type for the backend, an unknown backend)."""


_SUFFIXES = {"gemini-cli": (".jsonl",), "generate-content": (".yaml", ".yml"), "interactions": (".yaml", ".yml")}


async def record_run(params: ExecuteParams, path: Path, *, source: str) -> list[UnifiedEvent]:
    """Run `params` once and write what went over the wire to `path` (replaced if it exists).

    `source` says what answered (it goes into the file, for readers and for
    tests/test_cassettes_clean.py). Returns the run's events. Raises `RecordError` when `path`'s
    suffix does not fit the backend (`.jsonl` for gemini-cli, `.yaml` for the API backends).
    """
    backend = str(params.backend)
    suffixes = _SUFFIXES.get(backend)
    if suffixes is None:
        raise RecordError(f"cannot record the {backend!r} backend: choose gemini-cli, generate-content or interactions")
    if path.suffix not in suffixes:
        raise RecordError(f"{path}: a {backend} cassette is a {' or '.join(suffixes)} file")
    path.parent.mkdir(parents=True, exist_ok=True)
    if backend == "gemini-cli":
        return await _record_transcript(params, path, source)
    return await _record_http(params, path, source)


async def _run(params: ExecuteParams) -> list[UnifiedEvent]:
    from unified.query import execute

    async with execute(params) as stream:
        return [event async for event in stream]


async def _record_transcript(params: ExecuteParams, path: Path, source: str) -> list[UnifiedEvent]:
    transcript: list[dict[str, Any]] = []
    options = {
        **params.backend_options_dict(),
        "acp_transcript": transcript,
        "pool_size": 0,
    }  # a cold process: all of it
    events = await _run(params.model_copy(update={"backend_options": options}))
    meta = {
        "cassette": path.stem,
        "recorded_from": source,
        "approval_mode": params.approval_mode,
        "paths_are_from": str(params.cwd),
    }
    _write_redacted(path, "".join(json.dumps(line) + "\n" for line in [meta, *transcript]))
    return events


async def _record_http(params: ExecuteParams, path: Path, source: str) -> list[UnifiedEvent]:
    from unified.testing.cassettes import make_vcr

    recorder = make_vcr(path.parent, source=source)
    recorder.record_mode = "all"
    _remove(path)  # vcrpy would keep an existing cassette's interactions: start from none
    with recorder.use_cassette(path.name):
        events = await _run(params)
    _write_redacted(path, path.read_text(encoding="utf-8"))  # noqa: ASYNC240 - one small file, after the run
    return events


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _write_redacted(path: Path, text: str) -> None:
    path.write_text(redact(text), encoding="utf-8")
