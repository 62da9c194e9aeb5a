"""The built-in SessionStores: `FileSessionStore` (the default) and `MemorySessionStore`.

File layout: one JSON file per session, `<root>/<backend>/<shard>/<id>.json`, the shard being the
id's first two characters in lower case (as git fans out its objects), root being
`$UNIFIED_DATA_DIR/sessions` or `<user data dir>/unified/sessions`. A short id, or any reference of
two id characters or more, names one shard, so `resolve` lists one small directory (and the
backend's directory of shards) instead of every session; a one-character reference looks in every
shard whose name starts with it. The file is one JSON object
whose first line holds the small `header` (format, id, model, cwd, timestamps, usage, first
prompt) and whose rest holds the backend's opaque `state`, so listing reads one line (and the
last two bytes, to see the file is whole) per file. Writes go to a temp file in the same
directory, fsynced, then `os.replace`d into place: a reader never sees half a file. The temp file of a
save that died before its rename is removed by a later listing of its directory, once an hour old (`_sweep`).

Legacy layout: a store written by an older unified keeps its sessions flat, `<root>/<backend>/<id>.json`.
They are still listed, resolved, loaded, leased and deleted. A save moves one: it writes the shard
path (fsynced, with its directory), then unlinks the flat file, so a crash in between leaves the
session at both paths, never at none; a session at both paths is one session, the shard's copy
winning (the flat one is a leftover that `delete` removes). Listing reads only regular files named
like an id, in the backend's directory and in its shard directories (real directories, never
symbolic links, named like a shard): nothing outside `<root>/<backend>` is followed.

Leases: `<shard>/<id>.lock` is held with `flock(LOCK_EX | LOCK_NB)` on a descriptor kept open for the
run, so the kernel releases it when the holder exits, however it dies; while the session still has a
flat file, `<id>.lock` beside it (the lock an older unified takes) is held too, so neither layout's
holder can run beside the other's. The error names the holder
from the kernel's lock table (Linux), else from the pid and host the holder wrote in the file;
neither is ever used to decide anything. Taking a lease never waits. A folder of leases only
(`folder_lease`, an agent binary's) links a spare lock file at the lock's path instead of creating one
(`unified._sessions.spares`). See docs/sessions.md for the guarantees and their limits.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import re
import socket
import stat
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import anyio.lowlevel
import platformdirs

from unified import _limits as limits
from unified._environ import PerEnvironment
from unified._exports import publish
from unified._files import (
    FSIZE_FIX,
    NotRegularFile,
    current_directory,
    dangling_link_in_the_way,
    expand_user,
    file_in_the_way,
    make_way,
    open_regular,
    write_atomically,
)
from unified._redaction import clip, redact
from unified._sessions import spares
from unified._sessions.records import (
    SessionInfo,
    SessionProblem,
    SessionStore,
    StoredSession,
    clipped_prompt,
    resolve_ref,
    short_id_of,
    unreadable_why,
)
from unified._text import escapes_surrogates, found_json, well_formed_json
from unified.errors import (
    ConfigurationError,
    CorruptSession,
    SessionError,
    SessionInUse,
    SessionNotFound,
    SessionStoreUnavailable,
    UnsupportedSessionFormat,
)
from unified.events import Usage

__all__ = [
    "FORMAT_VERSION",
    "BlockingSessionStore",
    "FileSessionStore",
    "MemorySessionStore",
    "checked_header",
    "corrupt_error",
    "described",
    "folder_lease",
    "header_text",
    "in_use_error",
    "info_of_header",
    "newest_first",
    "parse_document",
    "readable_json",
    "save_announced",
    "serialize",
    "sessions_root",
    "stamp_updated",
    "unreadable_info",
    "unsupported_format",
    "utc_now",
]

FORMAT_VERSION = 1
"""The document format this `unified` writes and reads; a larger number is a newer `unified`'s."""
_HEADER_PREFIX = '{"header": '
_END = b"}\n"
"""How every document we write ends; raw newlines occur only here and after the header line."""

_ID_CHARS = re.compile(r"[0-9a-z_-]+")
"""What our session ids (and a reference that can name a file) are made of."""
_NAME_CHARS = re.compile(r"[0-9A-Za-z_-]+")
"""What a backend name or a session id must be made of to become a path component."""
_SHARD_LENGTH = 2
_SHARD_CHARS = re.compile(rf"[0-9a-z_-]{{1,{_SHARD_LENGTH}}}")
"""What a shard directory's name is: the first `_SHARD_LENGTH` characters of an id, in lower case."""
_TEMPORARY = re.compile(r"\.[0-9A-Za-z_-]{1,128}\.json\.[0-9]+(?:\.[0-9a-f]+)?\.tmp")
"""The name of a save's temporary file (`unified._files.temporary_beside`: `.<id>.json.<pid>.<token>.tmp`;
an older unified wrote `.<id>.json.<pid>.<thread>.tmp` and `.<id>.json.<pid>.tmp`). Never a record's or a lock's."""
STALE_TEMPORARY_SECONDS = 3600.0
"""How long after its last write a save's temporary file is taken for a dead save's and removed (see `_sweep`)."""


def _shard_of(session_id: str) -> str:
    """The shard directory of an id (a valid `_NAME_CHARS` one): its first two characters, in lower case."""
    return session_id[:_SHARD_LENGTH].lower()


def sessions_root() -> Path:
    """`$UNIFIED_DATA_DIR/sessions`, else `<user data dir>/unified/sessions` (XDG_DATA_HOME on Linux).

    Worked out again only when the environment changed: every run without a `session_store` asks it
    before its first request, and platformdirs' answer costs ~50 us."""
    return _sessions_root()


def _find_sessions_root() -> Path:
    """`UNIFIED_DATA_DIR` with `~` expanded and made absolute, as a shell would give it: set where no shell
    expands it (a systemd unit, `docker run -e`, a `.env` file), `~/data` made a directory named `~` in
    whatever directory each run started, and a relative one moved with it (and with a library's `chdir`)."""
    override = os.environ.get("UNIFIED_DATA_DIR")
    if not override:
        return Path(platformdirs.user_data_dir("unified", appauthor=False)) / "sessions"
    return _given_root(override) / "sessions"


def _given_root(root: object) -> Path:
    """A `FileSessionStore(root)` as a directory, read as `UNIFIED_DATA_DIR` is (`~` expanded, made absolute).

    A `str` (what most callers pass, whatever the annotation says) was kept as it was, and the store's first
    save or listing failed deep inside with "TypeError: unsupported operand type(s) for /: 'str' and 'str'"
    (bad input round 21); an empty one would have been `.`, the sessions written wherever the process runs."""
    if isinstance(root, bytes) or not isinstance(root, str | os.PathLike):
        raise ConfigurationError(
            f"FileSessionStore's root is {type(root).__name__}, not a path",
            hint="pass the store's directory as a str or pathlib.Path, or None for the default",
        )
    if not os.fspath(root):
        raise ConfigurationError(
            "FileSessionStore's root is empty, which names no directory (it would be the current one)",
            hint="pass the store's directory, or None for the default ($UNIFIED_DATA_DIR/sessions)",
        )
    try:
        path = expand_user(os.fspath(root))
    except ValueError as exc:  # `~nobody/x`: "unexpected RuntimeError ... (a bug in unified)" (bad input round 26)
        raise ConfigurationError(
            f"the session store's directory {os.fspath(root)!r} cannot be found: {exc}",
            hint="set UNIFIED_DATA_DIR (or FileSessionStore's root) to a directory of a known home, or an absolute one",
        ) from None
    return path if path.is_absolute() else current_directory() / path  # a deleted one said so (round 24)


_sessions_root = PerEnvironment(_find_sessions_root)


_ONE_MICROSECOND = timedelta(microseconds=1)
"""The clock's and the stored stamps' resolution (isoformat and PostgreSQL's timestamptz)."""
_CLOCK_STEP_BACK = timedelta(days=1)
"""The most a clock steps back that a save still orders after (see `stamp_updated`)."""
_stamp_lock = threading.Lock()
_last_stamp = datetime.min.replace(tzinfo=UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def stamp_updated(session: StoredSession) -> None:
    """Set `updated_at` for a save: now, but after every stamp this process gave before and after
    the session's own previous stamp.

    Two saves can read the same microsecond from the clock, and a clock can step back; then the
    newest-first order of listings and of a short id's candidates would tie or run backwards. A
    save that happened later in this process reads later than every save before it, and a session's
    save later than its own last one; every store stamps through here, so they all agree. Across
    processes the clock is all there is. A previous stamp more than `_CLOCK_STEP_BACK` ahead of the
    clock (or without a time zone) is no clock's step back but a damaged or foreign record's: it is
    not followed. A session's own stamp never moves the process's: other sessions' stamps stay the
    clock's (plus a microsecond a tie)."""
    global _last_stamp
    with _stamp_lock:
        now = utc_now()
        stamp = _last_stamp = max(now, _last_stamp + _ONE_MICROSECOND)
    previous = session.updated_at
    if previous.utcoffset() is not None and now <= previous <= now + _CLOCK_STEP_BACK:
        stamp = max(stamp, previous + _ONE_MICROSECOND)
    session.updated_at = stamp


# --- the document, shared by both stores -----------------------------------------------------------


def described(session: StoredSession) -> dict[str, Any]:
    """What a session says about itself besides its id and state: stored in its header, shown by `show`."""
    return {
        "short_id": session.short_id,
        "model": session.model,
        "cwd": session.cwd,
        "first_prompt": clipped_prompt(session.first_prompt),
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
        "usage": session.usage.model_dump(),
        "turns": session.turns,
    }


def serialize(session: StoredSession) -> str:
    """The stored document of `session`, known secret values redacted."""
    header = {"format": FORMAT_VERSION, "backend": session.backend, "id": session.session_id, **described(session)}
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":"))
    body = json.dumps(session.state, ensure_ascii=False, separators=(",", ":"))
    return redact(f'{_HEADER_PREFIX}{head},\n"state": {body}}}\n')


def header_text(document: str) -> str:
    """The header of a document `serialize` wrote, as JSON text (its first line, unwrapped)."""
    first = document.split("\n", 1)[0]
    return first[len(_HEADER_PREFIX) : -1]


def unsupported_format(where: str, version: int) -> UnsupportedSessionFormat:
    return UnsupportedSessionFormat(
        f"session {where} has format {version}: it was written by a newer unified "
        f"(this one reads format {FORMAT_VERSION})",
        hint="upgrade unified to resume it; the record was left unchanged",
        details={"path": where, "format": version},
    )


def corrupt_error(where: str, why: str) -> CorruptSession:
    return CorruptSession(
        f"session {where} is corrupt: {why}",
        hint="it was left unchanged; move it away (or repair it by hand) and start a new session",
        details={"path": where},
    )


def readable_json(text: str, value: Any, where: str) -> Any:
    """`value` (parsed from the JSON `text` of a record) with each lone surrogate (`"\\ud800"` escaped alone,
    which `json.loads` takes and no UTF-8 encoder writes: a hand's, another tool's) replaced by U+FFFD, as
    unified reads every text from outside (`unified._text`). Such a record made `unified sessions
    list` of its backend exit 70 with UnicodeEncodeError, `export` too, and a resume end in `internal_error`.
    Only a record whose text escapes a surrogate at all is walked. CorruptSession when one is left (nested
    past the depth a walk goes)."""
    if not escapes_surrogates(text):
        return value
    value = well_formed_json(value)
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise corrupt_error(
            where, "it holds text that is not Unicode (a lone surrogate, escaped as \\ud800-\\udfff)"
        ) from None
    return value


def checked_header(raw: object, where: str) -> dict[str, Any]:
    """`raw` if it is a header this `unified` can read; else the error that says why not."""
    if not isinstance(raw, dict):
        raise corrupt_error(where, "its header is not a JSON object")
    version = raw.get("format")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise corrupt_error(where, f"its format number is {version!r}")
    if version > FORMAT_VERSION:
        raise unsupported_format(where, version)
    return raw


def _stamp(value: object) -> datetime:
    """A header's timestamp. One without a time zone (unified writes UTC; another tool or a hand may
    not) is read as UTC: compared with the others it raised TypeError, and one such record made every
    listing and every short id of its backend fail. A value that is no ISO text raises TypeError or
    ValueError (the record is corrupt)."""
    if not isinstance(value, str):
        raise TypeError(f"a timestamp is {type(value).__name__}, not ISO 8601 text")
    stamp = datetime.fromisoformat(value)
    return stamp if stamp.utcoffset() is not None else stamp.replace(tzinfo=UTC)


def info_of_header(header: dict[str, Any], where: str) -> SessionInfo:
    try:
        session_id = header["id"]
        if not isinstance(session_id, str):
            raise TypeError(f"id is {session_id!r}")
        usage = Usage.model_validate(header.get("usage") or {}, strict=True)  # `"5"` is no count, `"true"` no flag
        turns = header.get("turns") or 0
        if turns.__class__ is not int or turns < 0:
            raise TypeError(f"turns is {found_json(turns)}, not a count (an integer from 0)")
        return SessionInfo(
            backend=str(header["backend"]),
            session_id=session_id,
            short_id=short_id_of(session_id),
            started_at=_stamp(header["created_at"]),
            updated_at=_stamp(header["updated_at"]),
            first_prompt=clipped_prompt(header.get("first_prompt")),  # an older unified kept it whole
            cwd=header.get("cwd"),
            model=header.get("model"),
            path=where,
            extra={"usage": usage.model_dump(), "turns": turns},
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # pydantic's ValidationError is a ValueError
        # OverflowError: `"turns": 1e400` (JSON's number is a float, infinity here) failed every listing of its backend
        raise corrupt_error(where, f"its header has a wrong or missing field ({unreadable_why(exc)})") from exc


def _values(text: str) -> int:
    """About how many JSON values `text` holds: its `{`, `[` and `,` (one pass in C each); when that is over
    the bound, counted again outside strings, as `Conversation.from_json` counts them (prose has commas)."""
    raw = text.count("{") + text.count("[") + text.count(",")
    if raw <= limits.MAX_SESSION_VALUES:
        return raw
    from unified.conversations import _values as outside_strings

    return outside_strings(text, limits.MAX_SESSION_VALUES)


def parse_document(text: str, where: str) -> StoredSession:
    """The session in a stored document, or CorruptSession/UnsupportedSessionFormat (also for a document of
    more values than `limits.MAX_SESSION_VALUES`, refused before it is parsed)."""
    values = _values(text)
    if values > limits.MAX_SESSION_VALUES:
        raise corrupt_error(
            where,
            f"it holds {values:,} JSON values, more than a session record may ({limits.MAX_SESSION_VALUES:,}); "
            "it was not parsed",
        )
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise corrupt_error(where, f"it is not valid JSON ({exc})") from exc
    if not isinstance(document, dict) or "header" not in document:
        raise corrupt_error(where, "it has no header")
    document = readable_json(text, document, where)
    header = checked_header(document["header"], where)
    state = document.get("state")
    if not isinstance(state, dict):
        raise corrupt_error(where, "its state is not a JSON object")
    info = info_of_header(header, where)  # validates every field used below
    return StoredSession(
        backend=info.backend,
        session_id=info.session_id,
        model=info.model,
        cwd=info.cwd,
        first_prompt=info.first_prompt,
        created_at=_stamp(header["created_at"]),
        updated_at=_stamp(header["updated_at"]),
        usage=Usage.model_validate(info.extra["usage"]),
        turns=int(info.extra["turns"]),
        state=state,
    )


def unreadable_info(backend: str, session_id: str, where: str, error: SessionError) -> SessionInfo:
    """The listing entry of a record that cannot be read: reported, never hidden."""
    kind = "newer_format" if isinstance(error, UnsupportedSessionFormat) else "corrupt"
    return SessionInfo(
        backend=backend,
        session_id=session_id,
        short_id=short_id_of(session_id),
        path=where,
        problem=SessionProblem(kind=kind, message=error.message, hint=error.hint or ""),
    )


def newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda s: s.updated_at or datetime.min.replace(tzinfo=UTC), reverse=True)


_NAME_MAX_CHARS = 128
"""Longest backend name or session id that becomes a path component: the record's temporary file
(`.<id>.json.<pid>.<token>.tmp`) must stay within the kernel's 255 bytes. A uuid is 36."""


def _checked_name(kind: str, value: str) -> str:
    """`value`, if it can become a path component; else the SessionError saying why (a longer one was
    the kernel's ENAMETOOLONG, an untyped OSError from load, lease and delete)."""
    if not _NAME_CHARS.fullmatch(value):
        raise SessionError(
            f"{kind} {clip(value, 80)!r} cannot name a stored session",
            hint="use letters, digits, '-' and '_' only",
        )
    if len(value) > _NAME_MAX_CHARS:
        raise SessionError(
            f"{kind} {clip(value, 80)!r} is {len(value):,} characters: it cannot name a stored session",
            hint=f"a stored session's {kind} has at most {_NAME_MAX_CHARS} characters",
        )
    return value


def in_use_error(session_id: str, holder: str) -> SessionInUse:
    return SessionInUse(
        f"session {short_id_of(session_id)} is in use by another run ({holder}); wait for it to finish",
        hint="or start a new session; a lease is released as soon as its run ends, even if it crashed",
        details={"session_id": session_id},
    )


def _holder_record() -> bytes:
    """What a lease's holder writes in its lock file: `{"pid": ..., "host": ..., "since": ...}`, as `json.dumps`
    writes it (the time is digits and signs). Only the time is new per lease: the rest is this process's
    (`_holder_prefix`); every run of an agent binary takes a lease, and a call of the encoder, or of
    `gethostname`, cost more than the rest of the record."""
    return f'{_holder_prefix(os.getpid())}"{utc_now().isoformat()}"}}'.encode()


@functools.lru_cache(maxsize=1)
def _holder_prefix(pid: int) -> str:
    """The record up to its time, for the process `pid` (a forked child is another pid, so it reads its own).
    The host is read once per process: the record only names the holder to a person (`_describe_holder`
    asks the kernel first), never decides anything."""
    return f'{{"pid": {pid}, "host": {json.dumps(socket.gethostname())}, "since": '


def _kernel_holder(fd: int) -> int | None:
    """The pid holding the flock on `fd`'s file, as the kernel reports it (Linux `/proc/locks`).

    The record in the lock file can be stale for an instant (a holder that just took over a
    crashed run's file has not rewritten it yet); the kernel's table cannot.
    """
    stat = os.fstat(fd)
    key = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    try:
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 12345 fd:01:1234567 0 EOF"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4].isdigit():
            return int(fields[4])
    return None


def _describe_holder(fd: int) -> str:
    """Who holds the lease on `fd`'s lock file: the kernel's answer, else the holder's own record."""
    pid = _kernel_holder(fd)
    if pid is not None:
        return f"pid {pid} on host {socket.gethostname()}"
    try:
        data = json.loads(os.pread(fd, 4096, 0))
        return f"pid {int(data['pid'])} on host {data['host']}"
    except (ValueError, RecursionError, KeyError, TypeError):
        return "a run that has not recorded its pid yet"


# --- files ----------------------------------------------------------------------------------------


def _create(path: str | Path, flags: int) -> int:
    """`os.open(path, flags | O_CREAT)` (mode 0600), making its directory only when it is missing:
    a run's lease and first save happen on the event loop's thread, where a `mkdir` and a `stat`
    before every create were two more metadata calls (each a wait on a busy disk's journal)."""
    flags |= os.O_CREAT | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, flags, 0o600)


@contextlib.contextmanager
def _failing_at(root: str | Path, what: str, *, missing: bool = False) -> Iterator[None]:
    """An OSError of the store's own files (a full disk, a read-only or unwritable directory, a file where
    its directory goes) as `SessionStoreUnavailable` naming the path: it was an untyped OSError, which a
    run reported as `internal_error`, "a bug in unified". A FileNotFoundError is left to the caller (a
    record that is not there is a miss, not a broken store), unless `missing`: for a save nothing is a
    miss, and a file gone under it (its temporary file, swept after an hour's stall; its directory,
    removed meanwhile) is the store failing that save."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and not missing:
            raise
        raise _unavailable(root, what, exc) from None


def _unavailable(root: str | Path, what: str, exc: OSError) -> SessionStoreUnavailable:
    where = exc.filename or root
    details = {"path": str(where), "errno": exc.errno}
    keep = "no stored session was changed"
    other = "point UNIFIED_DATA_DIR (or UNIFIED_SESSION_STORE_URL) at another store"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST) and (blocker := file_in_the_way(where)) is not None:
        return SessionStoreUnavailable(  # it said "Not a directory" of the folder, and to make it writable
            f"the session store at {root} cannot {what}: {blocker} is a file, where the store needs a folder",
            hint=f"{make_way(blocker)} (or {other}); {keep}",
            details=details,
        )
    if exc.errno in (errno.ENOENT, errno.EEXIST) and (link := dangling_link_in_the_way(where)) is not None:
        fix = (
            f"{link} is a symbolic link to {os.readlink(link)}, which does not exist: make that folder, point the "
            f"link at one, or {other}"
        )
    elif exc.errno == errno.ENOENT:  # a folder that cannot be made where the store is (under /proc)
        fix = "point UNIFIED_DATA_DIR (or UNIFIED_SESSION_STORE_URL) at a folder that exists or can be made"
    elif exc.errno == errno.EFBIG:  # RLIMIT_FSIZE: it said to make the directory writable
        fix = f"{FSIZE_FIX}, or {other}"
    elif exc.errno == errno.EROFS:
        fix = f"{other} on a writable file system"
    elif exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = f"free disk space (or raise the quota), or {other}"
    elif exc.errno == errno.ELOOP:  # symbolic links that point at each other: no permission makes it a folder
        fix = f"a symbolic link on the way to {where} loops (`ls -l` each of its folders): fix or remove it, or {other}"
    elif exc.errno == errno.EISDIR:  # a folder where a record goes: it said to make the folder writable
        fix = f"{where} is a folder where a session record goes: move it away (it is no record), or {other}"
    else:
        fix = f"make that directory writable, or {other}"
    return SessionStoreUnavailable(
        f"the session store at {root} cannot {what}: {exc.strerror or exc} ({where})",
        hint=f"{fix}; {keep}",
        details=details,
    )


def _flat_of(record: Path) -> Path:
    """Where an older unified kept the record that this one keeps at `record`: beside the shard."""
    return record.parent.parent / record.name


def _record_id(entry: os.DirEntry[str], prefix: str) -> str | None:
    """The id `entry` is the record of, if it is a regular file `<id>.json` and the id starts with `prefix`."""
    name = entry.name
    if not name.endswith(".json"):
        return None
    stem = name[: -len(".json")]
    if not stem.lower().startswith(prefix) or not _NAME_CHARS.fullmatch(stem):
        return None
    return stem if entry.is_file(follow_symlinks=False) else None


def _checked_shard(record: Path) -> Path:
    """`record`, unless something other than a directory (a symbolic link) stands where its shard goes."""
    _check_folder(str(record.parent))
    return record


def _check_folder(folder: str) -> None:
    """Raise unless `folder` is a directory itself (not a symbolic link to one) or is missing."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        raise SessionError(
            f"{folder} is not a directory: the session store does not follow or write through it",
            hint="it was left unchanged; move it away",
            details={"path": folder},
        )


def _finish_move(record: Path) -> None:
    """The record just written at `record` replaces a flat one: make the new path durable (the file
    was fsynced; its shard directory and the entry naming that directory are synced here), then
    unlink the flat file. A crash in between leaves both, and the shard's copy wins."""
    for directory in (record.parent, record.parent.parent):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        _flat_of(record).unlink()


def _take_lock(lock: str | Path, session_id: str) -> int:
    """A descriptor holding the flock on `lock`, the holder's record written in it; SessionInUse if
    another descriptor holds it.

    A holder unlinks the file on release while still holding it, so a taker that opened it just
    before can lock a file no longer at the path: it checks that the inode it locked is the one at
    the path and tries again if not (the inode's link count would not do: a folder lease's inode keeps
    its spare's name, `unified._sessions.spares`). That keeps "one holder" true without ever leaving
    lock files behind. The file's type is read by the same `fstat`, after the `flock` (a flock of a
    FIFO or a device changes nothing), where one before it was a call more on every lease.
    """
    while True:
        fd = _open_lock(lock)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:
                held = False
            locked = os.fstat(fd)
            if not stat.S_ISREG(locked.st_mode):
                raise _refused_lock(lock, "not a regular file")
            if not held:
                raise in_use_error(session_id, _describe_holder(fd))
        except BaseException:
            os.close(fd)
            raise
        try:
            current = os.stat(lock)
            if (current.st_ino, current.st_dev) == (locked.st_ino, locked.st_dev):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # we locked a file its last holder had already unlinked
    try:
        if locked.st_size:  # a crashed holder's record
            os.ftruncate(fd, 0)
        os.pwrite(fd, _holder_record(), 0)
    except BaseException:
        _release_lock(lock, fd)
        raise
    return fd


def _open_lock(lock: str | Path) -> int:
    """A descriptor of the lock file at `lock` (created if missing), never through a symbolic link.

    A lease writes its holder's record into the file (truncating a crashed holder's first): opened through
    a symbolic link planted at the lock's name, it truncated and overwrote the link's target, any file the
    user may write. A link is never followed (O_NOFOLLOW), a FIFO never waited on (O_NONBLOCK), and
    `_take_lock` refuses anything but a regular file before it writes."""
    try:
        return _create(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise _refused_lock(lock, "a symbolic link") from None


def _refused_lock(lock: str | Path, what: str) -> SessionError:
    return SessionError(
        f"the session's lock file {lock} is {what}: the session store does not follow or write through it",
        hint="it was left unchanged; move it away, then run again",
        details={"path": str(lock)},
    )


def _release_lock(lock: str | Path, fd: int) -> None:
    """Unlink the lock file while still holding it, then close (which releases the flock). A lock file that
    cannot be unlinked (its directory turned read-only meanwhile) is left: the next taker takes it as it takes
    a crashed holder's, and a failed unlink must not turn a run's end into an error."""
    with contextlib.suppress(OSError):
        os.unlink(lock)
    os.close(fd)


def folder_lease(root: str | Path, backend: str, session_id: str) -> contextlib.AbstractAsyncContextManager[None]:
    """`FileSessionStore(root).lease(backend, session_id)` for a `root` that holds leases only, never a record (an
    agent binary's sessions are its CLI's own files: `unified._binary.shared.session_lease`): the very lock file,
    taken and released the same way, so either excludes the other. Left out is what only a store of records needs
    around the lock: the store object, the record's path, the session's bookkeeping for saves and the look for an
    older layout's flat record (a folder of leases never has one, so the store's lease never takes that second
    lock there either): every new codex thread and every resume takes one, on the event loop's thread."""
    return _FolderLease(str(root), backend, session_id)


class _FolderLease:
    """`folder_lease`'s context manager, a class rather than a generator's: entered once per agent binary run, on
    the event loop's thread, where a generator-based one cost a generator and its wrapper per run. The lock file
    is a spare linked at the lock's path when it can be (`unified._sessions.spares`: no file created and freed per
    lease), else taken as the store's lease takes it."""

    __slots__ = ("_backend", "_fd", "_folder", "_lock", "_root", "_session_id", "_spare")

    def __init__(self, root: str, backend: str, session_id: str) -> None:
        self._root, self._backend, self._session_id = root, backend, session_id
        self._folder = self._lock = ""
        self._fd = -1
        self._spare: spares.Spare | None = None

    async def __aenter__(self) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()  # as the store's lease: no trip through the loop
        root, name = self._root, _checked_name("session id", self._session_id)
        folder = f"{root}/{_checked_name('backend', self._backend)}"
        shard = f"{folder}/{_shard_of(name)}"
        lock = f"{shard}/{name}.lock"
        try:  # `_failing_at(root, "be written")`, without a generator's context manager
            _check_folder(shard)
            spare = spares.linked_spare(folder, lock)
            if spare is None:
                self._fd = _take_lock(lock, self._session_id)
            else:
                self._fd = spare.fd
                _record_holder(folder, lock, spare)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _unavailable(root, "be written", exc) from None
        self._folder, self._lock, self._spare = folder, lock, spare

    async def __aexit__(self, *exc_info: object) -> None:
        if self._spare is None:
            _release_lock(self._lock, self._fd)
        else:
            spares.put_back(self._folder, self._lock, self._spare)


def _record_holder(folder: str, lock: str, spare: spares.Spare) -> None:
    """Write the holder's record in the spare just linked at `lock` (over the last lease's), or release it."""
    try:
        record = _holder_record()
        os.pwrite(spare.fd, record, 0)
        if len(record) < spare.size:
            os.ftruncate(spare.fd, len(record))
        spare.size = len(record)
    except BaseException:
        spares.put_back(folder, lock, spare)
        raise


def _sweep(temporaries: list[os.DirEntry[str]]) -> None:
    """Remove the temporary files among `temporaries` (entries named like one, `_TEMPORARY`) that a dead save
    left: a save killed between writing its temporary file and renaming it over the record (SIGKILL, a power
    loss) never removes it, and nothing else did, so they piled up in the store for good.

    Which are dead is decided by age, not by a lock: a save takes none (a shared session's first save
    runs outside any lease) and the pid in the name may be another host's, or reused. A live save writes
    its temporary file in one go, fsyncs it and renames it at once, so its modification time is its last
    write's, moments before the rename; one untouched for `STALE_TEMPORARY_SECONDS` (an hour, well past any
    fsync and any clock skew between hosts sharing the directory) is no live save's. Should a save stalled
    that long still rename it, its save fails (`SessionStoreUnavailable`) and the record it would have
    replaced stays whole. Only regular files of that name are removed, never a link, a record or a lock;
    a removal that fails (a read-only store) is left for a later sweep. Done while listing a directory
    anyway (`list` and `resolve`), so it costs a stat per temporary file and nothing otherwise."""
    if not temporaries:
        return
    now = time.time()
    for entry in temporaries:
        with contextlib.suppress(OSError):
            status = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(status.st_mode) and now - status.st_mtime > STALE_TEMPORARY_SECONDS:
                os.unlink(entry.path)


class BlockingSessionStore(ABC):
    """A store whose I/O blocks (files, a database driver): each protocol call but `lease` runs its
    blocking twin in a worker thread, so no event loop waits on a disk or a socket."""

    @abstractmethod
    def _list(self, backend: str) -> list[SessionInfo]: ...

    @abstractmethod
    def _resolve(self, backend: str, ref: str) -> SessionInfo: ...

    @abstractmethod
    def _load(self, backend: str, session_id: str) -> StoredSession: ...

    @abstractmethod
    def _save(self, session: StoredSession) -> None: ...

    @abstractmethod
    def _delete(self, backend: str, session_id: str) -> None: ...

    async def list_sessions(self, backend: str) -> list[SessionInfo]:
        return await anyio.to_thread.run_sync(self._list, backend)

    async def resolve(self, backend: str, ref: str) -> SessionInfo:
        return await anyio.to_thread.run_sync(self._resolve, backend, ref)

    async def load(self, backend: str, session_id: str) -> StoredSession:
        return await anyio.to_thread.run_sync(self._load, backend, session_id)

    async def save(self, session: StoredSession) -> None:
        await anyio.to_thread.run_sync(self._save, session)

    async def delete(self, backend: str, session_id: str) -> None:
        await anyio.to_thread.run_sync(self._delete, backend, session_id)


def _open_record(path: Path) -> BinaryIO:
    """A stored record opened for reading, refused as corrupt unless it is a regular file.

    A listing only names regular files, but the entry can be swapped before it is read: a symbolic
    link there is not followed and a FIFO or device does not block the open or get read
    (`unified._files.open_regular`, which checks the open descriptor, so nothing can be swapped
    after it)."""
    try:
        return open_regular(path, follow_links=False)
    except NotRegularFile:
        raise corrupt_error(str(path), "it is not a regular file") from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise corrupt_error(str(path), "it is a symbolic link, which the store does not follow") from None


def _check_backend(named: str, backend: str, path: Path) -> None:
    """A record in `backend`'s folder whose header names another backend (edited by hand, or moved) is corrupt:
    listed under the backend it names, `show` looked for it in that backend's folder ("no interactions session
    matches ...", with none listed), and a resume saved a second copy there."""
    if named != backend:
        raise corrupt_error(str(path), f"it names backend {named!r}, not {backend!r}, whose folder it is in")


def _read_record(path: Path) -> bytes:
    """The whole record at `path`; CorruptSession, unread, when it is larger than `limits.MAX_SESSION_RECORD_BYTES`."""
    with _open_record(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limits.MAX_SESSION_RECORD_BYTES:
            raise corrupt_error(
                str(path),
                f"it is {size:,} bytes, more than a session record may be ({limits.MAX_SESSION_RECORD_BYTES:,}); "
                "it was not read",
            )
        return handle.read(size)  # not read(bound): a read of n bytes allocates n first; no more than checked


class FileSessionStore(BlockingSessionStore):
    """Sessions as files under `root` (default: `sessions_root()`), one directory per backend.

    Guarantees (docs/sessions.md): atomic replacement on save; a lease held by at most one
    open descriptor at a time, across processes, released by the kernel when its holder dies;
    a file it cannot read is reported, never rewritten, never deleted. Leases need a local
    filesystem (flock is advisory and not reliable over some network filesystems).
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = sessions_root() if root is None else _given_root(root)
        self._written: dict[Path, bytes | None] = {}
        """Per record leased through this store: the bytes this store last wrote there (None before
        its first write). A record that still holds them is readable by construction, so the next
        save compares bytes instead of parsing the whole record again (O(size) in C, where parsing
        made a session's saves O(turns²)); any other content is read and checked as before."""
        self._leased: dict[tuple[str, str], Path] = {}
        """The record path of each session leased through this store: its saves (one beside a run's
        first request) need not check the names and join the path again."""

    def path_of(self, backend: str, session_id: str) -> Path:
        """Where this store saves the session: `<root>/<backend>/<shard>/<id>.json` (a session of an
        older layout may still be at `<root>/<backend>/<id>.json`, until its next save)."""
        leased = self._leased.get((backend, session_id))
        if leased is not None:
            return leased
        name = _checked_name("session id", session_id)
        return self.root / _checked_name("backend", backend) / _shard_of(name) / f"{name}.json"

    # -- the protocol --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lease(self, backend: str, session_id: str) -> AsyncIterator[None]:
        """Taken on the event loop's thread: a few metadata syscalls on the local sessions directory
        (~0.2 ms) and a flock that never waits. In a worker thread it would wait for the GIL while the
        loop builds the run's first request (up to the 5 ms switch interval), in front of its first event.
        Released there too (an unlink and a close, which nothing can cancel halfway): the trip to a worker
        thread and back cost more CPU than the two calls (~0.2 ms of a warm codex run's ~9 ms of process CPU)."""
        held = self._hold(backend, session_id)
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancellation point, but no trip through the loop
        held.__enter__()
        try:
            yield
        finally:
            held.__exit__(None, None, None)

    # -- reading -------------------------------------------------------------------------------------

    def _read_header(self, path: Path) -> dict[str, Any]:
        """The header, reading the first line and the last two bytes (a cut file fails here).

        A record that begins as unified writes one but does not end so (no final newline: saved by an editor or a
        JSON tool that writes none) is read whole, as a record in another layout is: it was called truncated
        and left out of every listing and resume, whole as it was; a cut one fails to parse there, and is
        called truncated then."""
        where = str(path)
        bound = limits.MAX_SESSION_HEADER_BYTES
        with _open_record(path) as handle:
            first = handle.readline(bound + 1)
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(size - len(_END), 0))
            ended = handle.read() == _END
            if not ended and (size > bound or not first.startswith(_HEADER_PREFIX.encode())):
                if first.startswith(_HEADER_PREFIX.encode()):
                    raise corrupt_error(where, "it is truncated (it does not end as unified writes it)")
                raise corrupt_error(where, "it is no session record unified wrote (it neither begins nor ends as one)")
            try:
                line = first.decode("utf-8").rstrip()
            except UnicodeDecodeError as exc:
                raise corrupt_error(where, f"it is not UTF-8 ({exc})") from exc
            if ended and line.startswith(_HEADER_PREFIX) and line.endswith(","):
                with contextlib.suppress(ValueError, RecursionError):
                    header = readable_json(line, json.loads(line[len(_HEADER_PREFIX) : -1]), where)
                    return checked_header(header, where)
            if size > bound:  # no header line we can read, and too much to read whole for one
                raise corrupt_error(
                    where,
                    f"its header is not on a first line of at most {bound:,} bytes as unified writes it, and "
                    f"the file is {size:,} bytes, more than a listing reads to find it",
                )
            handle.seek(0)  # not in our one-line layout: read it all, from the file already open
            raw = handle.read()
        try:
            document = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError, UnicodeDecodeError) as exc:
            if not ended:
                raise corrupt_error(where, f"it is truncated (it does not end as unified writes it: {exc})") from exc
            raise corrupt_error(where, f"it is not valid JSON ({exc})") from exc
        if not isinstance(document, dict):
            raise corrupt_error(where, "it is not a JSON object")
        return checked_header(readable_json(raw.decode("utf-8"), document.get("header"), where), where)

    def _entry(self, backend: str, path: Path) -> SessionInfo | None:
        """The listing entry of one file, None if it vanished meanwhile."""
        try:
            info = info_of_header(self._read_header(path), str(path))
            if info.session_id != path.stem:
                raise corrupt_error(str(path), f"it names session {info.session_id!r}, not {path.stem!r}")
            _check_backend(info.backend, backend, path)
            return info
        except FileNotFoundError:
            return None
        except OSError as exc:
            return unreadable_info(
                backend, path.stem, str(path), corrupt_error(str(path), f"it cannot be read ({exc})")
            )
        except (CorruptSession, UnsupportedSessionFormat) as exc:
            return unreadable_info(backend, path.stem, str(path), exc)

    def _files(self, backend: str, prefix: str) -> list[tuple[Path, bool]]:
        """The record of each id of `backend` that starts with `prefix` (lower case; "" for all).

        Lists the backend's directory (its shards, and the flat files of an older layout) and the
        shards that can hold such ids: with two characters or more, one. Only regular files named
        `<id>.json` count, in the backend's directory and in shard directories (real directories
        named like a shard, holding that shard's ids only): a symbolic link, a lock or temp file, a
        directory or a name that is not an id is never read. A shard's file hides a flat file of
        the same id (the leftover of a move cut short). Each path comes with whether it is flat."""
        directory = self.root / _checked_name("backend", backend)
        wanted_shard = prefix[:_SHARD_LENGTH]
        shards: list[str] = []
        flat: dict[str, Path] = {}
        try:
            listing = os.scandir(directory)
        except FileNotFoundError:  # no session saved yet; a file in the way (NotADirectoryError) is no store
            return []
        temporaries: list[os.DirEntry[str]] = []
        with listing:
            for entry in listing:
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    if _SHARD_CHARS.fullmatch(name) and name.startswith(wanted_shard):
                        shards.append(name)
                elif (stem := _record_id(entry, prefix)) is not None:
                    flat[stem] = Path(entry.path)
                elif _TEMPORARY.fullmatch(name):
                    temporaries.append(entry)
        found: dict[str, Path] = {}
        for shard in shards:
            try:
                inside = os.scandir(directory / shard)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with inside:
                for entry in inside:
                    stem = _record_id(entry, prefix)
                    if stem is not None and _shard_of(stem) == shard:
                        found[stem] = Path(entry.path)
                    elif stem is None and _TEMPORARY.fullmatch(entry.name):
                        temporaries.append(entry)
        _sweep(temporaries)
        return [(path, False) for path in found.values()] + [
            (path, True) for stem, path in flat.items() if stem not in found
        ]

    def _collect(self, backend: str, prefix: str) -> list[SessionInfo]:
        infos: list[SessionInfo] = []
        with self._failing("be listed"):  # a file's own failure is its entry's problem (`_entry`)
            files = self._files(backend, prefix)
        for path, is_flat in files:
            info = self._entry(backend, path)
            if info is None and is_flat:  # a save moved it meanwhile
                info = self._entry(backend, path.parent / _shard_of(path.stem) / path.name)
            if info is not None:
                infos.append(info)
        return newest_first(infos)

    def _list(self, backend: str) -> list[SessionInfo]:
        return self._collect(backend, "")

    def _resolve(self, backend: str, ref: str) -> SessionInfo:
        """Reads only the files named after ids that start with `ref`, listing only the shard(s) that
        can hold them; the whole listing only to explain a miss."""
        key = ref.strip().lower()
        if _ID_CHARS.fullmatch(key):
            found = self._collect(backend, key)
            if found:
                return resolve_ref(ref, found, backend)
        return resolve_ref(ref, self._list(backend), backend)

    def _load(self, backend: str, session_id: str) -> StoredSession:
        """The shard's record, else the flat one (an older layout's), else the shard's again: a save
        may have moved it between the two looks."""
        with self._failing("be read"):
            path = _checked_shard(self.path_of(backend, session_id))
        for candidate in (path, _flat_of(path), path):
            try:
                with self._failing("be read"):
                    session = self._read_session(candidate)
            except FileNotFoundError:
                continue
            _check_backend(session.backend, backend, candidate)
            return session
        raise SessionNotFound(
            f"no {backend} session {session_id!r} in {path.parent.parent}",
            hint="run `unified sessions list` to see the sessions there are",
        )

    def _read_session(self, path: Path) -> StoredSession:
        """The session at `path` (opened as `_open_record` opens one: no link followed, no FIFO waited on)."""
        return self._parse_session(path, _read_record(path))

    def _parse_session(self, path: Path, raw: bytes) -> StoredSession:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise corrupt_error(str(path), f"it is not UTF-8 ({exc})") from exc
        session = parse_document(text, str(path))
        if session.session_id != path.stem:
            raise corrupt_error(str(path), f"it names session {session.session_id!r}, not {path.stem!r}")
        return session

    # -- writing -------------------------------------------------------------------------------------

    async def _save_visible(self, session: StoredSession) -> None:
        """`save` without the fsync, on the event loop's thread (~0.3 ms for a new session's record, for
        the lease's reason): every process sees the record at once; the next save makes it durable.
        Only for a new session (`save_announced`): nothing stored is read or replaced. Its id is a
        fresh uuid4 whose lease this store holds, so no record can be at its path: the look for one
        to check (an open that fails, ~0.1 ms in front of the first event) is skipped."""
        await anyio.lowlevel.checkpoint()
        self._save(session, sync=False, new=True)

    def _save(self, session: StoredSession, *, sync: bool = True, new: bool = False) -> None:
        with self._failing("be written", missing=True):
            self._write(session, sync=sync, new=new)

    def _write(self, session: StoredSession, *, sync: bool, new: bool) -> None:
        key = (session.backend, session.session_id)
        target = self.path_of(*key)
        if key not in self._leased:  # a lease checked its shard when it was taken
            _checked_shard(target)
        moving = False if new else self._check_replaceable(target)
        stamp_updated(session)
        data = serialize(session).encode("utf-8")
        write_atomically(target, data, mode=0o600, sync=sync, parents=True)
        if moving:
            _finish_move(target)
        if target in self._written:
            self._written[target] = data

    def _check_replaceable(self, target: Path) -> bool:
        """A record we cannot read is never replaced: this raises why. One that holds exactly what
        this store last wrote there (under its lease) needs no parse. True when the record is still
        in the flat layout only (read and checked just the same): this save moves it."""
        try:
            raw = _read_record(target)
        except FileNotFoundError:
            flat = _flat_of(target)
            try:
                raw = _read_record(flat)
            except FileNotFoundError:
                return False
            self._parse_session(flat, raw)
            return True
        if raw == self._written.get(target):
            return False
        self._parse_session(target, raw)
        return False

    def _delete(self, backend: str, session_id: str) -> None:
        """Removes the record at both paths (a session cut short in its move is at both)."""
        path = self.path_of(backend, session_id)
        with self._hold(backend, session_id):
            removed = False
            for candidate in (path, _flat_of(path)):
                with contextlib.suppress(FileNotFoundError), self._failing("be written"):
                    candidate.unlink()
                    removed = True
            if not removed:
                raise SessionNotFound(  # two deletes of one session: the second said what, not what to do
                    f"no {backend} session {session_id!r} in {path.parent.parent} (deleted already, or never saved)",
                    hint="nothing was deleted; run `unified sessions list` to see the sessions there are",
                ) from None

    def _failing(self, what: str, *, missing: bool = False) -> contextlib.AbstractContextManager[None]:
        """`_failing_at` this store's root."""
        return _failing_at(self.root, what, missing=missing)

    @contextlib.contextmanager
    def _hold(self, backend: str, session_id: str) -> Iterator[None]:
        """The lease, blocking-I/O side: flock the lock file, record who holds it, unlink it on release.

        The lock is `<shard>/<id>.lock`, beside where every save puts the record; while the session
        still has a flat (legacy) file, `<id>.lock` beside that one is taken too, after the first:
        it is the lock an older unified takes, so a run of either layout excludes the other's.
        Every run of this one takes the shard's lock first, so two of them exclude each other by it
        alone, whatever a move between the layouts does meanwhile.
        """
        # `missing`: a lock is made, never looked up, so a FileNotFoundError is a folder that cannot be made (a data
        # directory under /proc, a parent removed meanwhile); it was untyped, a run's `internal_error`.
        with self._failing("be written", missing=True):
            record = _checked_shard(self.path_of(backend, session_id))
            lock = record.with_suffix(".lock")
            held = [(lock, _take_lock(lock, session_id))]
        flat = _flat_of(record)
        try:
            if os.path.lexists(flat):
                legacy_lock = flat.with_suffix(".lock")
                with self._failing("be written", missing=True):
                    held.append((legacy_lock, _take_lock(legacy_lock, session_id)))
            self._written[record] = None
            self._leased[(backend, session_id)] = record
            try:
                yield
            finally:
                self._written.pop(record, None)
                self._leased.pop((backend, session_id), None)
        finally:
            for lock, fd in reversed(held):
                _release_lock(lock, fd)


# --- memory ---------------------------------------------------------------------------------------


class MemorySessionStore:
    """Sessions in this process's memory, for tests and short-lived orchestrators.

    Stores the same redacted documents the file store writes, and a loaded session never shares
    objects with the one saved. A document that cannot be read (only a test puts one there) is
    reported and never replaced, as by the other stores. Leases
    exclude other runs of this process only: the store is not shared with other processes, so
    there is nothing else to exclude.
    """

    def __init__(self) -> None:
        self._documents: dict[tuple[str, str], str] = {}
        self._held: set[tuple[str, str]] = set()
        self._guard = threading.Lock()

    @staticmethod
    def _where(backend: str, session_id: str) -> str:
        return f"memory:{backend}/{session_id}"

    def _entries(self, backend: str) -> list[SessionInfo]:
        with self._guard:
            documents = [(sid, text) for (owner, sid), text in self._documents.items() if owner == backend]
        return newest_first([self._entry(backend, sid, text) for sid, text in documents])

    def _entry(self, backend: str, session_id: str, text: str) -> SessionInfo:
        """The listing entry of one document; an unreadable one (put there by hand) is reported, not hidden."""
        where = self._where(backend, session_id)
        try:
            session = parse_document(text, where)
        except (CorruptSession, UnsupportedSessionFormat) as exc:
            return unreadable_info(backend, session_id, where, exc)
        return info_of_header({"backend": backend, "id": session.session_id, **described(session)}, where)

    async def list_sessions(self, backend: str) -> list[SessionInfo]:
        return self._entries(backend)

    async def resolve(self, backend: str, ref: str) -> SessionInfo:
        return resolve_ref(ref, self._entries(backend), backend)

    async def load(self, backend: str, session_id: str) -> StoredSession:
        with self._guard:
            text = self._documents.get((backend, session_id))
        if text is None:
            raise SessionNotFound(f"no {backend} session {session_id!r} in this process's memory store")
        return parse_document(text, self._where(backend, session_id))

    async def save(self, session: StoredSession) -> None:
        key = (session.backend, session.session_id)
        with self._guard:
            existing = self._documents.get(key)
            if existing is not None:  # a record we cannot read is never replaced: this raises why
                parse_document(existing, self._where(*key))
            stamp_updated(session)
            self._documents[key] = serialize(session)

    async def delete(self, backend: str, session_id: str) -> None:
        key = (backend, session_id)
        with self._guard:
            if key in self._held:
                raise in_use_error(session_id, f"pid {os.getpid()} on host {socket.gethostname()}")
            if self._documents.pop(key, None) is None:
                raise SessionNotFound(f"no {backend} session {session_id!r} in this process's memory store")

    @contextlib.asynccontextmanager
    async def lease(self, backend: str, session_id: str) -> AsyncIterator[None]:
        key = (backend, session_id)
        with self._guard:
            if key in self._held:
                raise in_use_error(session_id, f"pid {os.getpid()} on host {socket.gethostname()}")
            self._held.add(key)
        try:
            yield
        finally:
            with self._guard:
                self._held.discard(key)


publish("unified.sessions", ["FileSessionStore", "MemorySessionStore"], globals())


async def save_announced(store: SessionStore, session: StoredSession, *, new: bool) -> None:
    """A run's first save, the one `session_started` waits for: the id it announces must be resumable.

    For a `new` session the file store makes the record visible to every process (write and rename)
    without its fsync: the fsync (2-5 ms on a local disk) and a worker thread's wait for the GIL would
    stand between the model's first chunk and the consumer, and the run's next save (at the latest
    its last, when the run ends) is fsynced. What a power loss in that window can cost is that first
    record: the prompt of a run that had not answered yet. A resumed session replaces a durable record
    (read whole first, maybe large): that save stays the whole one, fsynced, in a worker thread, as
    every save of any other store.
    """
    if new and isinstance(store, FileSessionStore):
        await store._save_visible(session)
    else:
        await store.save(session)
