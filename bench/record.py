"""Record the native transcripts bench_translate replays: `python -m bench.record`.

- ACP: every recording in `unified.testing.recordings()` played by the real pinned `gemini --acp`
  (via the gemini-cli backend's `acp_transcript` hook); the messages it received are kept verbatim,
  secrets scrubbed (`unified.testing._cassettes.scrub_text`).
- Interactions: each recorded model call re-rendered as an Interactions API turn (thought, text in as
  many deltas as the recording had chunks, function calls, some with streamed arguments) and served by
  FakeGemini over real HTTP; the SSE `data:` lines are kept verbatim, secrets scrubbed.

Both land in bench/transcripts/ and are committed, so the benchmark itself needs neither Node nor a server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench._env import MODEL, TRANSCRIPTS, gemini_binary, isolated_home, recordings, workspace
from unified._execute import EventStream
from unified.events import Result
from unified.testing import FakeGemini, FunctionCallStep, InteractionTurn, TextStep, ThoughtStep
from unified.testing._cassettes import scrub_text
from unified.testing._scenario import Step, Usage
from unified.types import ExecuteParams


async def _acp_one(responses: Path, cwd: Path, strict: bool) -> tuple[list[dict[str, Any]], str]:
    transcript: list[dict[str, Any]] = []
    options: dict[str, object] = {
        "fake_responses": str(responses),
        "fake_responses_strict": strict,
        "pool_size": 0,
        "acp_transcript": transcript,
    }
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", model=MODEL, cwd=cwd, approval_mode="yolo", backend_options=options
    )
    status = "none"
    async with EventStream(params) as stream:
        async for event in stream:
            if isinstance(event, Result):
                status = event.status
    return [m["msg"] for m in transcript if m["dir"] == "recv"], status


def record_acp() -> None:
    if gemini_binary() is None:
        sys.exit("the pinned gemini binary is missing: run scripts/setup")
    out = TRANSCRIPTS / "acp"
    out.mkdir(parents=True, exist_ok=True)
    with isolated_home() as home:
        for responses in recordings():
            messages, status = anyio.run(_acp_one, responses, workspace(home, responses.stem), True)
            if status != "success":  # recordings with incidental calls (summaries, routing) need non-strict order
                messages, status = anyio.run(_acp_one, responses, workspace(home, responses.stem + "-ns"), False)
            (out / f"{responses.stem}.jsonl").write_text("".join(scrub_text(json.dumps(m)) + "\n" for m in messages))
            print(f"acp {responses.stem}: {len(messages)} messages, result {status}")


def _turn_of(chunks: list[dict[str, Any]], arguments_delta: bool, ids: str) -> InteractionTurn:
    """One recorded generateContentStream call as the Interactions API would stream the same answer."""
    thoughts: list[str] = []
    texts: list[str] = []
    steps: list[Step] = []
    usage: dict[str, Any] = {}
    for chunk in chunks:
        usage = chunk.get("usageMetadata") or usage
        for candidate in chunk.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if part.get("thought") and part.get("text"):
                    thoughts.append(part["text"])
                elif part.get("text"):
                    texts.append(part["text"])
                elif "functionCall" in part:
                    call = part["functionCall"]
                    steps.append(
                        FunctionCallStep(
                            id=f"{ids}-{len(steps)}",
                            name=call["name"],
                            arguments=call.get("args") or {},
                            arguments_delta=arguments_delta,
                        )
                    )
    head: list[Step] = [ThoughtStep(summary=thoughts, signature="sig")] if thoughts else []
    if texts:
        head.append(TextStep(text="".join(texts), chunks=len(texts)))
    total = Usage(
        input_tokens=usage.get("promptTokenCount", 0),
        output_tokens=usage.get("candidatesTokenCount", 0),
        thinking_tokens=usage.get("thoughtsTokenCount", 0),
    )
    return InteractionTurn(steps=[*head, *steps], usage=total)


def record_interactions() -> None:
    out = TRANSCRIPTS / "interactions"
    out.mkdir(parents=True, exist_ok=True)
    for n, responses in enumerate(recordings()):
        calls = [json.loads(line) for line in responses.read_text().splitlines() if line.strip()]
        turns = [
            _turn_of(c["response"], n % 2 == 1, f"{responses.stem}-{k}")
            for k, c in enumerate(calls)
            if c["method"] == "generateContentStream"
        ]
        lines: list[str] = []
        with FakeGemini(turns) as fake, httpx.Client(base_url=fake.base_url) as http:
            for _ in turns:
                body = {"model": "gemini-3-flash-preview", "input": "go", "stream": True}
                with http.stream("POST", "/v1beta/interactions", json=body) as reply:
                    lines += [line[6:] for line in reply.iter_lines() if line.startswith("data: {")]
        (out / f"{responses.stem}.jsonl").write_text("".join(scrub_text(line) + "\n" for line in lines))
        print(f"interactions {responses.stem}: {len(lines)} events")


if __name__ == "__main__":
    record_interactions()
    record_acp()
