"""One google-genai client per event loop and connection settings; heavy imports off the event loop."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import anyio
import httpx
import pytest

from unified._adapters.generate_content._options import GenerateContentOptions, resolve_options
from unified._internal import genai_client
from unified._internal import http as http_clients
from unified._internal.genai_client import GenaiClient
from unified._internal.imports import import_off_loop
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio


def settings(tmp_path: Path, **options: object) -> GenerateContentOptions:
    backend_options = {"api_key": "test-key", "base_url": "http://127.0.0.1:9", **options}
    return resolve_options(
        ExecuteParams(prompt="hi", backend="generate-content", cwd=tmp_path, backend_options=backend_options)
    )


async def test_runs_of_one_loop_share_one_client_which_stays_open_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[httpx.AsyncClient] = []

    def recording(timeout_s: float) -> httpx.AsyncClient:
        opened.append(http_clients.async_client(timeout_s))
        return opened[-1]

    monkeypatch.setattr(genai_client, "async_client", recording)
    same = settings(tmp_path)
    async with GenaiClient(same) as first, GenaiClient(settings(tmp_path)) as second:
        shared = first.client
        assert second.client is shared
        assert len(opened) == 1
        (http,) = opened
        async with GenaiClient(settings(tmp_path, timeout_s=5.0)) as other:
            assert other.client is not shared  # other connection settings, other client
    assert not http.is_closed  # the next run finds it warm
    async with GenaiClient(same) as later:
        assert later.client is shared
    await genai_client.close_idle_clients()
    assert http.is_closed
    async with GenaiClient(same) as after:
        assert after.client is not shared  # a closed one is never handed out again
    await genai_client.close_idle_clients()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_end_of_its_event_loop_closes_the_client(tmp_path: Path, backend: str) -> None:
    held: list[httpx.AsyncClient] = []
    real = http_clients.async_client

    def recording(timeout_s: float) -> httpx.AsyncClient:
        held.append(real(timeout_s))
        return held[-1]

    async def two_runs() -> None:
        async with GenaiClient(settings(tmp_path)):
            pass
        async with GenaiClient(settings(tmp_path)):
            pass
        assert len(held) == 1
        assert not held[0].is_closed

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(genai_client, "async_client", recording)
        anyio.run(two_runs, backend=backend)
    assert held[0].is_closed


async def test_each_event_loop_gets_its_own_client(tmp_path: Path) -> None:
    """An httpx async client belongs to the loop it ran on; a worker thread's loop gets another."""
    same = settings(tmp_path)

    async def client_id() -> int:
        async with GenaiClient(same) as g:
            return id(g.client)

    async with GenaiClient(same) as here:
        elsewhere = await anyio.to_thread.run_sync(lambda: anyio.run(client_id))
        assert elsewhere != id(here.client)


async def test_a_heavy_module_is_imported_in_a_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "heavy_probe_module.py").write_text("import threading\nIMPORTED_IN = threading.current_thread()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "heavy_probe_module", raising=False)
    module = await import_off_loop("heavy_probe_module")
    assert module.IMPORTED_IN is not threading.current_thread()
    assert await import_off_loop("heavy_probe_module") is module  # loaded: returned as is


async def test_a_request_connects_within_the_connect_timeout_whatever_the_sdk_gives(tmp_path: Path) -> None:
    """google-genai hands httpx its `timeout` (90 s) as one number, which also bounds connecting: a host that
    never answers held each attempt 90 s. Our clients cap connecting at CONNECT_TIMEOUT_S; read stays 90 s."""
    seen: list[dict[str, float | None]] = []

    async def record(request: httpx.Request) -> None:
        seen.append(dict(request.extensions["timeout"]))

    options = settings(tmp_path, timeout_s=90.0)
    async with GenaiClient(options) as genai:
        http = genai._shared.http if genai._shared is not None else None
        assert http is not None
        http.event_hooks["request"].append(record)  # after ours: sees what the transport is given
        with pytest.raises(httpx.ConnectError):
            await genai.client.aio.models.generate_content(model="gemini-2.5-flash", contents="hi")
        http.event_hooks["request"].remove(record)
    await genai_client.close_idle_clients()
    assert seen, "no request was sent"
    assert seen[0]["connect"] == http_clients.CONNECT_TIMEOUT_S
    assert seen[0]["read"] == 90.0
