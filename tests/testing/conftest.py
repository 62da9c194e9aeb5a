"""Clients of the real google-genai SDK pointed at a FakeGemini over real HTTP on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from google import genai
from google.genai import types

from unified._internal.http import tls_context
from unified.testing._fake_gemini import FakeGemini

ClientFactory = Callable[[FakeGemini], genai.Client]


@pytest.fixture
def client_for() -> Iterator[ClientFactory]:
    """Build SDK clients with injected httpx clients (the SDK's own stack would be httpx2/aiohttp) and
    no retries, so a fault surfaces on its first occurrence; close them after the test. They share one
    TLS context, as unified's own clients do (loading a CA bundle costs 20-80 ms per client)."""
    opened: list[httpx.Client] = []

    def make(server: FakeGemini) -> genai.Client:
        sync = httpx.Client(verify=tls_context())
        opened.append(sync)
        options = types.HttpOptions(
            base_url=server.base_url,
            api_version="v1beta",
            httpx_client=sync,
            httpx_async_client=httpx.AsyncClient(verify=tls_context()),
            retry_options=types.HttpRetryOptions(attempts=1),
            async_client_args={"ssl": tls_context()},
        )
        return genai.Client(api_key="test-key", http_options=options)

    yield make
    for client in opened:
        client.close()
