"""The Gemini API tool rules of `api_tools.toml`: every refused combination and every model × tool pair
documented as unsupported ends the run with a `configuration_error` naming the rule, on both API
backends, before any request reaches the (real, in-process) FakeGemini server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import unified
from unified._internal.api_tools import load, model_tools, tool_problems
from unified.events import ErrorEvent, Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, ModelTurn
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

API_BACKENDS = ("generate-content", "interactions")
STORES = {"store_names": ["fileSearchStores/docs-1"]}
TOOL_ON: dict[str, object] = {
    "google_search": True,
    "google_maps": True,
    "url_context": True,
    "code_execution": True,
    "file_search": STORES,
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGemini]:
    """No turn is scripted: any request that reaches it is a script problem, and is logged."""
    with FakeGemini() as fake:
        yield fake


def params(server: FakeGemini, backend: str, model: str, tmp_path: Path, **options: Any) -> ExecuteParams:
    base: dict[str, object] = {"api_key": "test-key", "base_url": server.base_url, "vertexai": False}
    return ExecuteParams(
        prompt="hi",
        backend=backend,
        model=model,
        cwd=tmp_path,
        backend_options={**base, **options},
    )


async def run(p: ExecuteParams) -> list[UnifiedEvent]:
    async with unified.execute(p) as stream:
        return [event async for event in stream]


async def refused(server: FakeGemini, p: ExecuteParams) -> ErrorEvent:
    """The run's one error: before any event of the run proper and before any request."""
    before = len(server.requests)
    events = await run(p)
    assert len(server.requests) == before, "a request reached the server"
    assert not any(isinstance(e, SessionStarted) for e in events)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert errors[0].code == "configuration_error"
    return errors[0]


RULE_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("file_search_alone", "gemini-3-flash-preview", {"file_search": STORES, "google_search": True}),
    ("file_search_alone", "gemini-2.5-flash", {"file_search": STORES, "code_execution": True, "local_tools": False}),
    ("search_with_maps", "gemini-3-flash-preview", {"google_search": True, "google_maps": True}),
    ("builtins_with_functions", "gemini-2.5-flash", {"url_context": True}),
    (
        "builtins_with_functions_validated",
        "gemini-3-flash-preview",
        {"google_search": True, "function_calling": {"mode": "auto"}},
    ),
    (
        "builtins_with_functions_validated",
        "gemini-3-flash-preview",
        {"code_execution": True, "function_calling": {"mode": "any"}},
    ),
    (
        "builtins_with_functions_validated",
        "gemini-3-flash-preview",
        {"google_maps": True, "function_calling": {"mode": "none"}},
    ),
    ("file_search_developer_api", "gemini-2.5-flash", {"file_search": STORES, "local_tools": False, "vertexai": True}),
]
"""(rule, model, options): each breaks exactly the rule named, on both backends."""

GENERATE_CONTENT_RULE_CASES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "builtins_with_functions_need_invocations",
        "gemini-3-flash-preview",
        {"google_search": True, "server_side_tool_invocations": False},
    ),
    ("invocations_gemini_3", "gemini-2.5-pro", {"server_side_tool_invocations": True, "local_tools": False}),
    ("invocations_developer_api", "gemini-3-flash-preview", {"server_side_tool_invocations": True, "vertexai": True}),
]
"""Rules about `includeServerSideToolInvocations`, a generateContent setting."""


def test_every_error_rule_has_a_case() -> None:
    cases = {rule for rule, _, _ in RULE_CASES + GENERATE_CONTENT_RULE_CASES}
    errors = {rule.id for rule in load()[1] if rule.level == "error"}
    assert cases == errors


@pytest.mark.parametrize("backend", API_BACKENDS)
@pytest.mark.parametrize(("rule", "model", "options"), RULE_CASES)
async def test_a_refused_combination_fails_before_any_request(
    server: FakeGemini, tmp_path: Path, backend: str, rule: str, model: str, options: dict[str, Any]
) -> None:
    error = await refused(server, params(server, backend, model, tmp_path, **options))
    assert f"[rule {rule}]" in error.message
    assert error.message.count("[rule ") == 1
    assert backend in error.message
    assert "tool_checks='warn'" in error.message  # the hint: what to do


@pytest.mark.parametrize(("rule", "model", "options"), GENERATE_CONTENT_RULE_CASES)
async def test_an_invocations_rule_fails_before_any_request(
    server: FakeGemini, tmp_path: Path, rule: str, model: str, options: dict[str, Any]
) -> None:
    error = await refused(server, params(server, "generate-content", model, tmp_path, **options))
    assert f"[rule {rule}]" in error.message


def _unsupported_pairs() -> list[tuple[str, str, str]]:
    """(backend, row prefix, tool) for every pair a row marks unsupported; the agent rows
    (`deep-research-`, `antigravity-`) run on the interactions backend only."""
    rows = load()[0]
    return [
        (backend, row.prefix, tool)
        for row in rows
        for tool in sorted(row.unsupported)
        for backend in API_BACKENDS
        if backend == "interactions" or not row.prefix.endswith("-")
    ]


@pytest.mark.parametrize(("backend", "prefix", "tool"), _unsupported_pairs())
async def test_an_unsupported_model_tool_pair_fails_before_any_request(
    server: FakeGemini, tmp_path: Path, backend: str, prefix: str, tool: str
) -> None:
    options: dict[str, Any] = {"local_tools": tool == "functions"}
    if tool != "functions":
        options[tool] = TOOL_ON[tool]
    model = prefix + "-preview"
    if prefix.endswith("-"):  # an agent names itself instead of a model
        options["agent"], model = prefix + "pro-preview-12-2025", "gemini-3-flash-preview"
    error = await refused(server, params(server, backend, model, tmp_path, **options))
    assert "[rule model_tool_support]" in error.message
    assert "does not support" in error.message


@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_tool_checks_warn_sends_a_refused_combination_with_a_warning(
    server: FakeGemini, tmp_path: Path, backend: str
) -> None:
    server.add(ModelTurn(text="sent anyway"))
    options = {"google_search": True, "google_maps": True, "local_tools": False, "tool_checks": "warn"}
    p = params(server, backend, "gemini-3-pro-preview", tmp_path, **options)
    before = len(server.requests)
    events = await run(p)
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    assert any("[rule search_with_maps]" in w for w in warnings)
    assert any("[rule model_tool_support]" in w and "google_maps" in w for w in warnings)
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "sent anyway")
    (sent,) = server.requests[before:]
    assert len(sent.body["tools"]) == 2


@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_a_resume_is_checked_against_the_sessions_model(server: FakeGemini, tmp_path: Path, backend: str) -> None:
    """Without `model`, a resume runs on the session's model: it is checked once the session is read."""
    server.add(ModelTurn(text="searched"))
    first = await run(params(server, backend, "gemini-2.5-flash", tmp_path, google_search=True, local_tools=False))
    started = first[0]
    assert isinstance(started, SessionStarted)
    assert started.short_id is not None
    again = params(server, backend, "gemini-2.5-flash", tmp_path, google_search=True).model_copy(
        update={"model": None, "resume": started.short_id}
    )
    error = await refused(server, again)
    assert "[rule builtins_with_functions]" in error.message
    assert "gemini-2.5-flash cannot combine built-in tools with function calling" in error.message


@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_an_allowed_function_name_nobody_offers_fails_before_any_request(
    server: FakeGemini, tmp_path: Path, backend: str
) -> None:
    calling = {"mode": "any", "allowed_function_names": ["read_file", "launch_rockets"]}
    p = params(server, backend, "gemini-3-flash-preview", tmp_path, function_calling=calling)
    before = len(server.requests)
    events = await run(p)
    assert len(server.requests) == before
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "configuration_error"
    assert "offers no function named 'launch_rockets' (" in error.message  # only the unknown name is blamed
    assert "read_file" in error.message  # the hint lists the offered names


@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_allowed_names_need_a_forcing_mode(server: FakeGemini, tmp_path: Path, backend: str) -> None:
    calling = {"mode": "auto", "allowed_function_names": ["read_file"]}
    error = await refused(server, params(server, backend, "gemini-3-flash-preview", tmp_path, function_calling=calling))
    assert "allowed_function_names works only with mode 'any' or 'validated'" in error.message


@pytest.mark.parametrize(
    "bad",
    [
        {"file_search": {"store_names": []}},
        {"file_search": {"store_names": ["fileSearchStores/a"], "top_k": 0}},
        {"user_location": {"latitude": 91, "longitude": 0}},
        {"user_location": {"latitude": 0, "longitude": -181}},
        {"google_maps": {"enable_widget": True, "zoom": 3}},
        {"function_calling": {"mode": "sometimes"}},
        {"tool_checks": "ignore"},
    ],
)
async def test_a_malformed_tool_setting_fails_before_any_request(
    server: FakeGemini, tmp_path: Path, bad: dict[str, Any]
) -> None:
    error = await refused(server, params(server, "generate-content", "gemini-3-flash-preview", tmp_path, **bad))
    assert f"backend_options.{next(iter(bad))}" in error.message


# -- the data itself (pure) --------------------------------------------------------------------------


def test_the_data_loads_and_names_known_tools_only() -> None:
    rows, rules = load()
    assert rows
    assert rules
    assert all(not (row.supported & row.unsupported) for row in rows)
    assert {r.id for r in rules} >= {"file_search_alone", "search_with_maps", "builtins_with_functions"}


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("models/gemini-3-pro-image-preview", "gemini-3-pro-image"),
        ("gemini-3-pro-preview", "gemini-3-pro"),
        ("gemini-2.5-flash-native-audio-preview-12-2025", "gemini-2.5-flash-native-audio"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash"),
        ("gemini-3.1-flash-live-preview", "gemini-3.1-flash-live"),
        ("gemini-3.1-flash-lite-preview", "gemini-3.1-flash-lite"),
    ],
)
def test_the_most_specific_row_wins(model: str, prefix: str) -> None:
    row = model_tools(model)
    assert row is not None
    assert row.prefix == prefix


def test_an_unknown_model_meets_only_the_model_free_rules() -> None:
    assert tool_problems("some-future-model", ["google_search", "google_maps", "functions"]) == []
    alone = tool_problems("some-future-model", ["file_search", "url_context"])
    assert [p.rule for p in alone] == ["file_search_alone"]
    assert "url_context is on" in alone[0].message


def test_an_undocumented_pair_is_a_warning() -> None:
    problems = tool_problems("gemini-2.5-computer-use-preview-10-2025", ["google_search"])
    assert [(p.rule, p.fatal) for p in problems] == [("model_tool_support", False)]
    assert "does not document the built-in tool google_search" in problems[0].message


def test_the_documented_combinations_pass() -> None:
    everything_but_file_search = ["functions", "google_search", "url_context", "code_execution"]
    assert tool_problems("gemini-3-flash-preview", everything_but_file_search) == []
    assert tool_problems("gemini-3.5-flash", ["functions", "google_search", "google_maps"]) == []
    assert tool_problems("gemini-2.5-flash", ["google_search", "code_execution", "url_context"]) == []
    assert tool_problems("gemini-3-flash-preview", ["functions", "file_search"]) == []
    vertex = tool_problems("gemini-3-flash-preview", ["functions", "google_search", "vertexai"])
    assert [(p.rule, p.fatal) for p in vertex] == [("builtins_with_functions_on_vertex", False)]


def test_the_doc_names_every_rule_and_model_row() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "api-tools.md").read_text(encoding="utf-8")
    rows, rules = load()
    assert [r.id for r in rules if f"`{r.id}`" not in doc] == []
    assert [row.prefix for row in rows if f"`{row.prefix.rstrip('-')}" not in doc] == []
