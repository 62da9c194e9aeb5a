"""The provider could not be reached: one outcome on every backend (docs/protocol.md, "Codes").

No connection to the model's server could be made (refused, a name that does not resolve, a connect
timeout, a TLS handshake that failed, a proxy that refused the tunnel): nothing was sent to the model.
Every backend reports it, once its own quick retries are over, as the same error: `backend_unavailable`,
retryable, naming the URL it tried and what to check, so that the default `failover_on` moves the run
to the next fallback. A connection that broke after the server answered is not this: it stays
`stream_interrupted`.

Each backend decides *that* it happened next to its own error mapping (httpx's exceptions in
`unified._internal.api_errors`, the binaries' messages in their `_outcome` modules); the error itself is
built here, once. No heavy import: the binary backends use it too.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from unified.errors import BackendUnavailable

__all__ = ["display_url", "provider_unreachable"]


def display_url(url: str) -> str:
    """`url` as an error may show it: scheme, host, port and path, without user, password, query or fragment
    (a key travels in a query on some APIs, a password in the user part of a proxy's URL)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<an unparsable URL>"
    if not parts.scheme or not host:
        return "<an unparsable URL>"
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def provider_unreachable(
    provider: str, url: str, why: str, *, check: str, attempts: int | None = None
) -> BackendUnavailable:
    """The one error of "the provider could not be reached".

    `provider` names the service ("the Gemini API"), `url` is where the backend tried to connect, `why` what
    failed (the library's or the binary's own words), `check` the settings that choose the URL
    (e.g. "GOOGLE_GEMINI_BASE_URL"), `attempts` how many connections were tried, when known.
    """
    shown = display_url(url)
    parts = urlsplit(shown)
    server = urlunsplit((parts.scheme, parts.netloc, "", "", "")) if parts.netloc else shown
    tried = f" ({attempts} attempts)" if attempts else ""
    details: dict[str, object] = {"url": shown, "reason": why}
    if attempts:
        details["attempts"] = attempts
    return BackendUnavailable(
        f"could not connect to {provider} at {shown}{tried}: {why}; nothing was sent to the model",
        hint=f"check that the server at {server} is up and reachable from here (network, DNS, proxy, TLS) and "
        f"that {check} points at it; or let the run fail over (ExecuteParams.fallback)",
        retryable=True,
        details=details,
    )
