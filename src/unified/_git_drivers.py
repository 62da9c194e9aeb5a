"""The commands a repository's own config names for git to run at a read, and the settings that stop them.

A repository unpacked with its `.git` (a hostile one: no model wrote it, so no protected path was asked) may name
commands in `.git/config` that git runs at commands a policy allows as reads:

- `diff.external = <command>`: `git diff` runs it for every changed file;
- `diff.<driver>.textconv` and `diff.<driver>.command`, with a `.gitattributes` line `* diff=<driver>`: `git diff`,
  `git log -p`, `git show` run them;
- `filter.<driver>.clean`, `.smudge`, `.process`, with `* filter=<driver>`: `git diff`, `git add`, `git checkout`,
  `git status` (a file whose time changed but not its size) run them;
- `gpg.program` (and `gpg.<format>.program`), a program of the repository's own files: `git log` and `git show` run
  it for a commit carrying a signature (any bytes: no key needed) when `log.showSignature` is on (the repository's
  config may turn it on), as `--show-signature` and `--format=%G?` always do;
- `tar.<format>.command`: `git archive --format=<format>` (the repository may name `tgz` or `tar.gz`, git's own)
  pipes the archive through it;
- `pager.<command> = <command>`: git writing to a terminal (Codex's `exec_command` with `tty`) runs it for that
  command, `core.pager` and its command-line setting notwithstanding (only `GIT_PAGER`, which unified's shell sets,
  outranks it);
- `remote.<name>.uploadpack` (a local or `file://` remote's), `core.sshCommand` (an `ssh://` one's), `core.gitProxy`
  (a `git://` one's), `ext::` URLs with `protocol.ext.allow` (or `protocol.allow = always`), `core.askPass` and
  `credential.helper = !<command>`: `git ls-remote` and `git remote show origin` (reads to Claude Code, unasked)
  run them. They get `protocol.file.allow=never` (git takes the first `uploadpack` given, the repository's: no local
  remote then), `ssh`, `protocol.git.allow=never` (its proxy likewise), `protocol.ext.allow=never`, no askpass
  program and no credential helper (an empty one empties the list, the user's own too);
- a `post-index-change` hook (in the repository's hooks folder, or one its `core.hooksPath` names): `git status` and
  `git describe --dirty` write the index they refresh, and git runs it then. No setting turns one hook off, so such
  a repository gets `core.hooksPath=/dev/null`: none of its hooks runs (a commit's neither; a repository whose
  hooks run at commits and pushes only keeps them).

Such commands run unasked in yolo mode, under a user's rule allowing `git diff` or `git log` (unified's shell), or
as a user's answer to what looks like a read. No fixed setting stops them without changing every repository's git
(an empty `diff.external` fails every diff), and a driver's keys carry a name the repository chose, so `overrides`
reads the config of the repository enclosing a directory (and the files it includes, bounded) for the names of its
`diff`, `filter`, `gpg`, `tar` and `pager` sections, and overrides what it names: `textconv` with `cat` (a diff
shows the file as it is), `command` and `diff.external` with nothing (git refuses to diff: `cannot run`; a
repository that names one is hostile or odd, and failing beats running it), `clean`, `smudge` and `process` with
nothing (git copies the file as it is), the signature programs with git's defaults (`gpg`, `gpgsm`, `ssh-keygen`),
an archive format's command with git's `gzip -cn`, and a command's pager with `false` (none). Command-line configuration
(`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_KEY_<n>`) outranks the repository's, and it is read again for every command
of unified's shell, so a driver added later (in an included file the model may write) is seen too. Codex's child
gets those read at the run's start (`_binary.environment.child_env`'s `cwd`): a driver added later in a file the
repository's config includes is not seen there.

A command reaches other repositories below its directory too: a nested one (`cd sub && git diff`, `git -C sub
diff`, a `.git` file whose `gitdir:` leads elsewhere) or a directory of a bare repository's shape (`git
--git-dir=x --work-tree=. diff`): each ran its own drivers, since only the enclosing repository's config was read.
So the directories below are walked too (`NESTED_ENTRIES_MAX` entries, links not followed) for a `.git` or a
directory holding both `HEAD` and `config`, and their drivers overridden as well (settings for a driver no
repository uses change nothing). One further down, or outside the directory, is not read.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
import subprocess
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from unified._environ import absolute_search_path
from unified._files import open_regular

__all__ = ["CONFIG_MAX_BYTES", "INCLUDES_MAX", "NESTED_ENTRIES_MAX", "NESTED_MAX", "overrides", "parameters"]

CONFIG_MAX_BYTES = 1 << 20
"""Of each config file, the first MiB is read (git reads the whole file: a driver defined past it is missed)."""
INCLUDES_MAX = 32
"""Config files read per repository, its own and those it includes (`include.path`, `includeIf.*.path`); past it,
git itself lists them (`_listed_by_git`)."""
PARENTS_MAX = 2048
"""Directories walked up from the command's to find the repository enclosing it: as many as a path of PATH_MAX (4,096)
bytes has, so every one git would find (git looks up to the root). At 64 (round 33), a command run 65 levels below
its repository's top found none, and the drivers of that repository ran."""
NESTED_ENTRIES_MAX = 8192
"""Entries of the directories below the command's looked at for a repository of their own (breadth first): up to
30 ms on a busy machine (2 ms for a small workspace), paid by every command of unified's shell and every binary's
start."""
NESTED_MAX = 64
"""Repositories below the command's whose config is read."""

_HEADER = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]')
_PATH = re.compile(r"^[ \t]*path[ \t]*=", re.IGNORECASE | re.MULTILINE)
_HOOKS_PATH = re.compile(r"^[ \t]*hookspath[ \t]*=", re.IGNORECASE | re.MULTILINE)
"""Where a `path` (an include's) or `hooksPath` key's value begins: read from there as git reads it (`_value`)."""
_KEY = re.compile(r"^[ \t]*([A-Za-z][A-Za-z0-9-]*)", re.MULTILINE)
"""A key at a line's start (or right after its section's header, on the header's line)."""
_EXTERNAL = re.compile(r"external", re.IGNORECASE)
_CORE_REMOTE = {
    "sshcommand": ("core.sshCommand", "ssh"),
    "askpass": ("core.askPass", ""),  # none: git asks no one (unified's shell: GIT_TERMINAL_PROMPT=0)
    "gitproxy": ("protocol.git.allow", "never"),  # the repository's proxy comes before ours: no git:// at all
}
"""`core` keys that name a command git runs to reach a remote, and the settings that stop it."""
_COMMAND = re.compile(r"command", re.IGNORECASE)
_GPG_DEFAULTS = {
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
}


def overrides(directory: Path) -> list[tuple[str, str]]:
    """The settings that stop the commands the config of the repository enclosing `directory` names for a diff or
    a filter (none outside a repository)."""
    enclosing = _repository_config(directory)
    found: dict[str, str] = {}
    for top, config in [*([enclosing] if enclosing is not None else []), *_nested(directory)]:
        _read_drivers(top, config, found)
    return list(found.items())


def _read_drivers(top: Path, config: list[Path], found: dict[str, str]) -> None:
    """Into `found`, the settings that stop the drivers one repository's `config` files (and their includes) name,
    and its hooks when one runs at a read (`post-index-change`, in its hooks directory or `core.hooksPath`, relative
    to `top`, its work tree's top)."""
    hooks = [config[0].parent / "hooks"]
    for text in _texts(config):
        hooks += [top / os.path.expanduser(_value(text, match.end())) for match in _HOOKS_PATH.finditer(text)]
        headers = list(_HEADER.finditer(text))
        for at, header in enumerate(headers):
            section, sub = header.group(1).lower(), header.group(2)
            if sub is None and "." in section:  # the old form `[diff.name]`, its name lowercased
                section, _, sub = section.partition(".")
            elif sub is not None:
                sub = re.sub(r"\\(.)", r"\1", sub)
            if section == "diff" and sub is None and _EXTERNAL.search(text):
                found["diff.external"] = ""
            elif section == "diff" and sub is not None:
                found[f"diff.{sub}.textconv"] = "cat"
                if _COMMAND.search(text):  # not otherwise: an empty command is one git fails to run
                    found[f"diff.{sub}.command"] = ""
            elif section == "gpg":  # `gpg.program`, `gpg.<format>.program`: the defaults, which the user's own
                found.update(_GPG_DEFAULTS)  # value gave way to the repository's anyway
            elif section == "filter" and sub is not None:
                for key in ("clean", "smudge", "process"):
                    found[f"filter.{sub}.{key}"] = ""
            elif section == "tar" and sub is not None:
                found[f"tar.{sub}.command"] = "gzip -cn"  # git's own for tgz and tar.gz
            body = text[header.end() : headers[at + 1].start() if at + 1 < len(headers) else len(text)]
            keys = dict.fromkeys(key.lower() for key in _KEY.findall(body))  # in order: the settings' order
            if section == "pager" and sub is None:
                found.update((f"pager.{key}", "false") for key in keys)
            elif section == "remote" and keys.keys() & {"uploadpack", "receivepack"}:  # the first one given wins: git's
                found["protocol.file.allow"] = "never"  # `file://` and local paths then refuse to run any
            elif section == "core":
                found.update(setting for key, setting in _CORE_REMOTE.items() if key in keys)
            elif section == "protocol":  # `protocol.allow = always` allows `ext::` too
                found["protocol.ext.allow"] = "never"
            elif section == "credential":  # an empty helper empties the list (the user's own helpers too)
                found["credential.helper"] = ""
    if any(os.path.lexists(place / "post-index-change") for place in hooks):
        found["core.hooksPath"] = "/dev/null"  # every hook: no setting stops one alone


def parameters(pairs: list[tuple[str, str]]) -> str:
    """`pairs` in the form of `GIT_CONFIG_PARAMETERS` (each quoted as git's `sq_dequote` reads it)."""
    return " ".join(f"{_quoted(key)}={_quoted(value)}" for key, value in pairs)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _repository_config(directory: Path) -> tuple[Path, list[Path]] | None:
    """The top of the repository enclosing `directory` and its config files (a `.git` directory's, or a `.git`
    file's `gitdir:`): its `config` and `config.worktree` (read when `extensions.worktreeConfig` is on), a
    worktree's own too; the common directory's `config` first."""
    here = os.path.abspath(directory)
    for _ in range(PARENTS_MAX):
        try:  # one `stat` a level, on strings: paths made and stat'ed twice a level cost ~50 us a run's start
            mode = os.stat(os.path.join(here, ".git")).st_mode
        except (OSError, ValueError):
            mode = 0
        if stat.S_ISDIR(mode):
            dot_git = Path(here, ".git")
            return dot_git.parent, [dot_git / "config", dot_git / "config.worktree"]
        if stat.S_ISREG(mode):
            place = Path(here)
            dot_git = place / ".git"
            try:
                line = _head(dot_git, 4096).strip()
            except OSError:
                return None
            if not line.startswith("gitdir:") or "\0" in line:  # a NUL: no name git can follow (it raised here)
                return None
            gitdir = (place / line.removeprefix("gitdir:").strip()).resolve()
            try:  # a worktree's: the main repository's config holds the rest
                common = (gitdir / _head(gitdir / "commondir", 4096).strip()).resolve()
            except (OSError, ValueError):
                common = gitdir
            return place, list(
                dict.fromkeys([common / "config", common / "config.worktree", gitdir / "config.worktree"])
            )
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


def _nested(directory: Path) -> Iterator[tuple[Path, list[Path]]]:
    """The top and config files of each repository below `directory` (not the one enclosing it): a `.git` directory
    or file (`_repository_config`), or a directory holding `HEAD` and `config` (a bare one, used with `--git-dir`).
    Breadth first, links not followed, at most `NESTED_ENTRIES_MAX` entries and `NESTED_MAX` repositories."""
    top = os.path.abspath(directory)
    queue, seen, repositories = deque([top]), 0, 0  # strings: a `Path` only for a repository found (a run's start)
    while queue and seen < NESTED_ENTRIES_MAX and repositories < NESTED_MAX:
        place = queue.popleft()
        try:
            with os.scandir(place) as entries:
                listed = list(itertools.islice(entries, NESTED_ENTRIES_MAX - seen))
        except OSError:
            continue
        seen += len(listed) + 1
        names = {entry.name for entry in listed}
        if place != top and ".git" in names:
            config = _repository_config(Path(place))
            if config is not None:
                repositories += 1
                yield config
        if {"HEAD", "config"} <= names:
            repositories += 1
            yield Path(place), [Path(place, "config")]
        for entry in listed:
            try:
                if entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                    queue.append(entry.path)
            except OSError:
                continue


def _texts(configs: list[Path]) -> Iterator[str]:
    """The text of each of `configs` and of each file they include (every `path = ` line is followed, whatever its
    section: reading one too many is harmless), breadth first, at most `INCLUDES_MAX` files; with more, the listing
    git gives of them all (`_listed_by_git`)."""
    queue, seen = list(configs), set[Path]()
    while queue and len(seen) < INCLUDES_MAX:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            text = _head(path, CONFIG_MAX_BYTES)
        except (OSError, ValueError):  # missing, unreadable, no regular file (a FIFO would block the read for ever),
            # or a name git cannot have either (a NUL in it: `path = a\0b` raised, and every command failed to start)
            continue
        yield text
        for match in _PATH.finditer(text):
            value = _value(text, match.end())
            if value:
                queue.append(path.parent / os.path.expanduser(value))
    if any(path not in seen for path in queue):  # more than the bound: git reads them all (fail closed, round 33)
        yield _listed_by_git(configs[0].parent)


def _listed_by_git(git_dir: Path) -> str:
    """The settings of the repository at `git_dir` (its config and every file it includes) as git itself lists them,
    written as config text: read when a config includes more than `INCLUDES_MAX` files (round 33: 40 includes of files
    that do not exist, before the one naming a driver, hid it). Nothing when git cannot say (none on PATH, no answer
    in 5 s: a command's git could not read them either)."""
    argv = ["git", f"--git-dir={git_dir}", "config", "--local", "--includes", "--null", "--list"]
    # Absolute entries only: a relative one (`.`, `bin`) would find the repository's own `git` first
    env = {"PATH": absolute_search_path(os.environ.get("PATH", os.defpath)), "GIT_CONFIG_NOSYSTEM": "1"}
    try:
        listed = subprocess.run(argv, capture_output=True, timeout=5, env=env, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = []
    for entry in listed.decode(errors="replace").split("\0"):
        key, _, value = entry.partition("\n")
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        if name:
            lines.append(f'[{section} "{_escaped(sub)}"]' if sub else f"[{section}]")
            lines.append(f'\t{name} = "{_escaped(value)}"')
    return "\n".join(lines)


def _escaped(text: str) -> str:
    """`text` quoted as a config value or subsection name is (`_value` reads it back)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(text: str, at: int) -> str:
    """The value that begins at `text[at]`, as git's `parse_value` reads it: spaces around it dropped, a quote opening
    or closing anywhere in it, `\\` escapes, a `\\` at a line's end going on to the next line, a comment (`;`, `#`)
    outside quotes ending it. Round 33: `path = ev"il".cfg` and `path = ev\\` + `il.cfg` on the next line were read as
    names no file has, so a driver in the file git includes was not stopped."""
    out: list[str] = []
    spaces = 0
    quoted = comment = False
    i, n = at, len(text)
    while i < n:
        char = text[i]
        i += 1
        if char == "\r" and text.startswith("\n", i):  # git reads `\r\n` as `\n`
            continue
        if char == "\n":
            break
        if comment:
            continue
        if not quoted and char in ";#":
            comment = True
            continue
        if not quoted and char in " \t":
            spaces += 1 if out else 0
            continue
        out.append(" " * spaces)
        spaces = 0
        if char == "\\" and i < n:
            escaped = text[i]
            i += 1
            if escaped == "\r" and text.startswith("\n", i):
                i += 1
                continue
            if escaped != "\n":  # a line continued; any other escape git refuses (`bad config`): taken as it is
                out.append(_ESCAPES.get(escaped, escaped))
        elif char == '"':
            quoted = not quoted
        else:
            out.append(char)
    return "".join(out)


def _head(path: Path, size: int) -> str:
    """The first `size` bytes of the regular file at `path`, as text (`open_regular`: a FIFO, a device or a directory
    the repository put there is refused, never waited on: an include of a FIFO hung every command's start)."""
    with open_regular(path) as file:
        return file.read(size).decode(errors="replace")
