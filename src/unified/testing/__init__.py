"""The test kit for orchestrators built on `unified`: offline, deterministic, on the real adapters.

- `FakeOpenAI`: the same scripts played as the OpenAI Responses API (SSE), for the real `codex`
  binary (`backend_options_for(server, "codex")`), with the same faults and request log.
- `FakeGemini`: a real HTTP server on 127.0.0.1 speaking the Gemini API (generateContent, SSE
  streams, the Interactions API, Vertex paths), driven by a `Script` of model turns (or the Gemini
  CLI's `--fake-responses` recordings), with fault injection and a request log;
  `backend_options_for(server, backend)` points any Gemini backend at it.
- `FakeAnthropic`: the same for the Anthropic Messages API (SSE streams, Vertex and Bedrock paths),
  driven by the same `Script`s, behind the real `claude` binary (`ANTHROPIC_BASE_URL`);
  `backend_options_for(server, "claude-code")` points the claude-code backend at it.
- `ScriptedBackend` (`backend="scripted"`): an in-process backend playing a script of UnifiedEvents
  through the same stream guard as the real backends.
- `FakeAgentProcess`: an in-process `AgentProcess` that is one handler from the lines a backend
  sends to the lines it answers, for a backend that drives an agent binary.
- `FakeAcp`: an in-process ACP agent standing in for `gemini --acp` behind the real gemini-cli
  adapter (its `start_process` option), scripted or replaying a recorded transcript.
- `record_run`, `replay_events`, `use_cassette` (with `cassette_endpoint`, the `base_url` a cassette's run
  uses): record a run once, replay it offline through the real adapter code (HTTP cassettes need
  `pip install 'unified[cassettes]'`).
- `StoreConformance`, `StoreProcessConformance`: the conformance suite for your own `SessionStore`.

Names load on first use, so importing this package costs nothing until a fake is needed.
See docs/testing.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unified.testing._cassettes import cassette_endpoint, scrub_text, use_cassette
    from unified.testing._fake_acp import FakeAcp, script_from_transcript
    from unified.testing._fake_anthropic import AGENT_HEADER, FakeAnthropic
    from unified.testing._fake_gemini import FakeGemini
    from unified.testing._fake_openai import CODEX_MODEL, FAKE_OPENAI_KEY, FakeOpenAI, codex_call, responses_events
    from unified.testing._fake_process import FakeAgentProcess
    from unified.testing._record import RecordError, record_run
    from unified.testing._replay import ReplayDiverged, ReplayError, replay_events
    from unified.testing._scenario import (
        ApiMethod,
        CodeExecutionCall,
        CodeExecutionResult,
        Fault,
        FaultKind,
        FunctionCall,
        FunctionCallStep,
        GoogleSearchCall,
        GoogleSearchResult,
        ImageStep,
        InteractionStatus,
        InteractionTurn,
        ModelTurn,
        RecordedTurn,
        ResponsesTurn,
        Script,
        ServerStep,
        ServerTool,
        Step,
        TextStep,
        Thought,
        ThoughtStep,
        Turn,
        Usage,
    )
    from unified.testing._scripted import Ask, EndMessage, Fail, ScriptedBackend, Sleep
    from unified.testing._serving import REDACTED, RecordedRequest
    from unified.testing._store_conformance import StoreConformance, StoreProcessConformance
    from unified.testing._wiring import backend_options_for, prepare_cli_home

_HOMES = {
    "unified.testing._cassettes": ("cassette_endpoint", "scrub_text", "use_cassette"),
    "unified.testing._fake_acp": ("FakeAcp", "script_from_transcript"),
    "unified.testing._fake_anthropic": ("AGENT_HEADER", "FakeAnthropic"),
    "unified.testing._fake_gemini": ("FakeGemini",),
    "unified.testing._serving": ("REDACTED", "RecordedRequest"),
    "unified.testing._fake_openai": ("CODEX_MODEL", "FAKE_OPENAI_KEY", "FakeOpenAI", "codex_call", "responses_events"),
    "unified.testing._fake_process": ("FakeAgentProcess",),
    "unified.testing._record": ("RecordError", "record_run"),
    "unified.testing._replay": ("ReplayDiverged", "ReplayError", "replay_events"),
    "unified.testing._scenario": (
        "ApiMethod",
        "CodeExecutionCall",
        "CodeExecutionResult",
        "Fault",
        "FaultKind",
        "FunctionCall",
        "FunctionCallStep",
        "GoogleSearchCall",
        "GoogleSearchResult",
        "ImageStep",
        "InteractionStatus",
        "InteractionTurn",
        "ModelTurn",
        "RecordedTurn",
        "ResponsesTurn",
        "Script",
        "ServerStep",
        "ServerTool",
        "Step",
        "TextStep",
        "Thought",
        "ThoughtStep",
        "Turn",
        "Usage",
    ),
    "unified.testing._scripted": ("Ask", "EndMessage", "Fail", "ScriptedBackend", "Sleep"),
    "unified.testing._store_conformance": ("StoreConformance", "StoreProcessConformance"),
    "unified.testing._wiring": ("backend_options_for", "prepare_cli_home"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "AGENT_HEADER",
    "CODEX_MODEL",
    "FAKE_OPENAI_KEY",
    "REDACTED",
    "ApiMethod",
    "Ask",
    "CodeExecutionCall",
    "CodeExecutionResult",
    "EndMessage",
    "Fail",
    "FakeAcp",
    "FakeAgentProcess",
    "FakeAnthropic",
    "FakeGemini",
    "FakeOpenAI",
    "Fault",
    "FaultKind",
    "FunctionCall",
    "FunctionCallStep",
    "GoogleSearchCall",
    "GoogleSearchResult",
    "ImageStep",
    "InteractionStatus",
    "InteractionTurn",
    "ModelTurn",
    "RecordError",
    "RecordedRequest",
    "RecordedTurn",
    "ReplayDiverged",
    "ReplayError",
    "ResponsesTurn",
    "Script",
    "ScriptedBackend",
    "ServerStep",
    "ServerTool",
    "Sleep",
    "Step",
    "StoreConformance",
    "StoreProcessConformance",
    "TextStep",
    "Thought",
    "ThoughtStep",
    "Turn",
    "Usage",
    "backend_options_for",
    "cassette_endpoint",
    "codex_call",
    "prepare_cli_home",
    "record_run",
    "replay_events",
    "responses_events",
    "script_from_transcript",
    "scrub_text",
    "use_cassette",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'unified.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
