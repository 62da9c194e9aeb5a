"""The one `genai.Client` builder of the API backends, on httpx clients we own and close.

google-genai would otherwise pick its own HTTP stack (httpx2, or aiohttp when importable), which
respx and vcrpy's httpx patch cannot see, and build a TLS context per client. We inject both of
the clients it may use (async, and sync for the trio path), apply the base URL, API version, the
per-attempt timeout once, build the client from the resolved auth
(`ApiOptions.auth`, see `unified.auth.resolve_api_auth`) and nothing else, switch the SDK's retries off (ours
honour RetryInfo: `unified._internal.retry`), and close both httpx clients when the run ends.
google.genai is imported only when a run enters this context.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import httpx

from unified._errors import BackendUnavailable
from unified._internal.api_settings import ApiOptions
from unified._internal.http import async_client, sync_client, tls_context

if TYPE_CHECKING:
    from google import genai


class GenaiClient:
    """`async with GenaiClient(settings) as g: g.client...` — both httpx clients are closed on exit."""

    def __init__(self, settings: ApiOptions) -> None:
        self.settings = settings
        self.http: httpx.AsyncClient | None = None
        self.sync_http: httpx.Client | None = None
        self._client: genai.Client | None = None

    @property
    def client(self) -> genai.Client:
        assert self._client is not None, "GenaiClient used outside its `async with`"
        return self._client

    async def __aenter__(self) -> GenaiClient:
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:  # pragma: no cover - google-genai is a dependency
            raise BackendUnavailable(f"google-genai is not importable: {exc}", hint="pip install google-genai") from exc
        settings = self.settings
        self.http = async_client(settings.timeout_s)
        self.sync_http = sync_client(settings.timeout_s)
        auth = settings.auth
        assert auth is not None, "GenaiClient needs settings from resolve_api_settings"
        options = types.HttpOptions(
            api_version=settings.api_version or ("v1beta1" if auth.vertexai else "v1beta"),
            base_url=auth.base_url,
            timeout=int(settings.timeout_s * 1000),  # the SDK sends timeout=None to httpx otherwise: no timeout
            httpx_async_client=self.http,
            httpx_client=self.sync_http,
            retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours: they honour RetryInfo
            # google-genai builds a TLS context for Live API websockets in every client unless given one.
            async_client_args={"ssl": tls_context()},
        )
        # Every value is explicit, so google-genai's own reading of the environment changes nothing.
        self._client = genai.Client(
            vertexai=auth.vertexai,
            api_key=auth.api_key,
            credentials=settings.credentials if auth.kind == "vertex_adc" else None,
            project=auth.project,
            location=auth.location,
            http_options=options,
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            if self.http is not None:
                await self.http.aclose()
            if self.sync_http is not None:
                await anyio.to_thread.run_sync(self.sync_http.close, abandon_on_cancel=True)
