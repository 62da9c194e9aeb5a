"""Whether a URL the caller gave names an HTTP endpoint: a base URL of the Gemini API, an MCP server's.

One check for both, in unified's words: a URL either fails only at its first request, in the HTTP client's words
(an `InvalidURL`, an `OverflowError`, `internal_error` or a retry that cannot help), and the URL parser's own
errors quote the parts a token may stand in.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["url_problem"]


def url_problem(url: str) -> str | None:
    """Why `url` is no http(s) URL an HTTP client can connect to, or None. In unified's words, never the
    parser's: its errors quote the URL's parts (`Port could not be cast to integer value as 'tok_live_...'`,
    `netloc '...' contains invalid characters`), and a gateway's URL may carry a token there."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # a port of letters, or past 65535, raises here
    except ValueError as exc:
        if "Port" in str(exc):
            return "its port is not a number of 1-65535"
        if "IPv6" in str(exc):
            return "its IPv6 host's `[` is not closed by `]`"
        return "its host holds characters a URL cannot (after Unicode normalization)"
    if parts.scheme not in ("http", "https"):
        return f"its scheme is {parts.scheme!r}, not http or https" if parts.scheme else "it has no http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "its port is 0"
    return None
