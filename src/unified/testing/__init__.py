"""Offline, deterministic testing for `unified` and for orchestrators built on it.

- `FakeGemini`: a real HTTP server on 127.0.0.1 speaking the Gemini API (generateContent, SSE
  streams, the Interactions API, Vertex paths), driven by a script (the Gemini CLI's
  `--fake-responses` recordings or our scenario models), with fault injection and a request log.
- `recordings()`, `real_recordings()`: the two corpora of real model recordings (Gemini CLI
  `--fake-responses` JSONL) shipped with unified; `unified.testing.fidelity` plays them and checks the stream.
- `ScriptedBackend`: an in-process backend playing a script of UnifiedEvents through the same
  stream guard as the real backends; importing `unified.testing` registers it as `backend="scripted"`.
- `FakeAcp`: an in-process ACP agent standing in for `gemini --acp` behind the real gemini-cli
  adapter (its `start_process` option), scripted or replaying a recorded transcript.

See docs/testing.md.
"""

from unified.backends import register_backend
from unified.testing._recordings import (
    real_recordings,
    real_recordings_dir,
    real_recordings_manifest,
    recordings,
    recordings_dir,
)
from unified.testing.fake_acp import FakeAcp, script_from_transcript
from unified.testing.fake_gemini import REDACTED, FakeGemini, RecordedRequest
from unified.testing.scenario import (
    ApiMethod,
    CodeExecutionCall,
    CodeExecutionResult,
    Fault,
    FaultKind,
    FunctionCall,
    FunctionCallStep,
    GoogleSearchCall,
    GoogleSearchResult,
    InteractionStatus,
    InteractionTurn,
    ModelTurn,
    RecordedTurn,
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
from unified.testing.scripted import Ask, EndMessage, Fail, ScriptedBackend, Sleep

register_backend("scripted", "unified.testing.scripted:create_backend")

__all__ = [
    "REDACTED",
    "ApiMethod",
    "Ask",
    "CodeExecutionCall",
    "CodeExecutionResult",
    "EndMessage",
    "Fail",
    "FakeAcp",
    "FakeGemini",
    "Fault",
    "FaultKind",
    "FunctionCall",
    "FunctionCallStep",
    "GoogleSearchCall",
    "GoogleSearchResult",
    "InteractionStatus",
    "InteractionTurn",
    "ModelTurn",
    "RecordedRequest",
    "RecordedTurn",
    "Script",
    "ScriptedBackend",
    "ServerStep",
    "ServerTool",
    "Sleep",
    "Step",
    "TextStep",
    "Thought",
    "ThoughtStep",
    "Turn",
    "Usage",
    "real_recordings",
    "real_recordings_dir",
    "real_recordings_manifest",
    "recordings",
    "recordings_dir",
    "script_from_transcript",
]
