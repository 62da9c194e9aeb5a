"""Which session store a run uses: the one `UNIFIED_SESSION_STORE_URL` names, else the files.

Kept apart from the stores themselves so that choosing one (which may load the PostgreSQL store)
is not a dependency of the stores.
"""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from pathlib import Path

from unified._exports import publish
from unified._redaction import clip
from unified._sessions.records import SessionStore
from unified._sessions.stores import FileSessionStore
from unified._text import well_formed
from unified.errors import ConfigurationError

__all__ = ["STORE_URL_ENV", "configured_store", "default_store", "store_from_url"]

STORE_URL_ENV = "UNIFIED_SESSION_STORE_URL"
"""Names the session store every run and `unified sessions` use when none is passed."""


def store_from_url(url: str) -> SessionStore:
    """The store a URL names: `postgresql://...` (or `postgres://...`), or `file:///path` (a directory).

    Raises ConfigurationError for any other scheme, or when the PostgreSQL driver is missing.
    """
    if well_formed(url) != url:
        # bytes of the environment that are not UTF-8 (`surrogateescape`): no URL holds them, and percent-decoding
        # one raised UnicodeEncodeError, `unified sessions list` ending "a bug in unified", exit 70 (round 24)
        raise ConfigurationError(
            f"the session store URL holds bytes that are not UTF-8 ({clip(ascii(url), 200)})",
            hint=f"set {STORE_URL_ENV} in UTF-8, a directory's other bytes percent-encoded (%FF)",
        )
    # The scheme ends at the first colon (RFC 3986): read up to "://", `file:` and `file:/srv/store` (RFC 8089's short
    # form) were "an unknown kind of store (file:/srv/store)", and a bare path was named a kind of store (round 26).
    scheme, colon, _ = url.partition(":")
    scheme = scheme.lower() if colon and _SCHEME.fullmatch(scheme) else ""
    if scheme in ("postgresql", "postgres"):
        return _postgres_store(url)
    if scheme == "file":
        return FileSessionStore(_file_store_root(url))
    if not scheme and url.startswith(("/", "~")):
        raise _refused(url, "is a path, not a URL")
    raise ConfigurationError(
        f"the session store URL names an unknown kind of store ({clip(scheme, 40) if scheme else 'no scheme'})",
        hint=f"set {STORE_URL_ENV} to postgresql://user:password@host:port/database or file:///directory",
    )


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
"""A URL's scheme (RFC 3986): what comes before the first colon of a URL, and only of a URL."""


def _file_store_root(url: str) -> Path:
    """The directory a `file:///path` (or `file://localhost/path`, or `file:/path`) URL names, read as RFC 8089 (and
        `urllib.request.url2pathname`) read one: its path percent-decoded, `%20` a space (it was taken as it was
        written, so `file:///srv/my%20store` made a directory named `my%20store` beside the `my store` the URL
        means). The decoded bytes must be UTF-8 (`%FF` alone is refused: decoded with replacement, as `unquote`
    does, it named another directory).

        Anything else is refused: `file://` named no directory and `file://dir` a relative one, so each run put
        its sessions under the directory it started in (a project's own folder), where a run started anywhere
        else could not find them; a URL with a query or a fragment (`?`, `#`: a path spelling them writes `%3F`,
        `%23`), another host, or a NUL byte (`%00`, which no file name holds) names no directory either."""
    after = url.partition(":")[2]
    if after.startswith("//"):
        host, slash, path = after[2:].partition("/")
    elif after.startswith("/"):  # `file:/srv/store`: RFC 8089's form without an authority
        host, slash, path = "", "/", after[1:]
    else:  # `file:` or `file:dir`: no absolute directory
        host, slash, path = "", "", after
    if not slash or host.lower() not in ("", "localhost"):
        raise _refused(
            url,
            "names no absolute directory: a file store in a relative one would be in whatever directory each run "
            "starts"
            + (f" (and file://{clip(host, 80)}/... names a directory of the host {clip(host, 80)!r})" if slash else ""),
        )
    if "?" in path or "#" in path:
        raise _refused(url, "has a query or a fragment, which a directory has not (write '?' as %3F, '#' as %23)")
    try:
        decoded = urllib.parse.unquote_to_bytes("/" + path).decode("utf-8")
    except UnicodeDecodeError:
        raise _refused(url, "percent-encodes a path that is not UTF-8") from None
    if "\0" in decoded:
        raise _refused(url, "holds a NUL byte (%00), which no directory name can")
    return Path(decoded)


def _refused(url: str, why: str) -> ConfigurationError:
    return ConfigurationError(
        f"the session store URL {clip(url, 200)!r} {why}",
        hint=f"set {STORE_URL_ENV} to file:///absolute/directory (three slashes; percent-encoded as a URL is)",
    )


@functools.cache
def _postgres_store(url: str) -> SessionStore:
    """One store per URL in a process, so runs share its idle connections."""
    from unified._sessions.postgres import PostgresSessionStore

    return PostgresSessionStore(url)


def configured_store() -> SessionStore | None:
    """The store `UNIFIED_SESSION_STORE_URL` names, None when it is not set."""
    url = os.environ.get(STORE_URL_ENV, "").strip()
    return store_from_url(url) if url else None


def default_store() -> SessionStore:
    """The store a run uses when `ExecuteParams.session_store` is None: the one `UNIFIED_SESSION_STORE_URL`
    names, else files under `sessions_root()`."""
    return configured_store() or FileSessionStore()


publish("unified.sessions", ["store_from_url"], globals())
