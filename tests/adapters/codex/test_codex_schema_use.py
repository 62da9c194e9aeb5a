"""Every app-server method and notification the codex adapter uses is in the protocol kept for the pinned
version (schemas/codex-app-server/): renamed or removed upstream, this fails before any run does."""

from __future__ import annotations

import json
from pathlib import Path

from unified._adapters.codex._launch import PINNED_VERSION

BUNDLE = (
    Path(__file__).resolve().parents[3]
    / "schemas"
    / "codex-app-server"
    / PINNED_VERSION
    / "json-experimental"
    / "codex_app_server_protocol.schemas.json"
)
SENT = {
    "initialize",
    "thread/start",
    "thread/resume",
    "turn/start",
    "turn/steer",
    "turn/interrupt",
    "thread/backgroundTerminals/clean",
}
READ = {
    "item/started",
    "item/completed",
    "item/agentMessage/delta",
    "item/reasoning/summaryTextDelta",
    "item/reasoning/summaryPartAdded",
    "item/reasoning/textDelta",
    "item/commandExecution/outputDelta",
    "thread/tokenUsage/updated",
    "turn/started",
    "turn/completed",
    "error",
    "warning",
    "configWarning",
    "mcpServer/startupStatus/updated",
}
ANSWERED = {
    "item/commandExecution/requestApproval",
    "item/fileChange/requestApproval",
    "mcpServer/elicitation/request",
    "item/tool/requestUserInput",
}
ITEMS = {"commandExecution", "fileChange", "mcpToolCall", "collabAgentToolCall", "agentMessage", "reasoning"}


def methods(definition: dict[str, object]) -> set[str]:
    return {
        name
        for variant in definition.get("oneOf", [])  # type: ignore[attr-defined]
        for name in variant.get("properties", {}).get("method", {}).get("enum", [])
    }


def test_what_the_adapter_sends_reads_and_answers_is_in_the_pinned_protocol() -> None:
    definitions = json.loads(BUNDLE.read_text())["definitions"]
    assert methods(definitions["ClientRequest"]) >= SENT - {"initialized"}
    assert methods(definitions["ServerNotification"]) >= READ
    assert methods(definitions["ServerRequest"]) >= ANSWERED
    text = BUNDLE.read_text()
    for item in ITEMS:
        assert f'"{item}"' in text, f"ThreadItem {item} is gone"
    for decision in ("accept", "acceptForSession", "decline", "cancel"):
        assert f'"{decision}"' in text


def test_the_collaboration_mode_a_turn_sets_is_in_the_pinned_protocol() -> None:
    """`_run.collaboration_mode`: turn/start's collaborationMode {mode, settings {model, reasoning_effort}},
    read from thread/start's and thread/resume's answers (model, reasoningEffort, the resumed mode)."""
    v2 = json.loads(BUNDLE.read_text())["definitions"]["v2"]
    assert "collaborationMode" in v2["TurnStartParams"]["properties"]
    assert set(v2["ModeKind"]["enum"]) >= {"plan", "default"}
    assert set(v2["CollaborationMode"]["properties"]) >= {"mode", "settings"}
    assert set(v2["Settings"]["properties"]) >= {"model", "reasoning_effort"}
    assert "collaborationMode" in v2["ThreadResumeResponse"]["properties"]
    for answer in ("ThreadStartResponse", "ThreadResumeResponse"):
        assert {"model", "reasoningEffort"} <= set(v2[answer]["properties"]), answer
