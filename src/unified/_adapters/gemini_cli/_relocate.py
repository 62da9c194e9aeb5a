"""Resuming a gemini-cli session from another directory: its chat files move to that directory's project.

The Gemini CLI 0.61 looks a session up only among the chat files of the project its `session/load`
`cwd` (or, headless, its process's cwd) names: `SessionSelector.findSession` lists
`<home>/tmp/<slug of cwd>/chats/session-*.jsonl` and compares each header's `sessionId`. Nothing else
ties a session to its project: the header's `projectHash` is not checked on load (a resumed recording
keeps writing the value it read), and the files hold no path of the project. So a session continues
from any directory once its files are in that directory's project; Claude Code and Codex resume from
any directory too, and `unified` promises a short id resumes "from any directory or worker".

Why a move and not a copy: a copy leaves two sessions with one id, and the one left behind goes
stale the moment the run continues the other; resumed from its old directory it would silently
continue the old state, and `sessions list` would have to pick one. Moved, the session lives in one
project at a time: the last directory it was resumed from (resuming from the old one moves it back,
with the newest state). The caller chose the new directory (by default, where they run), which is
also the workspace the tools see from then on; the run says so in a `session_moved` warning.

How (`gather`), never losing a file and never leaving half of one:
- every file moves by `os.link` to its new name, then `os.unlink` of the old one: the content is never
  copied or rewritten, each name is whole at every instant, and an existing file is never replaced
  (a rename would overwrite a name taken in between). A crash between the two leaves one file under
  two names, both the whole session: the next resume (from either directory) removes the name outside
  its own project once it has checked they are the same file (inode), and `sessions list` shows one
  session (one entry: one file) meanwhile;
- the subagent chats (`chats/<session id>/*.jsonl`) move first, the main chat file(s) last: until the
  main file has moved, the session is still the old project's and resumes there as before;
- a main file's name taken in the new project (a session with the same first 8 characters, started in
  the same minute) is given an earlier free minute, as `ResumeGuard` does; a subagent file whose name
  is taken by another file stays where it was (nothing is overwritten) and the warning says so.

Not moved: the CLI's per-session artifacts beside the chats (`tmp/<slug>/tool-outputs/session-<id>/`,
`logs/`, `tmp/<slug>/<id>/`): the conversation names them by absolute path (a truncated tool output
is kept in such a file and the model told where), so they stay readable where they are.

Hostile input: the session id (from the file's header) must be what the CLI accepts
(`[A-Za-z0-9_-]+`), or nothing happens (`CorruptSession`); the project directories, `chats/` and the
files moved are checked with `lstat` (a symbolic link is refused, never followed) and the target must
lie under `<home>/tmp`; headers are read with `O_NOFOLLOW`. A session held by a running run is not
moved: every run, resumed or new, over ACP or stream-json, holds the session's local lease
(`session_lease`) from before its `session_started` to its end.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from unified._adapters.gemini_cli._chat_files import BACKEND, header_of, real_directory
from unified._adapters.gemini_cli._conversation import project_slug
from unified._binary.shared import session_lease as shared_session_lease
from unified._files import open_regular
from unified.errors import CorruptSession, SessionError
from unified.sessions import SessionInfo, short_id_of

__all__ = ["Moved", "gather", "session_lease"]

SESSION_ID = re.compile(r"[A-Za-z0-9_-]+")
"""A session id the CLI accepts (`--session-id`); only such an id names files here."""
_SUBAGENT_SUFFIXES = (".jsonl", ".json")


def session_lease(home: Path, session_id: str) -> AbstractAsyncContextManager[None]:
    """The local lease a gemini-cli run holds on its session (`unified._binary.shared.session_lease`)."""
    return shared_session_lease(BACKEND, home, session_id)


@dataclass(slots=True)
class Moved:
    """What `gather` did: the session's files went from `source` (the project at `from_project`) to `target`."""

    session_id: str
    from_project: str | None
    source: Path
    target: Path
    files: list[Path] = field(default_factory=list)
    """The new paths of the moved files."""
    left: list[str] = field(default_factory=list)
    """Files that stayed where they were (their name was taken by another file), for the warning."""
    main: bool = True
    """The session itself moved (its main chat file); False: only the leftovers of an interrupted move were
    brought in (subagent chats still in another project)."""

    def message(self, cwd: Path) -> str:
        short = short_id_of(self.session_id)
        if not self.main:
            return (
                f"brought {len(self.files)} subagent chat file(s) of gemini-cli session {short} into {self.target}, "
                "its project's chats: an interrupted move had left them in another project"
            )
        was = self.from_project or f"the project whose chats are in {self.source}"
        text = (
            f"gemini-cli session {short} was filed under the project at {was}; it continues in {cwd}, this run's "
            f"cwd and workspace: its {len(self.files)} chat file(s) moved from {self.source} to {self.target} "
            f"(resumed from {was} again, it moves back)"
        )
        if self.left:
            text += "; left where they were (the name is taken): " + ", ".join(self.left)
        return text


def check_session_id(session_id: str, path: Path | str | None) -> None:
    """Refuse a session id that could not name a file (a header that lies: `/`, `..`, ...)."""
    if not SESSION_ID.fullmatch(session_id):
        raise CorruptSession(
            f"{path or 'a chat file'} names the session {session_id!r}, which is no Gemini CLI session id",
            hint="the file was left unchanged; the Gemini CLI cannot resume it either",
        )


def _inode(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the regular file at `path` itself (a link is not followed); None for anything else."""
    try:
        status = path.lstat()
    except OSError:
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def _header_names(path: Path, session_id: str) -> bool:
    """Whether the regular file at `path` (not a link) has a header naming `session_id`."""
    try:
        with open_regular(path, follow_links=False) as handle:
            header = header_of(handle)
    except OSError:
        return False
    return header is not None and header.get("sessionId") == session_id


def _main_files(chats: Path, session_id: str, *, strict: bool) -> list[Path]:
    """The session's main chat files in `chats`. `strict`: one that is a link is refused (the move needs
    every file), else links and other non-files are skipped."""
    found = []
    for path in sorted(chats.glob(f"session-*-{short_id_of(session_id)}.jsonl")):
        if path.is_symlink():
            if strict:
                raise CorruptSession(
                    f"{path} is a symbolic link: unified does not move a session through a link",
                    hint="it was left unchanged; resume it from its own project, or replace the link by the file",
                )
            continue
        if _inode(path) is not None and _header_names(path, session_id):
            found.append(path)
    return found


def _subagent_files(chats: Path, session_id: str, *, strict: bool) -> list[Path]:
    """The session's subagent chat files (`chats/<session id>/*.jsonl`): regular files only. `strict`: a link
    (the directory or a file in it) is refused; else such a directory is skipped."""
    directory = chats / session_id
    if not os.path.lexists(directory):
        return []
    if directory.is_symlink() or not directory.is_dir():
        if strict:
            raise CorruptSession(
                f"{directory} is not a directory (a symbolic link?): unified does not move a session through it",
                hint="it was left unchanged; resume the session from its own project",
            )
        return []
    found = []
    for path in sorted(directory.iterdir()):
        if not path.name.endswith(_SUBAGENT_SUFFIXES):
            continue
        if path.is_symlink() and strict:
            raise CorruptSession(
                f"{path} is a symbolic link: unified does not move a session through a link",
                hint="it was left unchanged; resume the session from its own project",
            )
        if _inode(path) is not None:
            found.append(path)
    return found


def _relink(source: Path, target: Path) -> bool:
    """Move `source` to `target` without replacing anything: link, then unlink. Already the same file at both
    names (an interrupted move): only the old name goes. False (nothing done) when `target` is another file."""
    try:
        os.link(source, target, follow_symlinks=False)
    except FileExistsError:
        if _inode(target) is None or _inode(target) != _inode(source):
            return False
    os.unlink(source)
    return True


def _free_name(chats: Path, name: str) -> Path:
    """`chats/name`, or the same session's name for the latest earlier minute that is free."""
    target = chats / name
    if not os.path.lexists(target):
        return target
    try:
        minute = datetime.strptime(name[len("session-") : len("session-") + 16], "%Y-%m-%dT%H-%M")
    except ValueError:
        minute = datetime(2000, 1, 1)
    suffix = name.rsplit("-", 1)[1]
    while os.path.lexists(target):
        minute -= timedelta(minutes=1)
        target = chats / f"session-{minute:%Y-%m-%dT%H-%M}-{suffix}"
    return target


def _other_chats(home: Path, target: Path) -> Iterator[Path]:
    """Every project's real `chats/` directory in this home but `target` (links skipped, never followed)."""
    tmp = home / "tmp"
    if tmp.is_symlink() or not tmp.is_dir():
        return
    for project in sorted(tmp.iterdir()):
        chats = project / "chats"
        if project.is_symlink() or chats.is_symlink() or not chats.is_dir() or chats == target:
            continue
        yield chats


def _bring_subagents(
    chats: Path, target: Path, session_id: str, moved: list[Path], left: list[str], *, strict: bool
) -> None:
    """Move the session's subagent chats from `chats` into `target` (`moved`: their new paths; `left`: kept)."""
    files = _subagent_files(chats, session_id, strict=strict)
    if not files:
        return
    into = target / session_id
    into.mkdir(exist_ok=True)
    real_directory(into)
    for path in files:
        if _relink(path, into / path.name):
            moved.append(into / path.name)
        else:
            left.append(str(path))
    with contextlib.suppress(OSError):
        (chats / session_id).rmdir()  # only when it is empty: anything else in it stays


def gather(home: Path, info: SessionInfo, cwd: Path, *, in_project: bool) -> Moved | None:
    """Put the session's chat files in the project of `cwd` (blocking); what moved, or None.

    `info` is the session as `ChatFiles.locate` found it, `in_project` whether in the project of `cwd`
    already. Then only the leftovers of an interrupted move are tidied (an old name of a file already
    here; subagent chats still in another project). Otherwise the main file(s) in `info`'s project and
    the subagent chats (from any project) move into the project `cwd` names (`project_slug`, claimed as
    the CLI claims it), checked as the module docstring says before anything changes.
    """
    session_id = info.session_id
    source = Path(str(info.path)).parent
    check_session_id(session_id, info.path)
    for directory in (home / "tmp", source.parent, source):
        real_directory(directory)
    if in_project:
        target = source
        mains: list[Path] = []
    else:
        mains = _main_files(source, session_id, strict=True)
        if not mains:
            raise CorruptSession(
                f"{info.path} is not a regular chat file of session {session_id}",
                hint="it was left unchanged; the Gemini CLI cannot resume it either",
            )
        _subagent_files(source, session_id, strict=True)  # refused here, before anything changes
        slug = project_slug(home, cwd)
        target = home / "tmp" / slug / "chats"
        if target == source:  # the CLI files `cwd` where the session already is: nothing to move
            return None
        target.mkdir(exist_ok=True)
        real_directory(target)
        if not target.resolve().is_relative_to((home / "tmp").resolve()):
            raise CorruptSession(
                f"the chats directory of {cwd} ({target}) is not under {home / 'tmp'}",
                hint="check the Gemini CLI's projects.json and tmp/ directory",
            )
    moved: list[Path] = []
    left: list[str] = []
    try:
        _move(home, session_id, source, target, mains, moved, left)
    except OSError as exc:  # each file is whole under its old name, its new one, or both: resumable as it is
        raise SessionError(
            f"could not move gemini-cli session {short_id_of(session_id)} from {source} to {target} "
            f"({exc.strerror or exc}); nothing was lost: each of its files is whole, under its old name or its new",
            hint=f"free the disk or fix the permissions of {target}, then resume it again (from either directory)",
            details={
                "session_id": session_id,
                "from": str(source),
                "to": str(target),
                "moved": [str(p) for p in moved],
            },
        ) from exc
    if not moved:
        return None
    return Moved(session_id, info.cwd, source, target, moved, left, main=bool(mains))


def _move(
    home: Path, session_id: str, source: Path, target: Path, mains: list[Path], moved: list[Path], left: list[str]
) -> None:
    """`gather`'s changes, in their safe order: leftovers tidied, subagent chats, then the main file(s)."""
    here = {inode for path in _main_files(target, session_id, strict=False) if (inode := _inode(path))}
    for chats in _other_chats(home, target):
        for path in _main_files(chats, session_id, strict=False):
            if _inode(path) in here:  # a name an interrupted move left behind: the same file is here
                os.unlink(path)
        _bring_subagents(chats, target, session_id, moved, left, strict=chats == source)
    for path in mains:
        if not os.path.lexists(path):
            continue  # it was an old name of a file already here, just removed
        new = _free_name(target, path.name)
        if _relink(path, new):
            moved.append(new)
        else:
            left.append(str(path))
