"""Whether a URL the caller gave names an HTTP endpoint: a base URL of the Gemini API, an MCP server's.

One check for both, in unified's words: a URL either fails only at its first request, in the HTTP client's words
(an `InvalidURL`, an `OverflowError`, `internal_error` or a retry that cannot help), and the URL parser's own
errors quote the parts a token may stand in.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

__all__ = ["base_url_refusal", "url_problem"]

_IPV4_LIKE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
"""A host the HTTP client (httpx) takes for an IPv4 address, and refuses unless it is one (`999.1.1.1`)."""


def url_problem(url: str) -> str | None:
    """Why `url` is no http(s) URL an HTTP client can connect to, or None. In unified's words, never the
    parser's: its errors quote the URL's parts (`Port could not be cast to integer value as 'tok_live_...'`,
    `netloc '...' contains invalid characters`, `Invalid IDNA hostname: '...'`), and a gateway's URL may carry a
    token there. Whitespace at either end, or in the scheme, host or port, is refused (a URL copied with a space or
    a line break passed here and failed at the first request: the host read as empty, `exa%20mple.com` looked up,
    a line break refused by the client); in the path or query it is kept, as an HTTP client sends it (`%20`)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url.strip()):
        return "it holds a control character (a tab or a line break?)"
    if url != url.strip():
        return "it starts or ends with whitespace (a space or a line break copied with it?)"
    try:
        parts = urlsplit(url)
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
    if any(c.isspace() for c in parts.netloc):
        return "its user, host or port holds whitespace"
    if port == 0:
        return "its port is 0"
    return _host_problem(parts.hostname)


def base_url_refusal(
    url: str, source: str, sender: str, *, setting: str | None = None, form: str = "a host, a port of 1-65535, a path"
) -> tuple[str, str] | None:
    """(message, hint) of a `configuration_error` for a base URL no request can be sent to, or None for one that
    can: every backend, binary or API, says it in these words, before anything starts or is sent (the API
    backends said `auth_error`, though no credential would help). `source` is where the URL came from
    ("GOOGLE_GEMINI_BASE_URL", "the base_url option"), `sender` what would send to it ("Codex", "google-genai"),
    `setting` what to change (`source` unless given), `form` what a good URL looks like. The URL itself is never
    repeated (a gateway's may carry a token)."""
    why = url_problem(url)
    if why is None:
        return None
    return (
        f"the base URL in {source} is not one {sender} can send requests to: {why}",
        f"set {setting or source} to an http:// or https:// URL ({form}), or unset it",
    )


def _host_problem(host: str) -> str | None:
    """Why the HTTP client cannot encode `host` (lower case, brackets gone) for a request, or None: an
    internationalized name that IDNA refuses (a zero-width space, `⒈`, a bad `xn--` label), a would-be IPv4
    address. Checked as httpx does, since google-genai sends through it."""
    if _IPV4_LIKE.fullmatch(host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return "its host looks like an IPv4 address but is not one"
        return None
    if host.isascii() and not any(label.startswith("xn--") for label in host.split(".")):
        return None
    if ":" in host:  # an IPv6 address, checked by urlsplit
        return None
    import idna  # httpx's own dependency; loaded only for a name that is not plain ASCII

    try:
        idna.decode(host) if host.isascii() else idna.encode(host)
    except (idna.IDNAError, UnicodeError, ValueError):
        return "its host is not a valid internationalized domain name (IDNA refuses it)"
    return None
