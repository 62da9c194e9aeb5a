"""HTTP clients for the API backends: ours (so test doubles and cassettes see every request), built cheaply.

Loading a CA bundle into a fresh `ssl.SSLContext` takes about 20 ms, and httpx and google-genai
each do it for every client they build. One context per process, shared by every client (an
`SSLContext` is safe to share across clients and threads), takes that off every run's start.
It trusts the same roots the SDK would: SSL_CERT_FILE / SSL_CERT_DIR, else certifi's bundle.
"""

from __future__ import annotations

import functools
import os
import ssl

import certifi
import httpx

__all__ = ["async_client", "sync_client", "tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context(
        cafile=os.environ.get("SSL_CERT_FILE", certifi.where()), capath=os.environ.get("SSL_CERT_DIR")
    )


def _timeout(timeout_s: float) -> httpx.Timeout:
    return httpx.Timeout(timeout_s, connect=min(timeout_s, 30.0))


def async_client(timeout_s: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=_timeout(timeout_s), verify=tls_context())


def sync_client(timeout_s: float) -> httpx.Client:
    """Handed to google-genai beside the async one, so it builds no client (and no TLS context) of its own."""
    return httpx.Client(timeout=_timeout(timeout_s), verify=tls_context())
