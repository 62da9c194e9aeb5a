"""Render script turns as the JSON Google's servers send, so FakeGemini stays a thin HTTP shell.

Shapes follow what google-genai 3.x parses: camelCase REST JSON for the generateContent family,
snake_case events for the Interactions API stream.
"""

from __future__ import annotations

import base64
import fnmatch
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from unified.testing._scenario import (
    CodeExecutionCall,
    CodeExecutionResult,
    Fault,
    FunctionCallStep,
    GoogleSearchCall,
    GoogleSearchResult,
    ImageStep,
    InteractionTurn,
    ModelTurn,
    ServerStep,
    ServerTool,
    Step,
    TextStep,
    ThoughtStep,
    Usage,
)

__all__ = [
    "INTERACTION_EVENTS",
    "JsonObject",
    "RenderedStep",
    "as_interaction_turn",
    "b64",
    "error_body",
    "fault_error",
    "history_problem",
    "interaction_usage",
    "merge_chunks",
    "model_chunks",
    "render_legacy_step",
    "render_step",
    "server_tool_parts",
    "split_text",
    "usage_metadata",
    "wants_invocations",
]

JsonObject = dict[str, Any]

_HTTP_FAULTS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "quota_exceeded": (
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    "server_error": (500, "INTERNAL", "An internal error has occurred."),
    "unavailable": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    "bad_request": (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
    "unauthenticated": (401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
    "permission_denied": (403, "PERMISSION_DENIED", "The caller does not have permission."),
    "not_found": (404, "NOT_FOUND", "models/unknown is not found for API version v1beta."),
}


def b64(text: str) -> str:
    """Signatures are bytes on the wire, base64-encoded; scripts hold them as plain text."""
    return base64.b64encode(text.encode()).decode()


def error_body(code: int, status: str, message: str, details: list[JsonObject] | None = None) -> JsonObject:
    """The google.rpc.Status envelope every Google API error uses."""
    error: JsonObject = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return {"error": error}


def fault_error(fault: Fault, model: str | None) -> tuple[int, JsonObject]:
    """The HTTP status and body of an HTTP fault (stream faults reuse the 500 body for their error chunk)."""
    kind = fault.carries if fault.kind == "mid_stream_error" and fault.carries is not None else fault.kind
    code, status, default_message = _HTTP_FAULTS.get(kind, _HTTP_FAULTS["server_error"])
    message = fault.message or default_message
    details: list[JsonObject] = []
    if kind == "rate_limit":
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": model or "unknown"},
                        "quotaValue": "10",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fault.retry_delay},
        ]
        if fault.retry_after is not None:  # the header's wait alone
            details = details[:1]
    return code, error_body(code, status, message, details)


# --- generateContent family -------------------------------------------------------------------------

CALL_COUNT_MISMATCH = (
    "Please ensure that the number of function response parts is equal to the number of function call parts "
    "of the function call turn."
)
RESPONSE_WITHOUT_CALL = "Please ensure that function response turn comes immediately after a function call turn."
"""The Gemini API's own 400 INVALID_ARGUMENT messages for a history whose calls and responses do not pair up."""


def _role(content: Any) -> str:
    role = content.get("role") if isinstance(content, dict) else None
    return role if isinstance(role, str) and role else "user"


def _parts(content: Any) -> list[JsonObject]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _part_id(part: JsonObject, key: str) -> Any:
    value = part.get(key)
    return value.get("id") if isinstance(value, dict) else None


def history_problem(body: Any) -> str | None:
    """Why the Gemini API would refuse this generateContent body's history (HTTP 400), or None.

    As the real API does, consecutive contents of one role count as one turn. A model turn's
    function calls must be answered by the very next turn, a user turn holding exactly as many
    function responses; a turn of function responses must follow a model turn that made calls. A
    call the model's own turn answers (a server-side MCP call: its functionResponse in the same
    model turn, same id) is the server's and needs no answer. The CLI 0.61's resumed sessions break
    the first rule (every response twice) and its denied calls the second (a response without its
    call), which the real API answers with these messages.
    """
    contents = body.get("contents") if isinstance(body, dict) else None
    if not isinstance(contents, list):
        return None
    turns: list[tuple[str, list[JsonObject]]] = []
    for content in contents:
        role, parts = _role(content), _parts(content)
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(parts)
        else:
            turns.append((role, list(parts)))
    pending: int | None = None
    """Function calls of the previous model turn still to be answered (None: it made none)."""
    for role, parts in turns:
        calls = [p for p in parts if isinstance(p.get("functionCall"), dict)]
        responses = [p for p in parts if isinstance(p.get("functionResponse"), dict)]
        if role == "model":
            answered = {_part_id(p, "functionResponse") for p in responses} - {None}
            own = [p for p in calls if _part_id(p, "functionCall") in answered]
            if pending is not None:
                return CALL_COUNT_MISMATCH
            pending = (len(calls) - len(own)) or None
            continue
        if pending is None:
            if responses:
                return RESPONSE_WITHOUT_CALL
            continue
        if len(responses) != pending:
            return CALL_COUNT_MISMATCH
        pending = None
    return CALL_COUNT_MISMATCH if pending is not None else None


def usage_metadata(usage: Usage) -> JsonObject:
    meta: JsonObject = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.total_tokens,
    }
    if usage.thinking_tokens:
        meta["thoughtsTokenCount"] = usage.thinking_tokens
    if usage.cached_tokens:
        meta["cachedContentTokenCount"] = usage.cached_tokens
    if usage.tool_use_tokens:
        meta["toolUsePromptTokenCount"] = usage.tool_use_tokens
    return meta


def split_text(text: str, pieces: int) -> list[str]:
    """Split into at most ``pieces`` non-empty, nearly equal parts (one part for empty text)."""
    if not text:
        return []
    pieces = min(pieces, len(text))
    size, extra = divmod(len(text), pieces)
    out: list[str] = []
    start = 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


def _chunk(parts: list[JsonObject], model: str) -> JsonObject:
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
        "modelVersion": model,
    }


_TOOL_TYPES = {
    "google_search": "GOOGLE_SEARCH_WEB",
    "google_maps": "GOOGLE_MAPS",
    "url_context": "URL_CONTEXT",
    "file_search": "FILE_SEARCH",
}
"""The generateContent `toolType` of each built-in tool a `toolCall` part can name."""


def wants_invocations(body: Any) -> bool:
    """Whether a generateContent request asked for `toolCall` / `toolResponse` parts (either casing)."""
    config = body.get("toolConfig") or body.get("tool_config") if isinstance(body, dict) else None
    if not isinstance(config, dict):
        return False
    return bool(config.get("includeServerSideToolInvocations") or config.get("include_server_side_tool_invocations"))


def server_tool_parts(tool: ServerTool, invocations: bool) -> list[JsonObject]:
    """A built-in tool's call and result as generateContent parts (none for a hidden invocation)."""
    call: JsonObject
    if tool.tool == "code_execution":
        code = {"language": "PYTHON", "code": str(tool.arguments.get("code", "")), "id": tool.id}
        outcome = {"outcome": "OUTCOME_OK", "output": "", **tool.response, "id": tool.id}
        call, result = {"executableCode": code}, {"codeExecutionResult": outcome}
    elif invocations:
        kind = _TOOL_TYPES[tool.tool]
        call = {"toolCall": {"id": tool.id, "toolType": kind, "args": tool.arguments}}
        result = {"toolResponse": {"id": tool.id, "toolType": kind, "response": tool.response}}
    else:
        return []
    if tool.signature is not None:
        call["thoughtSignature"] = b64(tool.signature)
    return [call, result]


def declared_functions(body: Any) -> list[str]:
    """The function names a generateContent request declares (its `tools[].functionDeclarations`)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        declarations = (
            (tool.get("functionDeclarations") or tool.get("function_declarations")) if isinstance(tool, dict) else None
        )
        for declaration in declarations if isinstance(declarations, list) else []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.append(declaration["name"])
    return names


def call_name(name: str, declared: Sequence[str]) -> str:
    """A scripted call's name: a glob (`mcp_*_ask_user`, for a tool whose name a client makes up per run,
    such as an MCP server's) is the one declared function it matches; anything else is sent as written."""
    if "*" not in name:
        return name
    matches = [d for d in declared if fnmatch.fnmatchcase(d, name)]
    return matches[0] if len(matches) == 1 else name


def model_chunks(
    turn: ModelTurn, model: str, *, invocations: bool = False, declared: Sequence[str] = ()
) -> list[JsonObject]:
    """A ModelTurn as streamGenerateContent chunks; `invocations`: the request asked for server-side
    tool invocations (see `wants_invocations`); `declared`: the request's function names (`call_name`)."""
    chunks: list[JsonObject] = []
    for thought in turn.thoughts:
        part: JsonObject = {"text": thought.text, "thought": True}
        if thought.signature is not None:
            part["thoughtSignature"] = b64(thought.signature)
        chunks.append(_chunk([part], model))
    for tool in turn.server_tools:
        if shown := server_tool_parts(tool, invocations):
            chunks.append(_chunk(shown, model))
    for i, piece in enumerate(split_text(turn.text, turn.text_chunks)):
        part = {"text": piece}
        if i == 0 and turn.text_signature is not None:
            part["thoughtSignature"] = b64(turn.text_signature)
        chunks.append(_chunk([part], model))
    if turn.function_calls:
        parts: list[JsonObject] = []
        for call in turn.function_calls:
            payload: JsonObject = {"name": call_name(call.name, declared), "args": call.args}
            if call.id is not None:
                payload["id"] = call.id
            part = {"functionCall": payload}
            if call.signature is not None:
                part["thoughtSignature"] = b64(call.signature)
            parts.append(part)
        chunks.append(_chunk(parts, model))
    if not chunks:
        chunks.append(_chunk([{"text": ""}], model))
    last = chunks[-1]
    last["candidates"][0]["finishReason"] = turn.finish_reason
    if turn.grounding is not None:
        last["candidates"][0]["groundingMetadata"] = turn.grounding
    if turn.usage is not None:
        last["usageMetadata"] = usage_metadata(turn.usage)
    return chunks


def merge_chunks(chunks: list[JsonObject]) -> JsonObject:
    """What generateContent answers for the same turn: all parts in one response, last chunk's metadata."""
    merged: JsonObject = {}
    parts: list[JsonObject] = []
    candidate: JsonObject = {}
    for chunk in chunks:
        for key, value in chunk.items():
            if key != "candidates":
                merged[key] = value
        for cand in chunk.get("candidates", [])[:1]:
            parts.extend(cand.get("content", {}).get("parts", []))
            candidate.update({k: v for k, v in cand.items() if k != "content"})
    candidate["content"] = {"parts": parts, "role": "model"}
    merged["candidates"] = [candidate]
    return merged


# --- Interactions API -------------------------------------------------------------------------------


def interaction_usage(usage: Usage) -> JsonObject:
    return {
        "total_input_tokens": usage.input_tokens,
        "total_output_tokens": usage.output_tokens,
        "total_thought_tokens": usage.thinking_tokens,
        "total_cached_tokens": usage.cached_tokens,
        "total_tool_use_tokens": usage.tool_use_tokens,
        "total_tokens": usage.total_tokens,
    }


def as_interaction_turn(turn: ModelTurn) -> InteractionTurn:
    """The Interactions API rendering of a ModelTurn, so one scenario drives every backend."""
    steps: list[Step] = []
    if turn.thoughts:
        signatures = [t.signature for t in turn.thoughts if t.signature is not None]
        steps.append(
            ThoughtStep(summary=[t.text for t in turn.thoughts], signature=signatures[-1] if signatures else None)
        )
    for tool in turn.server_tools:
        steps.extend(_server_tool_steps(tool))
    if turn.text:
        steps.append(TextStep(text=turn.text, chunks=turn.text_chunks, annotations=turn.annotations))
    steps.extend(FunctionCallStep(name=c.name, arguments=c.args, id=c.id) for c in turn.function_calls)
    return InteractionTurn(steps=steps, usage=turn.usage, chunk_delay=turn.chunk_delay)


def _server_tool_steps(tool: ServerTool) -> list[Step]:
    """A built-in tool's call and result as Interactions API steps."""
    signature = tool.signature
    if tool.tool == "google_search":
        suggestions = tool.interaction_result if isinstance(tool.interaction_result, str) else ""
        return [
            GoogleSearchCall(id=tool.id, queries=list(tool.arguments.get("queries", [])), signature=signature),
            GoogleSearchResult(call_id=tool.id, search_suggestions=suggestions, signature=signature),
        ]
    if tool.tool == "code_execution":
        output = str(tool.response.get("output", ""))
        failed = tool.response.get("outcome", "OUTCOME_OK") != "OUTCOME_OK"
        code = str(tool.arguments.get("code", ""))
        return [
            CodeExecutionCall(id=tool.id, code=code, signature=signature),
            CodeExecutionResult(call_id=tool.id, result=output, is_error=failed, signature=signature),
        ]
    call: JsonObject = {"id": tool.id, "arguments": tool.arguments}
    result: JsonObject = {"call_id": tool.id}
    if tool.interaction_result is not None:
        result["result"] = tool.interaction_result
    kind = tool.tool
    return [
        ServerStep.model_validate({"type": f"{kind}_call", "data": call, "signature": signature}),
        ServerStep.model_validate({"type": f"{kind}_result", "data": result, "signature": signature}),
    ]


INTERACTION_EVENTS = {
    "current": {
        "created": "interaction.created",
        "start": "step.start",
        "delta": "step.delta",
        "stop": "step.stop",
        "completed": "interaction.completed",
    },
    "legacy": {
        "created": "interaction.start",
        "start": "content.start",
        "delta": "content.delta",
        "stop": "content.stop",
        "completed": "interaction.complete",
    },
}
"""Event names per dialect; the legacy ``content.start`` puts its payload under ``content``, not ``step``."""


@dataclass
class RenderedStep:
    """A step as step.start payload, step.delta payloads, and the final form stored on the interaction."""

    start: JsonObject
    deltas: list[JsonObject] = field(default_factory=list)
    final: JsonObject = field(default_factory=dict)
    usage: Usage | None = None


def render_step(step: Step, call_id: str) -> RenderedStep:
    """``call_id`` names a function call that the script left without an id."""
    if isinstance(step, TextStep):
        pieces = split_text(step.text, step.chunks)
        text: JsonObject = {"type": "text", "text": step.text}
        text_deltas: list[JsonObject] = [{"type": "text", "text": piece} for piece in pieces]
        if step.annotations:
            text["annotations"] = step.annotations
            text_deltas.append({"type": "text_annotation_delta", "annotations": step.annotations})
        return RenderedStep(
            start={"type": "model_output"},
            deltas=text_deltas,
            final={"type": "model_output", "content": [text]},
            usage=step.usage,
        )
    if isinstance(step, ImageStep):
        image: JsonObject = {"type": "image", "data": step.data, "mime_type": step.mime_type}
        return RenderedStep(
            start={"type": "model_output"}, deltas=[image], final={"type": "model_output", "content": [image]}
        )
    if isinstance(step, ThoughtStep):
        deltas: list[JsonObject] = [
            {"type": "thought_summary", "content": {"type": "text", "text": s}} for s in step.summary
        ]
        final: JsonObject = {"type": "thought", "summary": [{"type": "text", "text": s} for s in step.summary]}
        if step.signature is not None:
            deltas.append({"type": "thought_signature", "signature": b64(step.signature)})
            final["signature"] = b64(step.signature)
        return RenderedStep(start={"type": "thought"}, deltas=deltas, final=final, usage=step.usage)
    if isinstance(step, FunctionCallStep):
        final = {"type": "function_call", "id": step.id or call_id, "name": step.name, "arguments": step.arguments}
        if not step.arguments_delta:
            return RenderedStep(start=final, final=final, usage=step.usage)
        encoded = json.dumps(step.arguments)
        return RenderedStep(
            start={**final, "arguments": {}},
            deltas=[{"type": "arguments_delta", "arguments": piece} for piece in split_text(encoded, 3)],
            final=final,
            usage=step.usage,
        )
    wire: JsonObject
    if isinstance(step, GoogleSearchCall):
        wire = {"type": step.type, "id": step.id, "arguments": {"queries": step.queries}}
    elif isinstance(step, GoogleSearchResult):
        wire = {
            "type": step.type,
            "call_id": step.call_id,
            "result": [{"search_suggestions": step.search_suggestions}],
        }
    elif isinstance(step, CodeExecutionCall):
        wire = {"type": step.type, "id": step.id, "arguments": {"code": step.code, "language": step.language}}
    elif isinstance(step, CodeExecutionResult):
        wire = {"type": step.type, "call_id": step.call_id, "result": step.result, "is_error": step.is_error}
    else:
        assert isinstance(step, ServerStep)
        wire = {"type": step.type, **step.data}
    if step.signature is not None:
        wire["signature"] = b64(step.signature)
    return RenderedStep(start=wire, final=wire, usage=step.usage)


def render_legacy_step(step: Step, call_id: str) -> RenderedStep:
    """A step as a deprecated-dialect content block: ``content.start`` names only the block's type
    (``text`` for model output), the deltas carry the rest; a function call or server tool step
    arrives whole in one delta. ``final`` (what the interaction stores) is the current dialect's."""
    rendered = render_step(step, call_id)
    if isinstance(step, TextStep):
        return RenderedStep(start={"type": "text"}, deltas=rendered.deltas, final=rendered.final, usage=step.usage)
    if isinstance(step, ImageStep):
        return RenderedStep(start={"type": "image"}, deltas=rendered.deltas, final=rendered.final, usage=step.usage)
    if isinstance(step, ThoughtStep):
        deltas: list[JsonObject] = [{"type": "thought_summary", "content": {"text": s}} for s in step.summary]
        if step.signature is not None:
            deltas.append({"type": "thought_signature", "signature": b64(step.signature)})
        return RenderedStep(start={"type": "thought"}, deltas=deltas, final=rendered.final, usage=step.usage)
    final = rendered.final
    return RenderedStep(start={"type": final["type"]}, deltas=[final], final=final, usage=step.usage)
