"""The protocol: every kind round-trips through JSON exactly, and the schema names every kind."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from unified import events as ev
from unified.events import EVENT_TYPES, PROTOCOL_VERSION, event_json_schema, parse_event

SAMPLES: list[ev._EventBase] = [
    ev.SessionStarted(
        backend="gemini-cli",
        model="gemini-2.5-flash",
        session_id="s-1",
        short_id="s-1",
        resumed=True,
        capabilities={"thinking": "full", "mcp": "partial"},
    ),
    ev.TextDelta(text="héllo ✓", subagent_task_id="task-1"),
    ev.AssistantMessage(text="whole turn"),
    ev.Thinking(text="**Plan** read first", replace=True, subject="Plan", signature="c2ln"),
    ev.ImageOutput(mime_type="image/png", data=b"\x89PNG\r\n\x1a\n\x00\xff", size_bytes=10),
    ev.ImageOutput(mime_type="image/jpeg", uri="gs://bucket/cat.jpg"),
    ev.ToolUse(tool_use_id="c1", name="read_file", input={"path": "a.txt", "nested": {"n": [1, 2.5, None]}}),
    ev.ToolProgress(tool_use_id="c1", status="running", message="50%"),
    ev.PermissionDecision(
        tool_use_id="c1",
        tool_name="write_file",
        decision="deny",
        decided_by="policy",
        rule="plan-denies-writes",
        reason="plan mode",
    ),
    ev.ToolResult(tool_use_id="c1", output={"error": "missing"}, is_error=True, server_side=True),
    ev.Failover(
        from_backend="generate-content",
        to_backend="interactions",
        code="rate_limited",
        message="429",
        left_session="a1",
    ),
    ev.SubagentStarted(task_id="task-1", agent_name="codebase_investigator", parent_tool_use_id="c9"),
    ev.SubagentProgress(task_id="task-1", status="running", message="reading"),
    ev.SubagentCompleted(
        task_id="task-1",
        status="failed",
        result="gave up",
        usage=ev.Usage(input_tokens=10, output_tokens=3, estimated=True),
    ),
    ev.UserInputRequest(
        request_id="r1",
        source="permission",
        tool_use_id="c1",
        tool_name="write_file",
        questions=[
            ev.Question(
                id="permission",
                prompt="Allow?",
                options=[
                    ev.QuestionOption(id="allow_once", label="Allow once"),
                    ev.QuestionOption(id="deny", label="Deny"),
                ],
            )
        ],
        details={"diff": "+a"},
    ),
    ev.WarningEvent(code="unsupported_option", message="thinking budget ignored"),
    ev.ErrorEvent(code="rate_limited", message="429", retryable=True, fatal=False, details={"retry_after_s": 15}),
    ev.Result(
        status="max_turns",
        final_text="done",
        usage=ev.Usage(input_tokens=5, cached_tokens=2),
        duration_ms=12,
        turns=3,
        short_id="abcd1234",
        error=None,
    ),
]


def test_samples_cover_every_kind() -> None:
    assert {type(s) for s in SAMPLES} == set(EVENT_TYPES)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_json_round_trip_is_exact(event: ev._EventBase) -> None:
    text = event.model_dump_json()
    back = parse_event(text)
    assert back == event
    assert back.model_dump_json() == text
    assert parse_event(json.loads(text)) == event


def test_subagent_flag_follows_task_id() -> None:
    assert ev.TextDelta(text="x", subagent_task_id="t").is_subagent is True
    assert ev.TextDelta(text="x").is_subagent is False


def test_unknown_kind_and_extra_fields_are_rejected() -> None:
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        parse_event({"type": "telepathy"})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        parse_event({"type": "text_delta", "text": "a", "colour": "red"})


def test_schema_names_every_kind_and_version() -> None:
    schema: dict[str, Any] = event_json_schema()
    kinds = {d["properties"]["type"]["const"] for d in schema["$defs"].values() if "type" in d.get("properties", {})}
    assert kinds == {t.model_fields["type"].default for t in EVENT_TYPES}
    assert PROTOCOL_VERSION in schema["description"]
    assert schema["discriminator"]["propertyName"] == "type"


def test_permission_answers() -> None:
    assert ev.UserInputResponse.allow().permission() == "allow_once"
    assert ev.UserInputResponse.allow(always=True).permission() == "allow_always"
    assert ev.UserInputResponse.deny().permission() == "deny"
    assert ev.UserInputResponse(cancelled=True).permission() == "deny"
    assert ev.UserInputResponse(answers={"permission": "maybe"}).permission() == "deny"


def test_usage_adds_and_flags_estimates() -> None:
    total = ev.Usage(input_tokens=1, output_tokens=2) + ev.Usage(thinking_tokens=3, estimated=True)
    assert (total.input_tokens, total.output_tokens, total.thinking_tokens, total.estimated) == (1, 2, 3, True)
    assert total.total_tokens == 6


def test_protocol_doc_covers_every_kind_and_its_example_parses() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "protocol.md").read_text()
    for kind in EVENT_TYPES:
        assert f"`{kind.model_fields['type'].default}`" in doc
    example = doc.split("```json\n", 1)[1].split("```", 1)[0].strip().splitlines()
    parsed = [parse_event(line) for line in example]
    assert [e.seq for e in parsed] == list(range(len(parsed)))
    assert parsed[-1].type == "result"


def test_the_run_machinery_builds_every_event_validator_before_any_run() -> None:
    """`import unified` defers them (start-up cost); loading the stream guard builds them, off any event loop."""
    import unified._execute  # noqa: F401  (what `unified.execute` loads)
    from unified import events

    assert all(model.__pydantic_complete__ for model in events.EVENT_TYPES)
    assert events.Usage.__pydantic_complete__


def _given(event: ev._EventBase) -> dict[str, Any]:
    """The fields a caller set, as it passed them (nested models stay models, as adapters pass them)."""
    return {name: getattr(event, name) for name in event.model_fields_set if name != "timestamp"}


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_model_construct_builds_what_validation_builds(event: ev._EventBase) -> None:
    """The written-out `model_construct` (the adapters' hot path) adds every default and the normal form."""
    kind = type(event)
    given = _given(event)
    if kind is ev.ToolResult:
        given["output"] = {"error": "missing"}  # not text: normalised as the validator does
    built = kind.model_construct(**given)
    validated = kind.model_validate(given)
    assert built.model_dump(exclude={"timestamp"}) == validated.model_dump(exclude={"timestamp"})
    assert built.model_fields_set - {"timestamp"} == validated.model_fields_set - {"timestamp"}
    assert built.timestamp.tzinfo is not None


def test_model_construct_refuses_a_missing_or_unknown_field() -> None:
    with pytest.raises(TypeError, match="missing fields \\['tool_use_id'\\]"):
        ev.ToolResult.model_construct(output="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unknown fields \\['colour'\\]"):
        ev.TextDelta.model_construct(text="x", colour="red")  # type: ignore[call-arg]


def test_a_model_construct_bound_before_its_first_call_is_written_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`build = Kind.model_construct` taken before the class's first call keeps reaching the generic one,
    which finds the class's written constructor instead of writing it again for every call."""

    class Probe(ev.TextDelta):
        pass

    written: list[type[Any]] = []
    real = ev._Plan.constructor

    def counting(plan: ev._Plan, model: type[Any]) -> Any:
        written.append(model)
        return real(plan, model)

    monkeypatch.setattr(ev._Plan, "constructor", counting)
    build = Probe.model_construct  # bound to the generic one: Probe has none of its own yet
    pieces = [build(text=str(n)) for n in range(3)]
    assert [p.text for p in pieces] == ["0", "1", "2"]
    assert all(type(p) is Probe for p in pieces)
    assert written == [Probe]


def _same_build(built: Any, expected: Any) -> None:
    assert type(built) is type(expected)
    assert built.model_dump(exclude={"timestamp"}) == expected.model_dump(exclude={"timestamp"})
    assert built.model_fields_set == expected.model_fields_set
    assert built.timestamp.tzinfo is not None


def test_an_event_builder_builds_what_model_construct_builds_for_every_shape_it_is_given() -> None:
    """`_event_builder(Kind.model_construct, *names)` (the translators' hot path, written once per shape)
    builds what `model_construct` builds with those fields: optional ones left out keep their defaults
    and stay out of `model_fields_set`; `is_subagent` follows `subagent_task_id`; a `tool_result`'s
    structured `output` is normalised; a default factory gives each event its own container."""
    use = ev._event_builder(ev.ToolUse.model_construct, "tool_use_id", "name", "input", "server_side")
    _same_build(use(tool_use_id="a", name="n"), ev.ToolUse.model_construct(tool_use_id="a", name="n"))
    given: dict[str, Any] = {"tool_use_id": "b", "name": "n", "input": {"x": 1}, "server_side": True}
    _same_build(use(**given), ev.ToolUse.model_construct(**given))
    assert use(tool_use_id="c", name="n").input is not use(tool_use_id="d", name="n").input

    message = ev._event_builder(ev.AssistantMessage.model_construct, "text", "subagent_task_id")
    for task in (None, "t1"):
        _same_build(
            message(text="hi", subagent_task_id=task),
            ev.AssistantMessage.model_construct(text="hi", subagent_task_id=task),
        )
    assert message(text="hi", subagent_task_id="t1").is_subagent

    result = ev._event_builder(ev.ToolResult.model_construct, "tool_use_id", "output", "is_error")
    structured: Any = {"rows": [1, 2]}  # not text: normalised into `data`, as validation does
    _same_build(
        result(tool_use_id="r", output=structured), ev.ToolResult.model_construct(tool_use_id="r", output=structured)
    )
    stamped = ev._event_builder(ev.TextDelta.model_construct, "text", "timestamp")
    at = datetime(2026, 1, 2, tzinfo=UTC)
    assert stamped(text="x", timestamp=at).timestamp == at
    assert stamped(text="x").timestamp != at


def test_an_event_builder_refuses_fields_its_class_does_not_have_or_a_shape_without_a_required_one() -> None:
    with pytest.raises(TypeError, match="unknown \\['colour'\\]"):
        ev._event_builder(ev.TextDelta.model_construct, "text", "colour")
    with pytest.raises(TypeError, match="missing \\['name'\\]"):
        ev._event_builder(ev.ToolUse.model_construct, "tool_use_id")
    build = ev._event_builder(ev.TextDelta.model_construct, "text")
    with pytest.raises(TypeError):
        build(text="x", subagent_task_id="t")  # not among the builder's fields (its type is model_construct's)
    with pytest.raises(TypeError):
        build()  # type: ignore[call-arg]  # its required field
