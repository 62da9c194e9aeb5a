"""`unified.sessions` across every backend, and `execute(backend="auto", resume=...)` finding the owner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from tests.adapters.gemini_cli.test_gemini_cli_sessions import write_session
from tests.e2e.generate_content.gc_harness import Harness, harness  # noqa: F401 - the fixture
from tests.e2e.interactions.interactions_harness import MODEL, collect
from unified import execute, sessions
from unified._adapters.gemini_cli._chat_files import ChatFiles
from unified._cli import main as cli
from unified.errors import AmbiguousSession, SessionNotFound
from unified.events import ErrorEvent, Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.sessions import MemorySessionStore, StoredSession
from unified.testing import FakeGemini
from unified.testing._scenario import ModelTurn
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

GEMINI_ID = "9e9e9e9e-1111-2222-3333-444455556666"


def _project(home: Path, root: Path, slug: str, *, registered: bool) -> None:
    """A project as the CLI 0.61 records it: `projects.json` (when `registered`) and `.project_root`."""
    gemini = home / ".gemini"
    (gemini / "tmp" / slug).mkdir(parents=True, exist_ok=True)
    (gemini / "tmp" / slug / ".project_root").write_text(str(root))
    if registered:
        (gemini / "projects.json").write_text(json.dumps({"projects": {str(root): slug}}))


@pytest.fixture
def gemini_session(isolated_home: Path, tmp_path: Path) -> Path:
    """A gemini-cli session of project `proj` (found through `.project_root` only)."""
    project = tmp_path / "proj"
    project.mkdir()
    _project(isolated_home, project, "proj", registered=False)
    write_session(isolated_home, "proj", GEMINI_ID, "gemini prompt", [{"id": "g1", "type": "gemini", "content": "a"}])
    return project


async def _api_session(store: MemorySessionStore, backend: str, session_id: str, prompt: str) -> StoredSession:
    session = StoredSession.new(backend, model="m", cwd="/w", first_prompt=prompt)
    session.session_id = session_id
    await store.save(session)
    return session


async def test_list_and_resolve_across_backends(gemini_session: Path) -> None:
    store = MemorySessionStore()
    await _api_session(store, "generate-content", "1c1c1c1c-0000", "gc prompt")
    await _api_session(store, "interactions", "2d2d2d2d-0000", "interactions prompt")
    listing = await sessions.list_sessions(store=store)
    assert {(s.backend, s.short_id) for s in listing.sessions} == {
        ("generate-content", "1c1c1c1c"),
        ("interactions", "2d2d2d2d"),
        ("gemini-cli", "9e9e9e9e"),
    }
    assert listing.unreadable == []
    assert (await sessions.resolve("1c1c", store=store)).backend == "generate-content"
    assert (await sessions.resolve("2D2D", store=store)).backend == "interactions"
    found = await sessions.resolve("9e9e9e", store=store)
    assert (found.backend, found.cwd) == ("gemini-cli", str(gemini_session))
    only = await sessions.list_sessions(backend="interactions", store=store)
    assert [s.short_id for s in only.sessions] == ["2d2d2d2d"]
    shown = await sessions.show("1c1c", store=store)
    assert shown["first_prompt"] == "gc prompt"
    assert (await sessions.show("9e9e", store=store))["messages"][0]["id"] == "u1"


async def test_an_unknown_id_says_where_it_looked(gemini_session: Path) -> None:
    with pytest.raises(SessionNotFound) as caught:
        await sessions.resolve("0000ffff", store=MemorySessionStore())
    for backend in ("generate-content", "interactions", "gemini-cli", "claude-code", "codex"):
        assert f"{backend}:" in caught.value.message
    assert caught.value.details["searched"] == [
        "gemini-cli",
        "generate-content",
        "interactions",
        "claude-code",
        "codex",
    ]


async def test_a_prefix_shared_by_two_backends_is_ambiguous() -> None:
    store = MemorySessionStore()
    await _api_session(store, "generate-content", "abab0000-1", "one")
    await _api_session(store, "interactions", "abab1111-1", "two")
    with pytest.raises(AmbiguousSession, match="several backends"):
        await sessions.resolve("abab", store=store)


async def test_delete_through_the_api() -> None:
    store = MemorySessionStore()
    await _api_session(store, "interactions", "3e3e3e3e-0000", "bye")
    deleted = await sessions.delete("3e3e", store=store)
    assert deleted.backend == "interactions"
    assert (await sessions.list_sessions(backend="interactions", store=store)).sessions == []


# --- gemini-cli from another directory ---------------------------------------------------------------


async def test_gemini_cli_session_from_another_directory_is_found_with_its_project(
    gemini_session: Path, tmp_path: Path
) -> None:
    """Resolved from another directory (what the adapter does before a resume), the session is found, with the
    project it is filed under: a run resuming it from there moves it (tests/adapters/gemini_cli/
    test_gemini_cli_relocate.py)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found, in_project = ChatFiles().locate("9e9e9e9e", str(elsewhere))
    assert (found.session_id, found.cwd, in_project) == (GEMINI_ID, str(gemini_session), False)
    assert ChatFiles().locate("9e9e9e9e", str(gemini_session))[1] is True
    with pytest.raises(SessionNotFound, match="nor in any other project") as caught:
        ChatFiles().resolve("77777777", str(elsewhere))
    assert caught.value.details["searched"] == str(ChatFiles().root)


async def test_gemini_cli_projects_registered_in_projects_json(isolated_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "registered"
    project.mkdir()
    _project(isolated_home, project, "registered", registered=True)
    write_session(isolated_home, "registered", "5a5a5a5a-0000", "p", [])
    (info,) = (await sessions.list_sessions(backend="gemini-cli")).sessions
    assert info.cwd == str(project)


async def test_auto_resume_of_a_gemini_cli_session_from_elsewhere_continues_it_there(
    gemini_session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified.testing._fake_acp import FakeAcp, Finish, text

    monkeypatch.setenv("GEMINI_API_KEY", "test-key-for-routing-0001")
    elsewhere = (tmp_path / "elsewhere").resolve()
    elsewhere.mkdir()
    options = {"start_process": FakeAcp([text("again"), Finish()]), "pool_size": 0}
    params = ExecuteParams(prompt="again", backend="auto", resume="9e9e9e9e", cwd=elsewhere, backend_options=options)
    events = await _collect(params)
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "again"), result.error
    [moved] = [e for e in events if isinstance(e, WarningEvent)]
    assert moved.code == "session_moved"
    assert str(gemini_session) in moved.message
    assert str(elsewhere) in moved.message
    (info,) = (await sessions.list_sessions(backend="gemini-cli")).sessions
    assert (info.short_id, info.cwd) == ("9e9e9e9e", str(elsewhere))


# --- execute(backend="auto", resume=short id) ------------------------------------------------------------


async def _collect(params: ExecuteParams) -> list[UnifiedEvent]:
    events: list[UnifiedEvent] = []
    async with execute(params) as stream:
        async for event in stream:
            events.append(event)
    return events


async def test_auto_resume_finds_a_generate_content_session(
    harness: Harness,  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-for-routing-0001")
    harness.server.add(ModelTurn(text="first answer"), ModelTurn(text="second answer"))
    first = await harness.run("remember 42")
    started = first[0]
    assert isinstance(started, SessionStarted)
    short = started.short_id
    assert short
    listed = await anyio.to_thread.run_sync(CliRunner().invoke, cli.app, ["sessions", "list"])
    assert short in listed.output  # the id a user would copy from `unified sessions list`
    params = harness.params("what did I say?", resume=short).model_copy(update={"backend": "auto"})
    second = await _collect(params)
    again = second[0]
    assert isinstance(again, SessionStarted)
    assert (again.backend, again.session_id, again.resumed) == ("generate-content", started.session_id, True)
    result = second[-1]
    assert isinstance(result, Result)
    assert result.final_text == "second answer"
    resent = harness.bodies()[-1]["contents"]
    assert resent[0] == {"role": "user", "parts": [{"text": "remember 42"}]}


async def test_auto_resume_finds_an_interactions_session_in_the_given_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.interactions.test_interactions_e2e import text_turn

    monkeypatch.setenv("GEMINI_API_KEY", "test-key-for-routing-0001")
    store = MemorySessionStore()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeGemini() as fake:
        fake.add(text_turn("first"), text_turn("second"))
        options: dict[str, Any] = {"api_key": "test-key", "base_url": fake.base_url, "retry_delay_scale": 0.01}

        def params(prompt: str, **fields: Any) -> ExecuteParams:
            return ExecuteParams(
                prompt=prompt, cwd=workspace, model=MODEL, backend_options=options, session_store=store, **fields
            )

        first = await collect(params("one", backend="interactions"))
        short = first[-1].short_id
        assert [s.short_id for s in (await sessions.list_sessions(store=store)).sessions] == [short]
        assert not (tmp_path / "home" / ".local" / "share" / "unified").exists()  # nothing went to the files
        second = await collect(params("two", backend="auto", resume=short))
        assert (second[0].backend, second[0].resumed) == ("interactions", True)
        assert second[-1].final_text == "second"
        body = fake.requests_for("interactions.create")[1].body
        assert body["previous_interaction_id"] == "fake-interaction-1"


async def test_auto_resume_of_an_unknown_id_lists_where_it_looked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-for-routing-0001")
    events = await _collect(ExecuteParams(prompt="x", backend="auto", resume="0000ffff"))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert "no session matches '0000ffff'" in str(result.error)
    assert "generate-content:" in str(result.error)
    assert "gemini-cli:" in str(result.error)


@pytest.mark.parametrize(
    ("backend", "ref", "owner"),
    [("interactions", "1c1c1c1c", "generate-content"), ("generate-content", GEMINI_ID[:8], "gemini-cli")],
)
async def test_a_resume_on_the_wrong_backend_names_the_backend_that_has_it(
    gemini_session: Path, monkeypatch: pytest.MonkeyPatch, backend: str, ref: str, owner: str
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-for-routing-0001")
    store = MemorySessionStore()
    await _api_session(store, "generate-content", "1c1c1c1c-0000", "gc prompt")
    events = await _collect(
        ExecuteParams(prompt="x", backend=backend, resume=ref, session_store=store, cwd=gemini_session)
    )
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_not_found"
    assert error.message.startswith(f"no {backend} session matches '{ref}': {ref} belongs to the {owner} backend")
    assert f"(resume it with the {owner} backend (or auto)" in error.message  # what to do
    assert error.details["owner"] == owner
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.backend) == ("error", backend)
    nobodys = await _collect(
        ExecuteParams(prompt="x", backend=backend, resume="0000ffff", session_store=store, cwd=gemini_session)
    )
    error = next(e for e in nobodys if isinstance(e, ErrorEvent))  # an id no backend has: the backend's own error
    assert error.message.startswith(f"no {backend} session matches '0000ffff'")
    assert "owner" not in error.details


@pytest.mark.parametrize("ref", ["", "   "])
async def test_an_empty_reference_is_said_once_not_once_per_backend(ref: str) -> None:
    """Before, every backend was searched and each said the same ("gemini-cli: an empty session reference names no
    session", five times over); `execute(resume="")` said it once."""
    with pytest.raises(SessionNotFound) as raised:
        await sessions.resolve(ref)
    assert raised.value.message == "an empty session reference names no session"
