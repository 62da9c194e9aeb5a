"""Protected paths and credential files, from the data in `protected_paths.toml` (read once).

Protected paths are files whose content changes what runs later (VCS configuration and hooks, the
agents' own settings, `.env` files the CLIs load, shell start-up files, ...): a write to one is
always put to the user in every mode but yolo (docs/tools.md, "Protected paths"). This module
says whether a path, a file tool's call or a shell command's parts touch one; the runtime and the
gemini-cli permission bridge decide what to do about it.

Credential files (the file `GOOGLE_APPLICATION_CREDENTIALS` names, gcloud's application default
credentials, the CLIs' OAuth files, ...) are never opened by a file tool: `_safe_io` refuses them by
device and inode, so a link or a hard link to one is refused too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import glob
import itertools
import os
import posixpath
import re
import stat
import time
import tomllib
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified._redaction import clip
from unified.tools._regex import PatternError, compile_pattern, matchable
from unified.tools._shell_syntax import SimpleCommand

__all__ = [
    "CREDENTIAL_CHECK_TTL_S",
    "GIT_INCLUDES_MAX_FILES",
    "GIT_INCLUDES_TTL_S",
    "GLOB_MAGIC",
    "PROTECTED_LINK_SCAN_MAX_ENTRIES",
    "LinkSearch",
    "ProtectedPaths",
    "credential_aliases",
    "credential_files",
    "credential_home",
    "credential_ids",
    "credential_reach",
    "credential_read",
    "credential_refusal",
    "deep_protected_targets",
    "folded_name",
    "git_configured",
    "git_directory",
    "git_included",
    "git_words_verb",
    "glob_links_out",
    "hard_linked",
    "linked_from_protected",
    "other_names",
    "program_directory",
    "protected_links",
    "protected_path",
    "protected_path_patterns",
    "protected_paths",
    "relative_to_roots",
    "shell_protected",
]

_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool"}
)
_GIT_CONFIG_READ_VERBS = frozenset({"get", "list", "get-color", "get-colorbool"})
_GIT_CONFIG_WRITES = frozenset(
    {"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"}
    | {"set", "unset", "rename-section", "remove-section", "edit"}
)
_GIT_WRITING_VERBS = {
    "remote": frozenset({"add", "rename", "remove", "rm", "set-url", "set-head", "set-branches"}),
    "submodule": frozenset({"add", "init", "sync", "set-url", "set-branch", "deinit", "update", "absorbgitdirs"}),
}
_GIT_WRITING_OPTIONS = ("--template", "-c", "--config")
"""`git init --template DIR` installs DIR's hooks; `git clone -c k=v` writes the new repository's config."""


_NO_VALUE, _VALUE, _ATTACHED = 0, 1, 2
"""What an option takes (`_getopt`): nothing, a value (attached or the next word), or a value only
when attached (`sed -i.bak`, `--in-place=.bak`)."""


@dataclass(frozen=True)
class _Arg:
    """One element of an argument list as getopt reads it (`_getopt`)."""

    word: str
    """An option as written, `--name` (before any `=`; an abbreviation is the caller's to resolve)
    or one letter of a cluster, `-x` (`x` alone in a first word without a dash, `tar xf`); or an operand."""
    value: str | None = None
    """The option's value ("" when one is due and none is left); None when it takes none."""
    operand: bool = False


def _getopt(args: Sequence[str], takes: Callable[[str], int], *, bundled_first: bool = False) -> Iterator[_Arg]:
    """The options and operands of `args`, in order, as getopt reads them. Every reader of a
    command's arguments here walks them this one way: a word one reader took for an operand and
    another for an option's value (`-t.git/hooks`, `--file a`) would let an attacker show each the
    reading that passes it.

    `--` ends the options (every word after it is an operand; `-` alone is one too); `--name=value`
    and `--name value` are long options; `-abc` is a cluster of letters, and the first letter that
    takes a value takes the rest of the cluster, or the next word when nothing is left (`-cvzf a.tar`,
    `-fa.tar`, `-t.git/hooks`). `takes(option)` says what an option takes (`_VALUE`, `_ATTACHED`,
    `_NO_VALUE`); a `--name=value` carries its value whatever it says. With `bundled_first`, a
    first word without a dash is a cluster whose letters take their values from the words after
    it in turn (`tar cfC a.tar dir`).
    """
    index = 0
    if bundled_first and args and not args[0].startswith("-"):
        index = 1
        for letter in args[0]:
            value = None
            if takes(letter) == _VALUE:
                value = args[index] if index < len(args) else ""
                index += 1
            yield _Arg(letter, value)
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            yield from (_Arg(rest, operand=True) for rest in args[index:])
            return
        if word.startswith("--"):
            key, eq, value = word.partition("=")
            need = takes(key)
            if not eq and need == _VALUE:
                value = args[index] if index < len(args) else ""
                index += 1
            yield _Arg(key, value if eq or need != _NO_VALUE else None)
            continue
        if word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], 1):
                need = takes(f"-{letter}")
                if need == _NO_VALUE:
                    yield _Arg(f"-{letter}")
                    continue
                value = word[position + 1 :]
                if not value and need == _VALUE:
                    value = args[index] if index < len(args) else ""
                    index += 1
                yield _Arg(f"-{letter}", value)
                break
            continue
        yield _Arg(word, operand=True)


@dataclass(frozen=True)
class InputWriter:
    """One `[[input_writer]]` entry: a command that writes the paths its input names, and the forms
    of it that write only what its arguments name (protected_paths.toml says how each is read)."""

    why: str
    modes: frozenset[str] = frozenset()
    options: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    long_options: tuple[str, ...] = ()
    long_valued: frozenset[str] = frozenset()
    bundled_first: bool = False
    verbs: tuple[tuple[str, ...], ...] = ()
    global_options: frozenset[str] = frozenset()
    global_valued: frozenset[str] = frozenset()
    bare: bool = False
    unsafe_options: tuple[str, ...] = ()
    unsafe_words: tuple[re.Pattern[str], ...] = ()
    """Patterns of a word that makes any form unsafe (curl's `-o '#1'` names a file after the URL)."""
    sources: bool = False
    recursive: tuple[str, ...] | None = None
    """Options that make a `sources` command copy directories; None: it always may (mv)."""
    script: str | None = None
    changes_trees: tuple[str, ...] | None = None
    """Options that make it delete, replace or change every file of a directory operand (`rm -r`,
    `rsync --delete`); () when it always may (`trash-put`); None when it never does."""
    mode_operand: bool = False
    """Its first operand is a mode or an owner, not a path (`chmod -R 755 x`), unless `--reference`
    is given or a short option of `mode_letters` is the mode itself (`chmod -R -x x`)."""
    mode_letters: frozenset[str] = frozenset()
    """The letters of a short option that is a mode itself (`chmod -x`), not an option."""

    def takes(self, option: str) -> int:
        """What an option of this command takes, for `_getopt`: a value for the letters of `valued`
        and the names of `long_valued` (written in full), nothing for any other."""
        if option.startswith("--"):
            return _VALUE if option in self.long_valued else _NO_VALUE
        return _VALUE if option[-1] in self.valued else _NO_VALUE

    @classmethod
    def read(cls, entry: Mapping[str, Any]) -> InputWriter:
        return cls(
            why=str(entry["why"]),
            modes=frozenset(entry.get("modes", ())),
            options=frozenset(entry.get("options", "")),
            valued=frozenset(entry.get("valued", "")),
            long_options=tuple(entry.get("long_options", ())),
            long_valued=frozenset(entry.get("long_valued", ())),
            bundled_first=bool(entry.get("bundled_first", False)),
            verbs=tuple(tuple(str(v).split()) for v in entry.get("verbs", ())),
            global_options=frozenset(entry.get("global_options", ())),
            global_valued=frozenset(entry.get("global_valued", ())),
            bare=bool(entry.get("bare", False)),
            unsafe_options=tuple(entry.get("unsafe_options", ())),
            unsafe_words=tuple(re.compile(str(p)) for p in entry.get("unsafe_words", ())),
            sources=bool(entry.get("sources", False)),
            recursive=tuple(entry["recursive"]) if "recursive" in entry else None,
            script=entry.get("script"),
            changes_trees=_changes_trees(entry.get("changes_trees")),
            mode_operand=bool(entry.get("mode_operand", False)),
            mode_letters=frozenset(entry.get("mode_letters", "")),
        )


def _changes_trees(value: Any) -> tuple[str, ...] | None:
    """An entry's `changes_trees` (a list of options, or "always") as `InputWriter` holds it."""
    if value is None:
        return None
    return () if value == "always" else tuple(str(option) for option in value)


_VERSIONED = re.compile(r"(.+?)-?[0-9]+(?:\.[0-9]+)*")
"""A program name with a version after it (`python3.12`, `node-18`): the name is group 1."""


@dataclass(frozen=True)
class ProtectedPaths:
    """The shipped data, compiled."""

    patterns: tuple[str, ...]
    regex: re.Pattern[str]
    shell_writers: frozenset[str]
    shell_directory_changers: frozenset[str]
    credentials: tuple[Mapping[str, Any], ...]
    holders: tuple[str, ...] = ()
    """The directories protected paths live in (`.vscode` for `.vscode/tasks.json`): a shell command
    that names one may work inside it (`cd .vscode && cp x tasks.json`)."""
    holder_regex: re.Pattern[str] | None = None
    input_writers: Mapping[str, InputWriter] = dataclasses.field(default_factory=dict)
    """Commands that write the paths their input names (`[[input_writer]]`), by command name."""
    backup_suffix: frozenset[str] = frozenset()
    """Writers whose `-S`/`--suffix` names a backup file (`shell_backup_suffix`)."""
    suffix_strippers: frozenset[str] = frozenset()
    """Decompressors: each operand without its suffix is what they write (`shell_suffix_strippers`)."""
    prefix_writers: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Commands that name what they write by a prefix and a made-up part (`[[prefix_writer]]`)."""
    shell_path_variables: frozenset[str] = frozenset()
    """Variables that decide where a later command writes or goes, or what options it takes."""
    directory_options: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """Options of a wrapper that run its command in another directory (`env -C dir`), by wrapper."""
    root_changers: frozenset[str] = frozenset()
    """Wrappers that run their command under another root directory (`chroot`)."""
    program_trees: tuple[Path, ...] = ()
    """System directories whose files, at any depth, later commands run or load (`program_trees`)."""
    login_path: tuple[str, ...] = ()
    """Directories of the home directory (`~/bin`) a login puts in `PATH` once they exist (`login_path`)."""

    def input_writer(self, name: str) -> InputWriter | None:
        """The entry for program `name`, or for the name before a version written after it
        (`python3.12`, `ruby3.1`, `node-18` are python, ruby, node): distributions install them so."""
        found = self.input_writers.get(name)
        if found is None and (versioned := _VERSIONED.fullmatch(name)) is not None:
            found = self.input_writers.get(versioned[1])
        return found

    def match(self, relative: str) -> str | None:
        """The pattern a `/`-separated relative path matches, at any depth (or, an absolute one, the binary's home it
        lies in: `binary_home`); None if none does."""
        found = self.regex.search(folded_name(relative))
        if found is None:
            return binary_home(relative)
        return next(p for p, g in zip(self.patterns, found.groups(), strict=True) if g is not None)

    def match_holder(self, relative: str) -> str | None:
        """The protected directory a relative path names (`.vscode`, `.config/git`), if any."""
        found = self.holder_regex.search(folded_name(relative)) if self.holder_regex is not None else None
        if found is None:
            return None
        return next(h for h, g in zip(self.holders, found.groups(), strict=True) if g is not None)


_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
"""Code points HFS+ leaves out when it compares names (git's `is_hfs_dotgit` skips the same): on such a volume
(macOS before APFS, and external disks formatted so) `.g<U+200C>it/config` is `.git/config`."""


def folded_name(relative: str, *, fold_case: bool = True) -> str:
    """A path in the one form the patterns are matched in: `_HFS_IGNORED` removed, then the dots and spaces ending
    each name (not one of only dots, `..`), and its case folded, so that every spelling a file system may take for a
    protected name is one (round 35: a zero-width non-joiner in `.git` was written unasked in auto_edit). Linux's
    vfat and exfat drivers leave a name's trailing dots out as they create or look it up, Windows (WSL's `/mnt/c`, a
    share) its spaces too: there `.git./hooks/pre-commit` is `.git/hooks/pre-commit` and `.envrc.` is `.envrc` (git's
    `is_ntfs_dotgit` refuses them in a tree for that reason; round 36 wrote them unasked). With `str` methods, linear:
    a regex's search for a trailing run was quadratic in a word of `. . . ` (16,000 of them: 15 s). `fold_case=False`:
    the case kept, for a caller's deny and ask rules, searched in both forms (`_policy._folded_paths`)."""
    text = _HFS_IGNORED.sub("", relative)
    if "./" in text or " /" in text or text.endswith((".", " ")):
        text = "/".join(_untrailed(part) for part in text.split("/"))
    return text.casefold() if fold_case else text


def _untrailed(name: str) -> str:
    """`name` without the dots and spaces ending it, unless it is only dots (`..`)."""
    stripped = name.rstrip(". ")
    return stripped if stripped.strip(".") else name


def _holders(patterns: Sequence[str]) -> tuple[str, ...]:
    """Every leading part of a pattern with more than one component: `.config` and `.config/git`
    for `.config/git/**`."""
    found: dict[str, None] = {}
    for pattern in patterns:
        parts = pattern.split("/")
        for end in range(1, len(parts)):
            found.setdefault("/".join(parts[:end]))
    return tuple(h for h in found if h not in patterns)


def _alternatives(patterns: Sequence[str]) -> re.Pattern[str]:
    """The patterns as one regex, a group each. `**` crosses a line feed too (`re.DOTALL`): a name may hold one, and
    `.config/fish/conf.d/a<LF>b.fish`, which fish sources, was no protected path (round 36); a search then fails no
    more at each `/**` folder of a long word holding one, which was quadratic (20,000 characters: 2.5 s)."""
    alternatives = "|".join(f"({_fragment(p.casefold())})" for p in patterns)
    return re.compile(f"(?:^|/)(?:{alternatives})$", re.DOTALL)


def _fragment(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        char = pattern[index]
        out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        index += 1
    return "".join(out)


@functools.cache
def protected_paths() -> ProtectedPaths:
    """The data of `protected_paths.toml`, read and compiled once per process."""
    text = resources.files("unified.tools").joinpath("protected_paths.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    patterns = tuple(str(p) for p in data["protected"]["patterns"])
    writers = frozenset(str(w) for w in data["protected"]["shell_writers"])
    changers = frozenset(str(w) for w in data["protected"]["shell_directory_changers"])
    holders = _holders(patterns)
    input_writers = {
        str(name): InputWriter.read(entry) for entry in data.get("input_writer", []) for name in entry["commands"]
    }
    return ProtectedPaths(
        patterns,
        _alternatives(patterns),
        writers,
        changers,
        tuple(data.get("credential", [])),
        holders,
        _alternatives(holders) if holders else None,
        input_writers,
        frozenset(str(w) for w in data["protected"].get("shell_backup_suffix", ())),
        frozenset(str(w) for w in data["protected"].get("shell_suffix_strippers", ())),
        {str(name): entry for entry in data.get("prefix_writer", []) for name in entry["commands"]},
        frozenset(str(w) for w in data["protected"].get("shell_path_variables", ())),
        {
            str(name): tuple(str(o) for o in options)
            for name, options in data["protected"].get("shell_directory_options", {}).items()
        },
        frozenset(str(w) for w in data["protected"].get("shell_root_changers", ())),
        tuple(Path(str(d)) for d in data["protected"].get("program_trees", ())),
        tuple(str(d) for d in data["protected"].get("login_path", ())),
    )


def protected_path_patterns() -> tuple[str, ...]:
    """The protected-path patterns of the data file (docs/tools.md, "Protected paths")."""
    return protected_paths().patterns


def relative_to_roots(path: Path, roots: Sequence[Path]) -> str:
    """`path` relative to the deepest root holding it (its own text when none does)."""
    holders = [r for r in roots if path == r or path.is_relative_to(r)]
    if not holders:
        return path.as_posix()
    root = max(holders, key=lambda r: len(r.parts))
    return path.relative_to(root).as_posix()


def protected_path(path: Path, roots: Sequence[Path] = ()) -> str | None:
    """The protected-path pattern the real absolute `path` matches, judged on the whole path whatever root it was
    reached from. A pattern matches at any depth, so this is every root's relative judgement and more: judged only
    relative to its root, a path lost the root's own place (round 36: with the include directory `~/.config`,
    `git/config` there was written unasked in auto_edit; so was `config` in a workspace that is a repository's
    `.git`, or `pre-commit` in one that is its `.git/hooks`). `roots`, which the path was judged relative to
    before, is still taken so that a caller of that public form keeps working; it changes nothing."""
    return protected_paths().match(path.as_posix())


def git_directory(path: Path, roots: Sequence[Path]) -> str | None:
    """Why writing the real path `path` writes into a folder git takes for a repository (a bare one, or a `.git`
    under another name), or makes one of it: the folder holds, or gets with this write, `HEAD` and `objects/` and
    `refs/` (or a `commondir`). Git run in that folder or below it (the user's `git branch`, `git diff` on a
    terminal; a prompt's `git status`) reads its `config` (`core.pager`, `core.fsmonitor` run a command) and runs its
    hooks, as `.git/**`'s; round 36 wrote `HEAD`, `objects/.keep`, `refs/.keep` and a `config` with `core.pager` at the
    workspace root unasked, and the next `git branch` ran the pager. A mark counts whatever its kind or content, and
    the written name in every spelling a file system may take for it (`folded_name`): fail closed. Blocking
    (an `lstat` or a few a folder above `path`)."""
    parts = path.parts
    folder = parts[0]
    # from `/` down, as far as folders exist (one that does not cannot be made a repository by one write): a word of
    # a shell command may name a path of thousands of parts, and `relative_to` from each parent was quadratic
    for index in range(1, len(parts)):
        if not os.path.isdir(folder):
            break
        written = folded_name(parts[index])  # `HE<U+200C>AD` on HFS+, `refs.` on vfat
        if _holds_git_marks(Path(folder), {written}):
            verb = "is" if _holds_git_marks(Path(folder)) else "becomes"
            shown = relative_to_roots(Path(folder), roots) or "."
            return f"{shown} {verb} a git repository (HEAD, objects/, refs/): git run there obeys its config and hooks"
        folder = os.path.join(folder, parts[index])
    return None


def git_configured(path: Path, roots: Sequence[Path]) -> str | None:
    """Why writing the real path `path` changes what git obeys although no pattern names it, or None: it is in a folder
    git takes for a repository (`git_directory`), or a file its configuration includes (`git_included`). Blocking."""
    return git_directory(path, roots) or git_included(path, roots)


GIT_INCLUDES_TTL_S = 1.0
"""How long the files git's configuration includes (`git_included`) are reused: a shell command judges each of its
words, a few config files read for each would cost 2,000 words seconds. A config changed meanwhile to include another
file was a write of a protected path (`.git/config`, `.gitconfig`), asked itself."""

GIT_INCLUDES_MAX_FILES = 64
"""The most config files `git_included` reads (git follows includes 10 deep): past it, what they include is not
known, and every write is asked."""

_includes_cache: dict[tuple[object, ...], tuple[float, tuple[dict[Path, str], dict[Path, str]] | None]] = {}


def git_included(path: Path, roots: Sequence[Path]) -> str | None:
    """Why writing the real path `path` changes what git runs through its configuration, or None: a file a config git
    reads includes (`include.path`, `includeIf.<condition>.path`, whatever the condition: fail closed), a program it
    names by a path (`core.fsmonitor = scripts/fsmonitor.sh`, `alias.x = !tools/x.sh`, a filter's, a merge driver's,
    `core.pager`, `credential.helper`, ...) or a file in a folder of hooks it names (`core.hooksPath = tools/hooks`,
    `init.templateDir`), or its `core.attributesFile` (which chooses filters). The configs read: the repository's
    holding a root (`.git/config`; `git config --local include.path ../.gitconfig-shared` is how a team shares one),
    the user's (`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`, `GIT_CONFIG_GLOBAL`: a dotfiles workspace that
    `~/.gitconfig` includes) and the system's, and what those include in turn. Round 36 wrote such a file (its name
    protected by no pattern) with `core.fsmonitor` unasked in auto_edit, and the next `git status` ran it. A relative
    program or folder is taken from the repository's top (where git runs hooks and aliases). Blocking; the configs are
    read once a `GIT_INCLUDES_TTL_S`."""
    named = _git_named(tuple(roots))
    if named is None:
        return f"git's configuration includes more than {GIT_INCLUDES_MAX_FILES} files, one of which may name it"
    files, folders = named
    source = files.get(path) or next((s for folder, s in folders.items() if path.is_relative_to(folder)), None)
    return None if source is None else f"git's configuration names it ({source}): git runs or obeys what it says"


_GIT_PROGRAM_KEYS = frozenset(
    {"core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.attributesfile"}
    | {"sequence.editor", "diff.external", "gpg.program", "credential.helper", "uploadpack.packobjectshook"}
    | {"filter.clean", "filter.smudge", "filter.process", "merge.driver", "diff.command", "diff.textconv"}
    | {"difftool.cmd", "mergetool.cmd"}
)
"""Keys (`section.key`, a subsection left out: `filter.lfs.clean` is `filter.clean`) whose value is a command git runs
(each of its words with a `/` taken for a file it runs), or, `core.attributesFile`, the file that chooses filters; so
is every `alias.*` starting with `!` and every `pager.*`."""

_GIT_FOLDER_KEYS = frozenset({"core.hookspath", "init.templatedir"})
"""Keys whose value is a folder of hooks git runs (or copies into each new repository)."""


def _git_named(roots: tuple[Path, ...]) -> tuple[dict[Path, str], dict[Path, str]] | None:
    """The files and the folders the configs git reads name (`git_included`), each with where it is named; None past
    `GIT_INCLUDES_MAX_FILES` configs."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    named = os.environ.get("GIT_CONFIG_GLOBAL")
    key: tuple[object, ...] = (roots, home, xdg, named)
    now = time.monotonic()
    cached = _includes_cache.get(key)
    if cached is not None and now - cached[0] < GIT_INCLUDES_TTL_S:
        return cached[1]
    repositories = [found for root in roots if (found := _repository(root)) is not None]
    tops = [top for top, _configs in repositories] or list(roots)
    user = [Path(named)] if named else [Path(home, ".gitconfig"), Path(xdg, "git", "config")]
    pending: list[tuple[Path, Path | None, int]] = [(config, None, 0) for config in [*user, Path("/etc/gitconfig")]]
    pending += [(config, top, 0) for top, configs in repositories for config in configs]
    files: dict[Path, str] = {}
    folders: dict[Path, str] = {}
    result: tuple[dict[Path, str], dict[Path, str]] | None = (files, folders)
    read = 0
    while pending:
        config, top, depth = pending.pop()
        read += 1
        if read > GIT_INCLUDES_MAX_FILES:
            result = None
            break
        try:
            with open(config, "rb") as file:
                text = file.read(1 << 20).decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        for name, value in _config_values(text):
            section, _dot, last = name.partition(".")
            wanted = f"{section}.{last.rsplit('.', 1)[-1]}"
            bases = [top] if top else tops
            if section in ("include", "includeif") and last.rsplit(".", 1)[-1] == "path":
                places, into = [config.parent / _home(value, home)], files
            elif wanted in _GIT_FOLDER_KEYS:
                places, into = [base / _home(value, home) for base in bases], folders
            elif wanted in _GIT_PROGRAM_KEYS or section == "pager" or (section == "alias" and value.startswith("!")):
                # every word that may be a path: `sh tools/fsmonitor.sh` runs the script as surely as its name alone
                words = [word.removeprefix("!").strip("'\"") for word in value.split() if "/" in word]
                places, into = [base / _home(word, home) for base in bases for word in words], files
            else:
                continue
            for place in places:
                with contextlib.suppress(OSError, ValueError):
                    real = Path(os.path.realpath(place))
                    if real not in into:
                        into[real] = f"{name} of {config}"
                        if into is files and section.startswith("include") and depth < 10:
                            pending.append((real, top, depth + 1))
    if len(_includes_cache) > 16:
        _includes_cache.clear()
    _includes_cache[key] = (now, result)
    return result


def _home(value: str, home: str) -> str:
    """A config's path value with git's `~/` put as the home folder (an absolute path stays one when joined)."""
    return home + value[1:] if value.startswith("~/") else value


def _repository(root: Path) -> tuple[Path, list[Path]] | None:
    """The top of the repository git finds from `root` (a `.git` folder, or a `.git` file's `gitdir:`, in `root` or
    above) and its config files, its common folder's too (a worktree's `commondir`); None outside one."""
    for folder in (root, *root.parents):
        dotgit = folder / ".git"
        gitdir: Path | None = dotgit if dotgit.is_dir() else None
        if gitdir is None and dotgit.is_file():
            with contextlib.suppress(OSError, ValueError):
                text = dotgit.read_text(encoding="utf-8", errors="replace")[:4096]
                if text.startswith("gitdir:"):
                    gitdir = folder / text[len("gitdir:") :].strip()
        if gitdir is None:
            continue
        found = [gitdir / "config", gitdir / "config.worktree"]
        with contextlib.suppress(OSError, ValueError):
            found.append(
                gitdir / (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip() / "config"
            )
        return folder, found
    return None


def _config_values(text: str) -> Iterator[tuple[str, str]]:
    """(`section[.subsection].key`, value) of each entry of a git config's text, the section and key folded, the value
    unquoted and its comment left out (a section header in another case, a value on the header's line: as git reads;
    a continued line is read as its first)."""
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            end = line.find("]")
            header = line[1:end].strip() if end > 0 else ""
            first, _space, sub = header.partition(" ")
            section = first.casefold() + (f".{sub.strip().strip(chr(34))}" if sub.strip() else "")
            line = line[end + 1 :].strip() if end > 0 else ""
        key, equals, value = line.partition("=")
        if not section or not equals or not key.strip():
            continue
        unquoted, quoted = [], False
        for char in value.strip():
            if char == '"':
                quoted = not quoted
            elif char in "#;" and not quoted:
                break
            else:
                unquoted.append(char)
        if "".join(unquoted).strip():
            yield f"{section}.{key.strip().casefold()}", "".join(unquoted).strip()


def _has_git_mark(folder: Path, mark: str) -> bool:
    """Whether `folder` holds the entry `mark` (one of `_GIT_MARKS`) of any kind."""
    return os.path.lexists(folder / ("HEAD" if mark == "head" else mark))


def _holds_git_marks(folder: Path, written: Collection[str] = ()) -> bool:
    """Whether `folder` holds what git looks for to take it for a repository of its own (`is_git_directory`), the
    entries named `written` (folded marks about to be made) counted: `HEAD`, and `objects` and `refs`, or a `commondir`
    file naming where those are. Measured with git 2.39: `HEAD`, `objects/` and `refs/` are enough (empty folders, no
    commit, no `config`); any two of them are not."""

    def has(mark: str) -> bool:
        return mark in written or _has_git_mark(folder, mark)

    return has("head") and ((has("objects") and has("refs")) or has("commondir"))


_GIT_MARKS = frozenset({"head", "objects", "refs", "commondir"})
"""The entries of `_holds_git_marks`, folded (`folded_name`)."""


def _makes_repository(parts: Sequence[SimpleCommand], scope: _Scope) -> str | None:
    """Why one command may make a folder git takes for a repository (`_holds_git_marks`) out of marks it makes
    together (`mkdir -p x/objects x/refs && echo ref: refs/heads/main > x/HEAD`, or the same after `cd x`), or None.
    `git_directory` judges each write by what is on disk before the command runs, where at most one mark is new:
    three made at once passed, and git run in the folder (`git --git-dir=x`, a user's `git -C x log` on a terminal
    without the runtime's `safe.bareRepository`) obeys its `config` and hooks (round 40). A mark counts in every
    spelling a file system may take for it (`folded_name`), named as any component of a path a maker writes
    (`mkdir -p x/objects/pack` makes `x/objects`) or a redirection's target, from every place of the command. git's
    own words are not read: they name revisions (`git log HEAD -- refs`), and `git init` makes a repository of git's
    own configuration."""
    data = protected_paths()
    marks: dict[str, set[str]] = {}
    for part in parts:
        named, name = list(part.writes), _program(part)
        if name is not None and name != "git" and (name in data.shell_writers or data.input_writer(name) is not None):
            operands = [w for w in part.words[1:] if w is not None and not w.startswith("-")]
            named += [path for word in operands for path in _path_candidates(word)]  # `dd of=x/HEAD` too
            named += _landings_of_marks(part, operands)
        for word in named:
            components = word.split("/")
            for index, component in enumerate(components):
                mark = folded_name(component)
                if mark not in _GIT_MARKS:
                    continue
                for place in scope.places:
                    folder = posixpath.normpath(posixpath.join(str(place), *components[:index]))
                    marks.setdefault(folder, set()).add(mark)
    for folder, made in marks.items():
        place = Path(folder)
        if all(_has_git_mark(place, mark) for mark in made):
            continue  # a repository already (each write into it is `git_directory`'s), or nothing new
        if _holds_git_marks(place, made):
            shown = relative_to_roots(place, scope.roots) or "."
            return (
                f"{shown} becomes a git repository (HEAD, objects/, refs/) with this command: git run there obeys its "
                "config and hooks"
            )
    return None


def _landings_of_marks(part: SimpleCommand, operands: Sequence[str]) -> list[str]:
    """Where a copy, move or link of a git mark lands (`cp -r a/objects a/refs b/HEAD x/` makes `x/objects`,
    `x/refs`, `x/HEAD`): each operand named `HEAD`, `objects`, `refs` or `commondir` (folded) put in the directory a
    `-t`/`--target-directory` names, or else in the last operand. Read of any maker, fail closed: a last operand that
    is a file's new name only adds a mark no folder gets."""
    words = [w for w in part.words[1:] if w is not None]
    targets = [
        value
        for word, after in itertools.pairwise([*words, ""])
        for value in (
            after if word == "-t" else "",
            word[2:] if word.startswith("-t") and len(word) > 2 else "",
            word.split("=", 1)[1] if word.startswith("--target-directory=") else "",
        )
        if value
    ]
    sources = list(operands) if targets else list(operands[:-1])
    targets = targets or list(operands[-1:])
    found: list[str] = []
    for source in sources:
        name = source.rstrip("/").rsplit("/", 1)[-1]
        if folded_name(name) in _GIT_MARKS:
            found += [f"{target.rstrip('/')}/{name}" for target in targets]
    return found


def program_directory(path: Path, search_path: str | None = None, roots: Sequence[Path] = ()) -> str | None:
    """The directory of `PATH` a file written at `path` lands in (`path` itself, for a copy into a
    directory), or one a login puts in `PATH` once it exists (`login_path`: `~/bin`), or the system
    directory of `program_trees` it is below: a file there runs in place
    of the program a later command names (`cp evil /usr/local/bin/git`, then an allowed `git status`;
    `cp evil /usr/lib/git-core/git-remote-https`, then an allowed `git fetch`). Only writes are
    judged so: reading `/usr/bin/python3` is no reason to ask. `search_path` is the `PATH` the commands run with (a
    runtime's `shell_env` may set its own); None: this process's. A path inside one of `roots` (the
    workspace and its include directories) is below no system directory: a project in `/usr/src/app`
    is the user's to edit. Compared whatever the case, as the patterns are: on a case-insensitive file
    system (macOS's, as a rule) `/USR/LOCAL/BIN/git` is `/usr/local/bin/git`."""
    directories = _program_directories(os.environ.get("PATH", "") if search_path is None else search_path)
    later = _login_directories(os.path.expanduser("~"))
    for candidate in (path, path.parent):
        if str(candidate).casefold() in directories:
            return f"a directory of PATH, {candidate}"
        if str(candidate).casefold() in later:
            return f"a directory a login puts in PATH, {candidate}"
    # the loader's libraries, git's exec path, cron's spool, ...: a file at any depth below one runs
    # or is loaded in place of what a later command (or the system) expects (`program_trees`)
    if any(path.is_relative_to(root) for root in roots):
        return None
    folded = _folded(path)
    for tree in protected_paths().program_trees:
        if folded.is_relative_to(_folded(tree)):
            return f"a directory whose files later commands run or load, {tree}"
    return None


def _folded(path: Path) -> Path:
    """`path` in the one case `program_directory` compares system directories in."""
    return Path(str(path).casefold())


@functools.lru_cache(maxsize=8)
def _program_directories(search_path: str) -> frozenset[str]:
    """The absolute directories of a `PATH` value, as written and with links resolved, case folded
    (`program_directory`). A relative entry names no one directory: left out."""
    found: set[str] = set()
    for entry in search_path.split(os.pathsep):
        if os.path.isabs(entry):
            found |= {os.path.normpath(entry).casefold(), os.path.realpath(entry).casefold()}
    return frozenset(found)


@functools.lru_cache(maxsize=8)
def _login_directories(home: str) -> frozenset[str]:
    """The directories of `login_path` for the home directory `home`, as written and with links resolved
    (HOME is read when a call is judged: a runtime's environment, or a test's, may set its own)."""
    found: set[str] = set()
    for entry in protected_paths().login_path:
        directory = os.path.normpath(home + entry[1:] if entry.startswith("~") else entry)
        if os.path.isabs(directory):
            found |= {directory.casefold(), os.path.realpath(directory).casefold()}
    return frozenset(found)


def shell_protected(
    parts: Iterable[SimpleCommand],
    cwd: Path,
    roots: Sequence[Path],
    search_path: str | None = None,
    *,
    inputs: Sequence[str] = (),
) -> str | None:
    """Why a shell command may write a protected path (the first reason), or None; `search_path` is the
    `PATH` the command runs with (`program_directory`); `inputs` the files its redirections read
    (`_shell_syntax.redirected_inputs`), judged as its words are (`cat < n`, `n` a hard link to `~/.netrc`).

    A redirection target or any argument naming a protected path (lexically and through links), a
    file-writing command (`shell_writers`) with an argument only known at run time, `git config`
    and the git verbs that write `.git/config` all count. So does what may move the command into a
    protected directory, where a plain file name is a protected path: an argument naming such a
    directory (`cd .vscode`, `env -C .gemini`), a directory change (`shell_directory_changers`) to a
    place only known at run time, the variables of `shell_path_variables` (`CDPATH`, `DIRSTACK`,
    `TAR_OPTIONS`, ...), `cdable_vars` and `find -execdir`.

    A relative path is judged from every directory the command may run in (`_places`: the call's,
    and each a `cd`, `pushd`, `env -C` of the command leads to), and a directory a command deletes,
    replaces or copies whole is searched for the protected names it holds (`_tree_search`).
    """
    data = protected_paths()
    inside = _protected_or_holder(cwd)
    if inside is not None:
        # the command runs inside a protected directory (`dir_path`), where any file it makes
        # without naming a path (`nohup.out`, a URL's name) is protected, as after `cd .vscode`
        return f"it runs inside {relative_to_roots(cwd, roots)} ({inside})"
    parts = list(parts)
    places = _places(parts, cwd)
    if isinstance(places, str):
        return places
    makers = [part for part in parts if _may_make(part)]
    scope = _Scope(places, roots, makers, entries_left=TREE_CHECK_MAX_ENTRIES, search_path=search_path)
    scope.runs_found = _runs_found(parts)
    made = _makes_repository(parts, scope)
    if made is not None:
        return made
    for source in inputs:
        hit = _names_protected(source.split("\0", 1)[0], scope)
        if hit is not None:
            return f"it reads {source} ({hit})"
    for part in parts:
        if part.unknown is not None:
            # a prefix rule never allows it, but a rule without commandPrefix (all shell commands) does
            return f"a part only known at run time may write a protected path ({part.unknown})"
        moved = _moves_directory(part)
        if moved is not None:
            return moved
        for target in part.writes:
            if target == "?":
                return "a redirection to a file only known at run time may write a protected path"
            hit = _names_protected(target, scope) or _names_program_directory(target, scope)
            if hit is not None:
                return f"it writes {target} ({hit})"
            reached = _written_in_place(target, scope)
            if reached is not None:
                return f"it writes {target}: {reached}"
        name = _program(part)
        if name is None:
            continue
        writer = data.input_writer(name)
        if part.open_tail and (name in data.shell_writers or writer is not None):
            return f"{name} with arguments read at run time (xargs) may write a protected path"
        for word in part.words[1:]:
            if word is None:
                if name in data.shell_writers:
                    return f"{name} with an argument only known at run time may write a protected path"
                if name in data.shell_directory_changers:
                    return f"{name} to a directory only known at run time may lead a write into a protected one"
                continue
            if _cluster_end(word) > _CLUSTER_MAX:
                return f"{name} has an option cluster too long to judge ({clip(word, 60, more='…')})"
            for candidate in _path_candidates(word):
                hit = _names_protected(candidate, scope)
                if hit is None and (name in data.shell_writers or writer is not None):
                    hit = _names_program_directory(candidate, scope)
                    if hit is None and (reached := _written_in_place(candidate, scope)) is not None:
                        return f"{name} names {candidate}: {reached}"
                if hit is not None:
                    return f"{name} names {candidate} ({hit})"
        read = _unread_reason(part, name, scope) or _tree_read_reason(part, name, scope)
        if read is not None:
            return read
        git = _git_writes_config(part) or _git_local_repository(part, scope) or _git_elsewhere(part, scope)
        if git is not None:
            return git
        if writer is not None:
            why = _input_write(name, part, writer, scope)
            if why is not None:
                return why
        args = [w for w in part.words[1:] if w is not None]
        if name in data.prefix_writers:
            why = _prefix_write(name, args, data.prefix_writers[name], scope)
            if why is not None:
                return why
        if name in data.backup_suffix or name in data.suffix_strippers:
            why = _suffix_write(name, args, scope, strips=name in data.suffix_strippers)
            if why is not None:
                return why
    return None


def _program(part: SimpleCommand) -> str | None:
    """The program a part runs as the data names it: its command word's basename in lower case (on
    a case-insensitive file system `RM` runs `rm`, and a rule allowing every command lets it by)."""
    return None if part.name is None else part.name.lower()


def _moves_directory(part: SimpleCommand) -> str | None:
    """Why `part` may run in (or send later commands to) a directory the check cannot name."""
    variables = [name for name in part.assigns if name in protected_paths().shell_path_variables]
    if variables:
        return f"it sets {variables[0]}, which decides where a later command writes or goes"
    program = _program(part)
    if program == "shopt" and "cdable_vars" in part.words:
        return "shopt cdable_vars makes cd go where a variable says"
    if "find -execdir" in part.via:
        return "find -execdir runs a command inside every directory it visits, protected ones included"
    if program in protected_paths().shell_directory_changers:
        if not [w for w in part.words[1:] if w is None or not w.startswith(("-", "+"))]:
            return f"{program} to a directory only known at run time may lead a write into a protected one"
        if any(w is not None and w[:1] in "+-" and w[1:].isdigit() for w in part.words[1:]):
            return f"{program} to a directory only known at run time may lead a write into a protected one"
    return None


PLACES_MAX = 32
"""The most directories a command's relative paths are judged from; a command that may run in more
(`cd a; cd ..; cd b; ...` over a deep tree, a link loop) is asked."""


def _places(parts: Sequence[SimpleCommand], cwd: Path) -> list[Path] | str:
    """Every directory a part of the command may run in, or why they cannot be named.

    The order of the parts, conditions, loops and subshells are not followed: every directory
    change of the command (`cd`, `pushd`, `shell_directory_options`) is applied to every place
    found, as often as it leads somewhere new, both as bash's `cd` reads it (`..` as text) and as
    the kernel does (links resolved). A place that does not exist when the command is judged is
    kept but not followed further: a path relative to it does not exist either, and a tree search
    of one that does not exist is asked when another part of the command may make it.
    """
    targets: list[str] = []
    for part in parts:
        words = _directory_words(part)
        if isinstance(words, str):
            return words
        targets.extend(w for w in words if w not in targets)
    if len(targets) > PLACES_MAX:  # each leads somewhere new from the call's directory alone
        return f"it may change directory to more places than are followed (over {PLACES_MAX})"
    places = [cwd]
    pending = [cwd] if targets else []
    while pending:
        place = pending.pop()
        if not os.path.isdir(place):
            continue
        for target in targets:
            lexical = Path(posixpath.normpath(place / target))
            try:
                real = Path(os.path.realpath(lexical))
            except (OSError, ValueError):
                real = lexical
            for found in (lexical, real):
                if found in places:
                    continue
                if len(places) >= PLACES_MAX:
                    return f"it may change directory to more places than are followed (over {PLACES_MAX})"
                places.append(found)
                pending.append(found)
    return places


def _directory_words(part: SimpleCommand) -> list[str] | str:
    """The directories a part changes to (`cd DIR`, `env -C DIR`), or why one is only known at run
    time (`shell_protected` asks for `cd "$D"` itself; `env -C "$D"` is asked here)."""
    data = protected_paths()
    program = _program(part) or ""
    words = list(part.words[1:])
    if program in data.shell_directory_changers:
        return [w for w in words if w is not None and not w.startswith(("-", "+"))]
    options = data.directory_options.get(program)
    if not options:
        return []
    known = [w for w in words if w is not None]
    if len(known) < len(words):
        return f"{program} with an argument only known at run time may lead a write into a protected directory"

    def takes(option: str) -> int:
        if option.startswith("--") and len(option) > 2:  # abbreviated as getopt allows
            return _VALUE if any(o.startswith(option) for o in options if o.startswith("--")) else _NO_VALUE
        return _VALUE if option in options else _NO_VALUE

    return [arg.value for arg in _getopt(known, takes) if arg.value and takes(arg.word) == _VALUE]


def _may_make(part: SimpleCommand) -> bool:
    """Whether a part may make a file, a directory or a link (`mkdir x`, `ln -s vendor x`, `> x`)."""
    data = protected_paths()
    name = _program(part)
    return (
        part.unknown is not None
        or name is None
        or bool(part.writes)
        or name in data.shell_writers
        or data.input_writer(name) is not None
    )


GLOB_CHECK_MAX_ENTRIES = 2_000
"""The most directory entries looked at to expand one command's wildcards (`~/.net*`, `sub/*`) against the credential
files; a command whose wildcards reach more is asked."""


@dataclass
class _Scope:
    """What a command's parts are judged in: the places it may run in, the roots, the parts that
    may make a path (an operand missing now may be made by one, `ln -s vendor x && rm -rf x/`), and
    the entries a tree search of the whole command may still visit."""

    places: list[Path]
    roots: Sequence[Path]
    makers: list[SimpleCommand]
    entries_left: int
    searched: set[tuple[int, int, tuple[Path, ...]]] = dataclasses.field(default_factory=set)
    """The trees searched already (device, inode, and where a copy of it lands): none twice."""
    named: dict[tuple[str, Path], str | None] = dataclasses.field(default_factory=dict)
    """What each word names from each place (`_names_protected`), judged once per command."""
    search_path: str | None = None
    """The `PATH` the command runs with (`program_directory`)."""
    links: LinkSearch | None = None
    """The protected links beside what the command writes (`_written_in_place`), each folder listed once."""
    credentials: Mapping[tuple[int, int], Path] | None = None
    """The credential files (`credential_ids`), looked up once per command."""
    makes_link: bool | None = None
    """Whether a part may make a symbolic link (`_may_make_link`), found once per command."""
    glob_left: int = GLOB_CHECK_MAX_ENTRIES
    """The entries the expansion of the command's wildcards may still look at (`_bounded_glob`)."""
    runs_found: bool = False
    """Whether a part is a program find runs on what it finds (`find docs -exec cat {} +`, `-ok`): it opens a
    symbolic link find only lists, so find's trees are searched following links (`_tree_read_reason`)."""
    reads: bool = False
    """Whether the command is judged as a read a backend runs unasked (`credential_read`): then a file with other
    names it may read is a reason too (`other_names`); a protected write's judgement (`shell_protected`) reads none."""


_CLUSTER_MAX = 64
"""The longest run of option letters before an attached value that is searched (`-vvt.git/hooks`)."""


def _path_candidates(word: str) -> list[str]:
    """The paths an argument may name: itself, the value of `--opt=value` / `of=value`, and a value
    attached to a short option after any letters of a cluster (`-t.git/hooks`, `-cf.envrc`,
    `-vt.git/hooks`: the value begins after whichever letter takes one)."""
    found = [word]
    if "=" in word:
        found.append(word.split("=", 1)[1])
    url = _URL.match(word)
    if url is not None:  # `curl -O`, `wget` name the file after the URL's last segment
        found.append(urllib.parse.unquote(url.group(1).rsplit("/", 1)[-1]))
    elif ":" in word:  # `scp host:.bashrc .` writes `.bashrc`
        found.append(word.split(":", 1)[1])
    found.extend(word[end:] for end in range(2, _cluster_end(word) + 1))
    return [w for w in found if w and not w.startswith("-")]


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*([^?#]*)")
"""A URL and its path (without query and fragment)."""


def _cluster_end(word: str) -> int:
    """Where the run of option letters of a `-abc...` word ends (1 for any other word)."""
    if not word.startswith("-") or word.startswith("--"):
        return 1
    end = 1
    while end < len(word) and word[end].isalnum():
        end += 1
    return end


def _names_protected(word: str, scope: _Scope) -> str | None:
    """The protected path or directory `word` names from any place of `scope`, lexically or through
    a link (each word is judged once from each place: a long command repeats its words)."""
    for place in scope.places:
        key = (word, place)
        if key not in scope.named:
            if scope.credentials is None:
                scope.credentials = credential_ids()
            scope.named[key] = _names_protected_from(word, place, scope.roots, scope.credentials)
        hit = scope.named[key]
        if hit is not None:
            return hit
    return None


def _written_in_place(word: str, scope: _Scope) -> str | None:
    """Why a command writing the file `word` names from a place of `scope` changes more than it names
    (`hard_linked`, `linked_from_protected`), or None."""
    for place in scope.places:
        try:
            real = Path(os.path.realpath(place / word))
        except (OSError, ValueError):
            continue
        if scope.links is None:
            scope.links = LinkSearch(scope.roots)
        reached = hard_linked(real) or scope.links.reason(real)
        if reached is not None:
            return reached
    return None


def _names_program_directory(word: str, scope: _Scope) -> str | None:
    """`program_directory` of what `word` names from any place of `scope`, as written and with links
    resolved; or a directory holding one (`/`, `/var`, `/root` above `/root/.cargo/bin`): a link to it
    made by the same command leads a later write there under a name the check does not know
    (`ln -s / r; cp evil r/usr/local/bin/git`), as a named protected directory does (`match_holder`)."""
    for place in scope.places:
        lexical = Path(posixpath.normpath(str(place / word)))
        try:
            real = Path(os.path.realpath(lexical))
        except ValueError:
            real = lexical
        except OSError as exc:
            # a link this process may not read, where the command may follow it: another process's root
            # or directory (`/proc/1/root/usr/local/bin/git` is `/usr/local/bin/git` to a command that may
            # trace pid 1); judged on its text it led nowhere, and was allowed (round 9)
            return f"where {clip(str(lexical), 120, more='…')} leads cannot be read ({exc.strerror or exc})"
        for path in {lexical, real}:
            hit = program_directory(path, scope.search_path, scope.roots) or _holds_program_directory(
                path, scope.search_path, scope.roots
            )
            if hit is not None:
                return hit
    if scope.makes_link is None:  # once per command: each part's words, for each word (2,000 words: 1.5 s)
        scope.makes_link = any(_may_make_link(maker) for maker in scope.makers)
    if scope.makes_link:
        # `ln -s .. a; ln -s a/.. b; ...; cp evil h/usr/local/bin/git`: each link names only `..`, and the
        # chain the command makes leads to `/`; so what follows any component of the path, which may
        # be such a link, is judged as an absolute path
        components = [c for c in posixpath.normpath(word).split("/") if c]
        for start in range(1, len(components)):
            hit = program_directory(Path("/", *components[start:]), scope.search_path, scope.roots)
            if hit is not None:
                return f"{hit}, through a link the same command may make"
    return None


def _may_make_link(part: SimpleCommand) -> bool:
    """Whether a part may make a symbolic link (`ln`, `cp -s`, or one the analysis cannot read)."""
    name = _program(part)
    if part.unknown is not None or name is None or name == "ln":
        return True
    args = [w for w in part.words[1:] if w is not None]
    symbolic = any(w == "--symbolic-link" or (w.startswith("-") and not w.startswith("--") and "s" in w) for w in args)
    return name == "cp" and symbolic


def _holds_program_directory(path: Path, search_path: str | None, roots: Sequence[Path]) -> str | None:
    """A directory of `PATH` or of `program_trees` strictly below `path` (outside the roots), if any. Not
    `login_path`'s: a link to the home directory would be asked whenever the workspace is in it, and a
    write through one, `h/bin/git`, is judged on its tail as any path after a link is (`/bin` is a tree)."""
    if any(path == root or path.is_relative_to(root) for root in roots):
        return None
    directories = _program_directories(os.environ.get("PATH", "") if search_path is None else search_path)
    below = [Path(d) for d in directories] + [_folded(tree) for tree in protected_paths().program_trees]
    folded = _folded(path)
    held = next((d for d in below if d != folded and d.is_relative_to(folded)), None)
    return None if held is None else f"a directory holding {held}, whose files later commands run or load"


def _names_protected_from(
    word: str, cwd: Path, roots: Sequence[Path], credentials: Mapping[tuple[int, int], Path]
) -> str | None:
    joined = cwd / word
    lexical = Path(posixpath.normpath(str(joined)))
    hit = _protected_or_holder(lexical) or git_configured(lexical, roots)
    if hit is not None:
        return hit
    try:
        # both: `lnk/..` is `.` to the text, but the parent of the link's target to the kernel
        reals = {Path(os.path.realpath(lexical)), Path(os.path.realpath(joined))}
    except (OSError, ValueError):
        return None
    for real in sorted(reals - {lexical}):
        hit = _protected_or_holder(real) or git_configured(real, roots)
        if hit is not None:
            return f"a link to {relative_to_roots(real, roots)}, {hit}"
    # a credential file under any name: a hard link to `~/.netrc` is `n` to the patterns, and an allowed `cat n`
    # printed its password (round 17); the file tools refuse it by device and inode (`credential_refusal`)
    for path in (joined, lexical):  # `x/../n`: the kernel's, and the text's once a command makes `x`
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        named = credentials.get((info.st_dev, info.st_ino)) if stat.S_ISREG(info.st_mode) else None
        if named is not None:
            return f"a credential file ({named})"
    return None


_TREE_READERS: dict[str, tuple[frozenset[str], frozenset[str]] | None] = {
    "grep": (frozenset("rR"), frozenset({"--recursive", "--dereference-recursive", "--directories=recurse"})),
    "egrep": (frozenset("rR"), frozenset({"--recursive", "--dereference-recursive", "--directories=recurse"})),
    "fgrep": (frozenset("rR"), frozenset({"--recursive", "--dereference-recursive", "--directories=recurse"})),
    "zgrep": (frozenset("rR"), frozenset({"--recursive", "--dereference-recursive"})),
    "rg": None,
    "ag": None,
    "ack": None,
    "find": None,
    "tar": None,
    "bsdtar": None,
    "rsync": None,
    "zip": (frozenset("r"), frozenset({"--recurse-paths"})),
    "cp": (frozenset("rRa"), frozenset({"--recursive", "--archive"})),
    "scp": (frozenset("r"), frozenset()),
    "du": None,
    "diff": (frozenset("r"), frozenset({"--recursive"})),
    "ugrep": (frozenset("rR"), frozenset({"--recursive", "--dereference-recursive"})),
    "ug": (frozenset("rR"), frozenset({"--recursive", "--dereference-recursive"})),
    "git": (frozenset(), frozenset({"--no-index", "--untracked"})),
}
"""Programs that read every file below a directory they name (or below the directory they run in): always (None), or
with one of these option letters or long options (`git grep --no-index`, `git diff --no-index` read files git
does not track). Under a rule allowing them a tree holding a credential file, or
another name of one (a hard link, which no name tells), is asked as the file itself is."""

_NAMES_ONLY = frozenset(
    {
        "echo",
        "printf",
        "test",
        "[",
        "true",
        "false",
        ":",
        "basename",
        "dirname",
        "which",
        "type",
        "realpath",
        "readlink",
    }
)
"""Programs that never open the files their words name (`echo $PATH`, `test -f ~/.netrc`): a word of theirs known
only at run time is no read of a credential file (a substitution in it, `echo "$(cat ~/.netrc)"`, is a part of its
own, judged)."""

_FOLLOWS = frozenset(
    {
        "-R",
        "-L",
        "--follow",
        "--dereference-recursive",
        "--dereference",
        "-follow",
        "-h",
        "--dereference-files",
        "--copy-links",
    }
)
"""Options with which a tree reader follows symbolic links inside the tree (`grep -R`, `rg -L`, `find -L`, `tar -h`):
then a link in it to a credential file is read too."""
_FOLLOW_LETTERS = {"tar": "h", "bsdtar": "hL", "cp": "L", "rsync": "L", "rg": "L", "ugrep": "S", "ug": "S", "du": "L"}
"""Each program's letters for `_FOLLOWS` inside an option cluster (`tar -chf`, `ugrep -rS`, `cp -rL`), besides `R`."""
_FOLLOWS_BY_DEFAULT = frozenset({"zip", "diff", "scp"})
"""Tree readers that follow symbolic links unless told not to: `zip -r` stores a link's target, `diff -rN` prints it
(round 19: both read `docs/n -> ~/.netrc` under a rule)."""


def credential_read(parts: Iterable[SimpleCommand], cwd: Path, roots: Sequence[Path]) -> str | None:
    """Why a command a backend calls a read (Codex's read-only commands, run unasked) may read a credential file, or
    None: a word naming one under another name (a hard link), a word only known at run time that may expand to one
    (`_unread_reason`), a tree read whole that holds one (`_tree_read_reason`). The write checks of
    `shell_protected` are not applied: reading `.git/config` is no protected write."""
    parts = list(parts)
    places = _places(parts, cwd)
    if isinstance(places, str):
        return places
    scope = _Scope(places, roots, [], entries_left=TREE_CHECK_MAX_ENTRIES, runs_found=_runs_found(parts), reads=True)
    scope.credentials = credential_ids()
    for part in parts:
        name = _program(part)
        if name is None:
            continue
        for word in part.words[1:]:
            for candidate in _path_candidates(word) if word is not None else ():
                for place in places:
                    hit = _read_reason(place / candidate, scope.credentials)
                    if hit is not None:
                        return f"{name} names {candidate}, {hit}"
        why = _unread_reason(part, name, scope) or _tree_read_reason(part, name, scope)
        if why is not None:
            return why
    return None


def credential_reach(path: Path, roots: Sequence[Path], *, tree: bool) -> str | None:
    """Why a backend's own read tool given the existing `path` (Claude Code's Read of a file, its Grep of a folder)
    may read a credential file, or None: the file is one under another name (a hard link), or, for a tool that reads
    a `tree`, the folder holds one (`_tree_credential`: by path, and by device and inode when a credential file has
    other names)."""
    credentials = credential_ids()
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(info.st_mode):
        return _read_reason(path, credentials)
    if not tree:
        return None
    scope = _Scope([path], roots, [], entries_left=TREE_CHECK_MAX_ENTRIES, credentials=credentials)
    return _tree_credential(".", path, scope, follows=False)


def _unread_reason(part: SimpleCommand, name: str, scope: _Scope) -> str | None:
    """Why a word of `part` only known at run time may name a credential file (`cat ~/.net*`, `cat $HOME/.netrc`,
    `cat ~/.{netrc,x}`, `cat sub/*` with `sub/n` a hard link to `~/.netrc`), or None.

    The parser keeps such a word's text (`SimpleCommand.unread`); the word is read as every path it may expand to (a
    variable, a substitution, a brace or extended pattern may be any text, `/` included; `~` and `$HOME` are the home
    directory; `*`, `?` and `[...]` one path component's characters) and compared with the credential files, as
    written and resolved; a word with only wildcards (and `~`) is also expanded now, bounded, and each file it names
    judged as a literal word is (a hard link, a link to a protected path). An ordinary wildcard (`cat *.py`) names no
    credential file and stays under the caller's rule."""
    if not (part.unread or part.open_tail) or name in _NAMES_ONLY:
        return None
    reads_trees = _reads_trees(part, name)
    home = os.environ.get("HOME", "")
    if scope.credentials is None:
        scope.credentials = credential_ids()
    known = {str(path) for path in scope.credentials.values()}
    with contextlib.suppress(OSError, ValueError):
        known |= {os.path.realpath(path) for path in list(known)}
    if part.open_tail and known:  # `echo ~/.netrc | xargs cat`: any name, as `cat $(...)` is
        return f"{name} takes arguments only known at run time (xargs), which may name the credential file {min(known)}"
    for text in part.unread:
        regex, globbed = _unread_pattern(text, home)
        tail = "(?:/.*)?" if reads_trees else ""
        for place in scope.places:
            whole = re.compile(
                regex + tail if regex.startswith(("/", ".*")) else f"{re.escape(str(place))}/{regex}{tail}"
            )
            named = next((path for path in sorted(known) if whole.fullmatch(path)), None)
            if named is not None:
                return f"{name} names {clip(text, 60, more='…')}, which may be the credential file {named}"
            if globbed is None:
                continue
            found = _bounded_glob(globbed, place, scope)
            if isinstance(found, str):
                return f"{name} names {clip(text, 60, more='…')}, {found}"
            for path in found:
                # by device and inode (a link or a hard link to one): one `stat`, not the patterns' search (50
                # files of `cat src/*.py` took 22 ms that way); reading a protected path is no protected write
                hit = (_read_reason if scope.reads else _credential_at)(place / path, scope.credentials)
                if hit is None and reads_trees:
                    hit = _tree_credential(path, place, scope, follows=_follows(part))
                if hit is not None:
                    return f"{name} names {clip(text, 60, more='…')}, which names {path} ({hit})"
    return None


_UNREAD_WILDCARDS_MAX = 6
"""The most unknown runs (`*`, a variable) a word's pattern keeps; a word with more may be any path (a search of
`.*/.*/.*/...` or `[^/]*a[^/]*a...` over a long name backtracks without end)."""


def _runs_found(parts: Sequence[SimpleCommand]) -> bool:
    return any("find" in part.via or "find -execdir" in part.via for part in parts)


def _credential_at(path: Path, credentials: Mapping[tuple[int, int], Path]) -> str | None:
    """The credential file `path` is (followed through links), by device and inode, or None."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    named = credentials.get((info.st_dev, info.st_ino)) if stat.S_ISREG(info.st_mode) else None
    return None if named is None else f"a credential file ({named})"


def _read_reason(path: Path, credentials: Mapping[tuple[int, int], Path]) -> str | None:
    """Why a read of the file at `path` (followed through links) may read what lies outside the workspace: it is a
    credential file (`_credential_at`), or a file with other names (`other_names`), or None."""
    found = _credential_at(path, credentials)
    if found is not None:
        return found
    try:
        return other_names(os.stat(path))
    except (OSError, ValueError):
        return None


def other_names(info: os.stat_result) -> str | None:
    """Why a read of the file `info` describes is not a read of the workspace alone, or None: a regular file with other
    names (hard links) may be a file outside it, and which one cannot be told from here (a hard link has no target to
    judge: `ln ~/.bash_history notes.txt` is `~/.bash_history`). A git checkout holds none; a package manager's
    store (pnpm's `node_modules`) does, and those reads are asked too. The one rule for every backend's reads
    (`credential_reach`, `credential_read`, `_safe_io.check_regular`); writes in place have theirs (`hard_linked`)."""
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return f"a file with {info.st_nlink} names (hard links), one of which may be outside the workspace"
    return None


def _unread_pattern(text: str, home: str) -> tuple[str, str | None]:
    """A regex of every path the word written `text` may expand to, and its `glob` pattern when only wildcards and the
    home directory are unknown in it (else None). Quotes are removed; a `..` component lets anything stand before it
    (the text cannot tell where `x*/..` or `$D/..` leads)."""
    out: list[str] = []
    globbed: list[str] | None = []
    index, size, quoted = 0, len(text), False

    def literal(chars: str) -> None:
        out.append(re.escape(chars))
        if globbed is not None:
            globbed.append(glob.escape(chars))

    def anything() -> None:
        nonlocal globbed
        if not out or out[-1] != ".*":
            out.append(".*")
        globbed = None

    def closing(start: int, opening: str, closing_char: str) -> int:
        depth = 0
        for at in range(start, size):
            if text[at] == "\\":
                continue
            if text[at] == opening:
                depth += 1
            elif text[at] == closing_char:
                depth -= 1
                if depth == 0:
                    return at + 1
        return size

    last_bracket, last_brace = text.rfind("]"), text.rfind("}")  # one search each: `[[[[...` stays linear
    if text.startswith("~"):
        end = text.find("/")
        end = size if end < 0 else end
        if end == 1 and home:
            literal(home)
        else:  # `~user`, `~+`, `~-`: another directory
            anything()
        index = end
    while index < size:
        char = text[index]
        if char == "\\" and index + 1 < size:
            literal(text[index + 1])
            index += 2
        elif char == "'" and not quoted:
            end = text.find("'", index + 1)
            end = size if end < 0 else end
            literal(text[index + 1 : end])
            index = end + 1
        elif char == '"':
            quoted = not quoted
            index += 1
        elif char == "$":
            following = text[index + 1 : index + 2]
            if following == "{":
                end = closing(index + 1, "{", "}")
                (literal(home) if text[index + 2 : end - 1] == "HOME" and home else anything())
                index = end
            elif following == "(":
                index = closing(index + 1, "(", ")")
                anything()
            elif following == "'" and not quoted:  # `$'\x2e'`: any text
                end = index + 2
                while end < size and text[end] != "'":
                    end += 2 if text[end] == "\\" else 1
                index = end + 1
                anything()
            elif following == '"':
                index += 1
            elif following and (following.isalnum() or following == "_"):
                match = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]", text[index + 1 :])
                variable = match.group() if match else following
                (literal(home) if variable == "HOME" and home else anything())
                index += 1 + len(variable)
            elif following and following in "@*#?$!-[":
                index += 2 if following != "[" else closing(index + 1, "[", "]") - index
                anything()
            else:
                literal("$")
                index += 1
        elif char == "`":
            end = text.find("`", index + 1)
            index = size if end < 0 else end + 1
            anything()
        elif quoted:
            literal(char)
            index += 1
        elif char in "?*+@!" and text[index + 1 : index + 2] == "(":  # an extended pattern
            index = closing(index + 1, "(", ")")
            anything()
        elif char == "*":
            out.append("[^/]*")
            if globbed is not None:
                globbed.append("*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            if globbed is not None:
                globbed.append("?")
            index += 1
        elif char == "[" and last_bracket > index + 1:
            end = text.index("]", index + 2) + 1
            out.append("[^/]")
            if globbed is not None:
                globbed.append("?")
            index = end
        elif char == "{" and last_brace > index:
            end = closing(index, "{", "}")
            if "," in text[index:end] or ".." in text[index:end]:
                anything()
            else:
                literal(text[index:end])
            index = end
        else:
            literal(char)
            index += 1
    if sum(piece in (".*", "[^/]*") for piece in out) > _UNREAD_WILDCARDS_MAX:
        # `$a/$a/$a/...` or `*a*a*a*...` against a long name backtracks without end: read as any path at all
        return ".*", None
    regex = "".join(out)
    # `..` after anything the text cannot place: what stands before it may be anywhere
    up = regex.rfind(r"/\.\.")
    if up >= 0 and (up + 5 == len(regex) or regex[up + 5] == "/"):
        regex, globbed = ".*" + regex[up + 5 :], None
    elif regex.startswith(r"\.\.") and (len(regex) == 4 or regex[4] == "/"):
        regex, globbed = ".*" + regex[4:], None
    return regex, None if globbed is None else "".join(globbed)


def _bounded_glob(pattern: str, place: Path, scope: _Scope) -> list[str] | str:
    """The paths the wildcard `pattern` matches from `place`, as bash expands it (a name beginning with a dot only
    where the pattern's component does), looking at no more than `GLOB_CHECK_MAX_ENTRIES` entries for the command."""
    absolute = pattern.startswith("/")
    components = [c for c in pattern.split("/") if c]
    found = ["/" if absolute else ""]
    for component in components:
        if not glob.has_magic(component):
            plain = component.replace("[*]", "*").replace("[?]", "?").replace("[[]", "[")
            found = [posixpath.join(f, plain) if f else plain for f in found]
            continue
        following: list[str] = []
        for base in found:
            try:
                with os.scandir(place / base if base else place) as entries:
                    names = [entry.name for entry in entries]
            except (OSError, ValueError):
                continue
            scope.glob_left -= len(names)
            if scope.glob_left < 0:
                limit = f"{GLOB_CHECK_MAX_ENTRIES:,}"
                return f"whose wildcards reach too many entries to check for a credential file (over {limit})"
            hidden = component.startswith(".")
            following += [
                posixpath.join(base, n) if base else n
                for n in names
                if (hidden or not n.startswith(".")) and fnmatch.fnmatchcase(n, component)
            ]
        found = following
    return [f for f in found if os.path.lexists(place / f)]


_GIT_TREE_VERBS = frozenset({"grep", "add", "stage", "commit", "stash"})
"""git verbs that read the tracked (or every) file of the repository whole without naming it: `git grep` prints the
worktree's tracked files, `git add -A`, `git commit -a`, `git stash` copy them into objects that `git show` and
`git diff --cached` print (round 19: a hard link to `~/.netrc` was added and read back unasked). Their trees are
the roots and any directory a word names (`git -C ~/dotfiles grep`, `--work-tree=..`)."""


def _reads_trees(part: SimpleCommand, name: str) -> bool:
    if name not in _TREE_READERS:
        return False
    if name == "git" and (verb := _git_verb(part)) is not None and verb[0] in _GIT_TREE_VERBS:
        return True
    options = _TREE_READERS[name]
    if options is None:
        return True
    letters, long = options
    for word in part.words[1:]:
        if word is None or not word.startswith("-"):
            continue
        if word.startswith("--"):
            if word in long:
                return True
        elif letters & set(word[1 : _cluster_end(word)]):
            return True
    return name in ("grep", "egrep", "fgrep") and "recurse" in part.words


def _follows(part: SimpleCommand) -> bool:
    name = _program(part)
    if name in _FOLLOWS_BY_DEFAULT:
        return True
    letters = "R" + _FOLLOW_LETTERS.get(name or "", "")
    return any(
        w is not None
        and (w in _FOLLOWS or (w.startswith("-") and not w.startswith("--") and any(c in w for c in letters)))
        for w in part.words[1:]
    )


def _tree_read_reason(part: SimpleCommand, name: str, scope: _Scope) -> str | None:
    """Why a tree reader (`_TREE_READERS`: `grep -r`, `rg`, `find`, `tar`) may read a credential file: a directory it
    names (or the one it runs in, when it names none) holds one, by its path or, when a credential file has other
    names, as a hard link found by a search of the tree (bounded: past it, asked)."""
    if not _reads_trees(part, name):
        return None
    # a program find runs on what it finds (`-exec cat {} +`) opens a symbolic link find itself only lists
    follows = _follows(part) or (name == "find" and scope.runs_found)
    trees: list[str] = []
    words = [w.split("=", 1)[1] if w.startswith("--work-tree=") else w for w in part.words[1:] if w is not None]
    for place in scope.places:
        trees += [w for w in words if not w.startswith("-") and os.path.isdir(place / w)]
    verb = _git_verb(part)
    if verb is not None and verb[0] in _GIT_TREE_VERBS:
        trees += [str(root) for root in scope.roots]  # the repository's files, wherever the command runs
    for tree in trees or ["."]:
        for place in scope.places:
            hit = _tree_credential(tree, place, scope, follows=follows)
            if hit is not None:
                return f"{name} reads {tree}, which holds {hit}"
    return None


def _tree_credential(tree: str, place: Path, scope: _Scope, *, follows: bool) -> str | None:
    """A credential file inside the directory `tree` names from `place` (by its path; or, when a credential file has
    hard links or links are followed, by device and inode in a bounded search), or None."""
    if scope.credentials is None:
        scope.credentials = credential_ids()
    try:
        real = Path(os.path.realpath(place / tree))
        if not os.path.isdir(real):
            return None
    except (OSError, ValueError):
        return None
    linked = False
    known: list[tuple[Path, Path]] = []  # each credential file as named and as resolved
    for path in scope.credentials.values():
        with contextlib.suppress(OSError, ValueError):
            known.append((path, Path(os.path.realpath(path))))
            linked = linked or os.stat(path).st_nlink > 1
    held = _holds_credential(real, known)
    if held is not None:
        return f"the credential file {held}"
    if not (linked or follows):
        return None
    pending = [real]
    entered: set[tuple[int, int]] = set()  # the folders reached through links, each searched once (a cycle)
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            continue
        scope.entries_left -= len(listed)
        if scope.entries_left < 0:
            limit = f"{TREE_CHECK_MAX_ENTRIES:,}"
            return f"more entries than are searched for another name of a credential file (over {limit})"
        for entry in listed:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                info = entry.stat(follow_symlinks=follows)
                if follows and stat.S_ISDIR(info.st_mode):  # `d -> ~` under `grep -R`, `zip -r`: followed too
                    target = Path(os.path.realpath(entry.path))
                    held = _holds_credential(target, known)
                    if held is not None:
                        where = relative_to_roots(Path(entry.path), scope.roots)
                        return f"{where}, a link to a folder holding the credential file {held}"
                    if (info.st_dev, info.st_ino) not in entered:
                        entered.add((info.st_dev, info.st_ino))
                        pending.append(target)
                    continue
            except (OSError, ValueError):
                continue
            named = scope.credentials.get((info.st_dev, info.st_ino)) if stat.S_ISREG(info.st_mode) else None
            if named is not None:
                return (
                    f"{relative_to_roots(Path(entry.path), scope.roots)}, another name of the credential file {named}"
                )
    return None


def _holds_credential(real: Path, known: Sequence[tuple[Path, Path]]) -> Path | None:
    """The credential file (as named, as resolved: `known`) inside the resolved folder `real`, or None."""
    return next((path for path, resolved in known if resolved.is_relative_to(real) or path.is_relative_to(real)), None)


def _protected_or_holder(path: Path) -> str | None:
    """The protected pattern the real absolute `path` matches, or the protected directory it is (`protected_path`:
    a workspace or include directory that is `.vscode` or `.config/git` runs a command in one)."""
    hit = protected_path(path)
    if hit is not None:
        return hit
    holder = protected_paths().match_holder(path.as_posix())
    return None if holder is None else f"a directory protected paths are in, {holder}"


def _git_verb(part: SimpleCommand) -> tuple[str, list[str]] | None:
    """A git command's verb and the words after it (`git -C x grep foo`: `grep`, `[foo]`), or None."""
    if _program(part) != "git":
        return None
    return git_words_verb([w for w in part.words[1:] if w is not None])


def git_words_verb(words: Sequence[str]) -> tuple[str, list[str]] | None:
    """The verb of git's arguments `words` (after `git`) and the words after it, past git's own options and the value
    each of `-C`, `-c`, `--git-dir`, `--work-tree`, `--namespace` takes; None without one."""
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if index >= len(words):
        return None
    return words[index], list(words[index + 1 :])


def _git_writes_config(part: SimpleCommand) -> str | None:
    found = _git_verb(part)
    if found is None:
        return None
    verb, rest = found
    if verb == "config":
        if any(w in _GIT_CONFIG_WRITES for w in rest):
            return "git config writes git's configuration (a protected path)"
        reading = any(w in _GIT_CONFIG_READS for w in rest) or bool(rest[:1] and rest[0] in _GIT_CONFIG_READ_VERBS)
        if not reading and len([w for w in rest if not w.startswith("-")]) != 1:
            return "git config writes git's configuration (a protected path)"
        return None
    if verb in _GIT_WRITING_VERBS and rest[:1] and rest[0] in _GIT_WRITING_VERBS[verb]:
        return f"git {verb} {rest[0]} writes .git/config (a protected path)"
    if verb in ("init", "clone") and any(w.split("=", 1)[0] in _GIT_WRITING_OPTIONS for w in rest):
        return f"git {verb} with a template or configuration writes hooks or config (a protected path)"
    return None


_GIT_REMOTE_VERBS = frozenset({"push", "fetch", "pull", "ls-remote"})
"""Verbs that run git in another repository when it is on this machine (receive-pack, upload-pack)."""
_REMOTE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|[^/:]+:")
"""A URL (`https://`, `ssh://`) or scp-like `host:path`: a repository elsewhere. `file://` is here."""


def _git_local_repository(part: SimpleCommand, scope: _Scope) -> str | None:
    """`git push ./x` runs git inside `x` on this machine: its hooks and its own `config` (a
    directory of plain files the model wrote: `core.fsmonitor` with `receive.denyCurrentBranch =
    updateInstead` runs a command), none of it under a protected name. A repository named by a
    path, a `file://` URL, or a name that is a directory here is asked; a remote's name is not."""
    found = _git_verb(part)
    if found is None or found[0] not in _GIT_REMOTE_VERBS:
        return None
    verb, rest = found
    operands = [w for w in rest if not w.startswith("-")]
    repos = [w.split("=", 1)[1] for w in rest if w.startswith("--repo=")] + operands[:1]
    for repo in repos:
        local = repo.startswith("file://") or not _REMOTE_URL.match(repo)
        named = "/" in repo or repo.startswith((".", "~")) or _made_here(repo, part, scope)
        if local and (named or any(os.path.lexists(place / repo) for place in scope.places)):
            return f"git {verb} {repo} runs git inside that repository on this machine (its hooks and config)"
    return None


def _git_elsewhere(part: SimpleCommand, scope: _Scope) -> str | None:
    """Why git may run in a repository outside the roots (`git -C ../other status`, `cd /srv/repo && git log`, `git
    --work-tree=/x diff`), or None. There git obeys that repository's `config`: its filters (`filter.<x>.clean` on
    `git status`), diff drivers and textconv, hooks, `core.sshCommand`, aliases, ..., none of it a protected path of
    this workspace, all of it written by whoever wrote that repository (round 40: an allow of `git` let `git -C
    /tmp/evil status` run a clean filter). The runtime's own settings (`core.fsmonitor=false`, `GIT_PAGER=cat`) stop
    two of these only. A folder is outside when its real path is, as the kernel resolves it and as bash's `cd` does
    (`..` first); the words before the verb are read as git reads them (each `-C` from the one before)."""
    if _program(part) != "git":
        return None
    words = [w for w in part.words[1:] if w is not None]
    folders = [str(place) for place in scope.places]
    trees: list[str] = []
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] not in ("-", "--"):
        key, has_value, value = words[index].partition("=")
        if key in ("-C", "--work-tree") and not has_value and index + 1 < len(words):
            value, index = words[index + 1], index + 1
        if key == "-C" and value:
            folders = [posixpath.join(folder, value) for folder in folders]
        elif key == "--work-tree" and value:
            trees.append(value)
        elif key == "--namespace" and not has_value:
            index += 1
        index += 1
    for folder in [*folders, *(posixpath.join(folder, tree) for folder in folders for tree in trees)]:
        lexical = Path(posixpath.normpath(folder))
        try:  # where the kernel takes git (`lnk/..` is the parent of the link's target), and where bash's `cd` does
            reals = {Path(os.path.realpath(folder)), Path(os.path.realpath(lexical))}
        except (OSError, ValueError):
            reals = {lexical}
        # the real paths alone: the roots are real, and a workspace reached by a link (`/tmp` on macOS) is no outside
        if any(not any(path == root or path.is_relative_to(root) for root in scope.roots) for path in reals):
            return (
                f"git runs in {clip(str(lexical), 200, more='…')}, outside the workspace: it obeys that repository's "
                "config (filters, diff drivers, hooks, aliases)"
            )
    return None


def _made_here(word: str, part: SimpleCommand, scope: _Scope) -> bool:
    """Whether another part of the command may make `word` (`git init --bare x && git push x`): it
    names it, or is unknown."""
    return any(
        maker is not part and (maker.unknown is not None or word in maker.words or word in maker.writes)
        for maker in scope.makers
    )


# --- commands that write the paths their input names ---------------------------------------------

TREE_CHECK_MAX_ENTRIES = 10_000
"""The most directory entries searched for a protected name in the trees one command copies,
deletes or replaces whole; a command reaching more is asked (searching on would hold the call, and
nothing is allowed unsearched)."""


def _input_write(name: str, part: SimpleCommand, writer: InputWriter, scope: _Scope) -> str | None:
    """Why an `[[input_writer]]` command may write a protected path its input names, or None when
    its words fit the safe form of its entry (then only its arguments name what it writes)."""
    if any(word is None for word in part.words[1:]):
        return f"{name} with an argument only known at run time may write a protected path ({writer.why})"
    args = [word for word in part.words[1:] if word is not None]
    unsafe = _unsafe_option(args, writer.unsafe_options)
    if unsafe is None:
        unsafe = next((w for w in args if any(p.search(w) for p in writer.unsafe_words)), None)
    if unsafe is not None:
        return f"{name} may write a protected path ({writer.why}): it is given {unsafe}"
    if writer.modes:
        detail = _option_form(args, writer)
    elif writer.verbs:
        detail = _verb_form(args, writer)
    elif writer.script == "sed":
        detail = _sed_form(args, scope)
    elif writer.script == "awk":
        detail = _awk_form(args)
    elif writer.sources or writer.unsafe_options or writer.unsafe_words or writer.changes_trees is not None:
        detail = None
    else:
        detail = "no form of it is known to write only what its arguments name"
    if detail is not None:
        return f"{name} may write a protected path ({writer.why}): {detail}"
    if writer.sources:
        why = _sources(name, args, writer, scope)
        if why is not None:
            return why
    if writer.changes_trees is not None:
        return _tree_changes(name, part, args, writer, scope)
    return None


def _unsafe_option(args: Sequence[str], unsafe: Sequence[str]) -> str | None:
    """The first of `unsafe` given in `args`: whole, with a value (`--rsh=..`), abbreviated as
    getopt allows (`--upload-p`), or as a letter of a cluster (`-avze`)."""
    if not unsafe:
        return None
    letters = {option[1] for option in unsafe if len(option) == 2 and option[0] == "-"}
    for word in args:
        if word == "--":
            break
        key = word.split("=", 1)[0]
        if key.startswith("--"):
            if len(key) > 2 and any(option.startswith(key) for option in unsafe if option.startswith("--")):
                return key
        elif key.startswith("-") and len(key) > 1:
            if key in unsafe:
                return key
            hit = next((letter for letter in word[1:] if letter in letters), None)
            if hit is not None:
                return f"-{hit}"
    return None


def _option_form(args: Sequence[str], writer: InputWriter) -> str | None:
    """None if one of the entry's `modes` is given and every option is one of its `options`."""
    seen: set[str] = set()
    for arg in _getopt(args, writer.takes, bundled_first=writer.bundled_first):
        if arg.operand:
            continue
        if arg.word.startswith("--"):
            key = arg.word
            matches = [option for option in writer.long_options if option.startswith(key)] if len(key) > 2 else []
            if not matches:
                return f"an option it is not known to be safe with: {key}"
            seen.update(matches)
        elif arg.word[-1] in writer.options:
            seen.add(arg.word[-1])
        else:
            return f"an option it is not known to be safe with: {arg.word}"
    if not seen & writer.modes:
        return f"without {' or '.join(sorted(writer.modes))}, the forms that write only what its arguments name"
    return None


def _verb_form(args: Sequence[str], writer: InputWriter) -> str | None:
    """None if the subcommand (after the global options it is known with) is one of `verbs`."""
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "-":
        word = args[index]
        key = word.split("=", 1)[0]
        attached = any(len(g) == 2 and key.startswith(g) and len(key) > 2 for g in writer.global_valued)
        if key not in writer.global_options and not attached:
            return f"an option it is not known to be safe with: {key}"
        index += 2 if key in writer.global_valued and "=" not in word else 1
    rest = tuple(args[index:])
    if not rest:
        return None if writer.bare else "without a subcommand it does what its files say"
    if any(rest[: len(verb)] == verb for verb in writer.verbs):
        return None
    return f"the subcommand {rest[0]!r} is not one known to write only what its arguments name"


def _sources(name: str, args: Sequence[str], writer: InputWriter, scope: _Scope) -> str | None:
    """Why copying these operands whole may write a protected path (`sources = true`), or None."""
    operands: list[str] = []
    recursive = writer.recursive is None
    target = False
    targets: list[str] = []
    for arg in _getopt(args, writer.takes):
        key = arg.word
        if arg.operand:
            operands.append(key)
            continue
        if key.startswith("--"):
            given = "--target-directory".startswith(key) and len(key) > 4
            recursive = recursive or any(o.startswith(key) for o in writer.recursive or () if o.startswith("--"))
        else:
            given = key == "-t" and "t" in writer.valued
            recursive = recursive or key in (writer.recursive or ())
        target = target or given
        if given and arg.value:
            targets.append(arg.value)
    if not recursive:
        return None
    sources = operands if target else operands[:-1]
    # where the copy lands: the -t directory, or the last operand (any operand when -t has no value here)
    targets = targets or (operands if target else operands[-1:])
    for source in sources:
        if _REMOTE.match(source):
            return f"{name} copies {source}, which a remote host holds: what it writes cannot be searched"
        for place in scope.places:
            why = _tree_search(source, place, scope, missing_ok=False, into=_landings(source, targets, place))
            if why is not None:
                return f"{name} copies {why}"
    return None


def _landings(source: str, targets: Sequence[str], place: Path) -> list[Path]:
    """The directories a copy of `source` into `targets` may put its entries under: each target
    itself (`cp -r src/. dst`, `rsync src/ dst`) and the source's name inside it (`cp -r src dst`)."""
    found: list[Path] = []
    for target in targets:
        base = place / target
        if not _REMOTE.match(target) and os.path.isdir(base):
            found.extend((base, base / posixpath.basename(posixpath.normpath(source))))
    return found


_REMOTE = re.compile(r"[^/]*:")
"""`host:path`, `user@host:path`, `rsync://..`: a source whose content is on another machine."""


def _tree_changes(
    name: str, part: SimpleCommand, args: Sequence[str], writer: InputWriter, scope: _Scope
) -> str | None:
    """Why a command that deletes, replaces or changes every file of a directory it names
    (`changes_trees`: `rm -r`, `rsync --delete`, `gzip -r`) may change a protected path, or None.

    Every operand, source or target, is searched from every place the command may run in: `rm -rf
    vendor` deletes `vendor/lib/.git/hooks`, which the name `vendor` does not say. An operand that
    does not exist deletes nothing, unless another part of the same command makes it (`ln -s
    vendor x && rm -rf x/`): it is allowed only when no other part of the command may make a path
    (the order of the parts is not followed: a loop runs a later part before an earlier one again).
    """
    if writer.changes_trees and _unsafe_option(args, writer.changes_trees) is None:
        return None
    root = next((w for w in part.via if w in protected_paths().root_changers), None)
    if root is not None:
        return f"{name} runs under {root}, in another root directory: what its operands hold cannot be searched"
    given = list(_getopt(args, writer.takes))
    operands = [arg.word for arg in given if arg.operand]
    mode_given = any(a.word[-1] in writer.mode_letters for a in given if not a.operand and a.word[:2] != "--")
    if writer.mode_operand and not mode_given and _unsafe_option(args, ("--reference",)) is None:
        operands = operands[1:]
    for operand in operands:
        for place in scope.places:
            why = _tree_search(operand, place, scope, missing_ok=all(m is part for m in scope.makers))
            if why is not None:
                return f"{name} may change a protected path ({writer.why}): it changes {why}"
    return None


def _tree_search(
    operand: str, place: Path, scope: _Scope, *, missing_ok: bool, into: Sequence[Path] = ()
) -> str | None:
    """What makes the directory `operand` names from `place` unsafe to take whole, or None: a
    protected name in it, a link in it leading to a protected path, more entries than are searched
    (`scope.entries_left`, shared by the whole command), a directory that cannot be read, or, unless
    `missing_ok`, that it does not exist yet (what will be there cannot be seen). Links are never
    followed inside the tree; the operand itself is resolved (`rm -rf link/` empties the target).

    For a copy, `into` are the directories its entries land under: an entry whose place there is
    reached through a link to a protected path (`pc -> .git/hooks/pre-commit`, which `cp -r`
    writes through) is a reason too."""
    try:
        real = os.path.realpath(place / operand)
        info = os.stat(real)
    except (OSError, ValueError):
        return None if missing_ok else f"{operand}, which does not exist yet: what it will hold cannot be searched"
    key = (info.st_dev, info.st_ino, tuple(into))
    if not stat.S_ISDIR(info.st_mode) or key in scope.searched:
        return None
    scope.searched.add(key)
    pending = [(real, relative_to_roots(Path(real), scope.roots), "")]
    # Each entry is judged on its label, relative to its root, unless a root's own place may begin a protected path
    # (`~/.config`, a `.git`: `_protected_or_holder`), when on its whole path (`protected_path`). Exactly as the whole
    # path, at a third of the cost: a pattern's search costs with every `/` of the text, 10,000 entries at most.
    whole = any(_protected_or_holder(root) for root in scope.roots if Path(real).is_relative_to(root))
    while pending:
        directory, label, inner = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    scope.entries_left -= 1
                    if scope.entries_left < 0:
                        return f"{operand}, which holds too many entries to search (over {TREE_CHECK_MAX_ENTRIES:,})"
                    relative = posixpath.join(label, entry.name)
                    hit = protected_paths().match(entry.path if whole else relative)
                    if hit is not None:
                        return f"{relative}, a protected path ({hit})"
                    written = posixpath.join(inner, entry.name)
                    for landing in into:
                        lands = Path(os.path.realpath(landing / written))
                        hit = protected_path(lands)
                        if hit is not None:
                            shown = relative_to_roots(lands, scope.roots)
                            return f"{relative} over a link that leads to {shown}, a protected path ({hit})"
                    if entry.is_symlink():
                        hit = _link_leads(entry.path)
                        if hit is not None:
                            return f"{relative}, a link to {hit}"
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append((entry.path, relative, written))
        except OSError as exc:
            return f"{operand}, which cannot be searched ({exc.strerror})"
    return None


LINK_SCAN_MAX_ENTRIES = 200_000
"""The most entries `protected_links` looks at (about half a second): a run's workspace with `node_modules` often
holds more than a copy's `TREE_CHECK_MAX_ENTRIES`, and past the bound every edit is denied."""


def protected_links(roots: Sequence[Path], limit: int = LINK_SCAN_MAX_ENTRIES) -> list[str] | None:
    """The symbolic links under `roots` (none followed) that lead to a protected path or directory (`_link_leads`:
    `docs/e -> ../.envrc`, `docs/v -> ../.vscode`), and what a protected link leads to in a root (`scripts/hook.sh`
    for `.git/hooks/pre-commit -> ../../scripts/hook.sh`, `hooks` for `.git/hooks -> ../hooks`: a write there changes
    the protected path, `linked_from_protected`), each relative to the root that holds it; None when the roots hold
    more than `limit` entries (what lies past them cannot be vouched for). For a program that writes through a link
    and judges only the text of a path (the Gemini CLI's `--policy` rules on `file_path`)."""
    found: list[str] = []
    data = protected_paths()
    try:
        for root, entry, link in _files_under(roots, limit):
            if link:
                relative = Path(entry.path).relative_to(root).as_posix()
                if _link_leads(entry.path) is not None:
                    found.append(relative)
                elif data.match(entry.path) is not None or data.match_holder(entry.path) is not None:
                    found.extend(_link_target(entry.path, roots))
    except _TooMany:
        return None
    return found


class _TooMany(Exception):
    """`_files_under` met more entries than its limit."""


def _files_under(roots: Sequence[Path], limit: int) -> Iterator[tuple[Path, os.DirEntry[str], bool]]:
    """(root, entry, whether it is a symbolic link) of every entry under `roots` that is no directory (a link to one
    included: no link is followed), depth first; a folder that cannot be read is passed over. Raises `_TooMany` past
    `limit` entries, directories counted: what lies past them cannot be vouched for. The walk of `protected_links`
    and `credential_aliases`."""
    left = limit
    for root in roots:
        pending = [root]
        while pending:
            directory = pending.pop()
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        left -= 1
                        if left < 0:
                            raise _TooMany
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(Path(entry.path))
                        else:
                            yield root, entry, entry.is_symlink()
            except OSError:
                continue


def credential_aliases(roots: Sequence[Path], limit: int = LINK_SCAN_MAX_ENTRIES) -> list[str] | None:
    """The entries under `roots` that are a credential file (`credential_ids`) by any name: a hard link to one, a
    symbolic link (or a chain of them) leading to one, the file itself where a root holds it (a home folder), each
    relative to the root that holds it; None when the roots hold more than `limit` entries. No directory link is
    followed (what it leads to inside a root is searched there). For a program whose read tools judge only the text of
    a path (the Gemini CLI's `--policy` rules on `file_path`). Searched only when a credential file has other names
    or lies inside a root: without either, no name in the roots can be one, and nothing is listed."""
    credentials = credential_ids()
    inside = False
    linked = False
    for path in credentials.values():
        with contextlib.suppress(OSError, ValueError):
            linked = linked or os.stat(path).st_nlink > 1
            real = Path(os.path.realpath(path))
            inside = inside or any(real.is_relative_to(os.path.realpath(root)) for root in roots)
    if not (linked or inside):
        return []
    inodes = {inode for _device, inode in credentials}
    found: list[str] = []
    try:
        for root, entry, link in _files_under(roots, limit):
            if (link or entry.inode() in inodes) and _credential_at(Path(entry.path), credentials):
                found.append(Path(entry.path).relative_to(root).as_posix())
    except _TooMany:
        return None
    return found


PROTECTED_LINK_SCAN_MAX_ENTRIES = 20_000
"""The most entries `linked_from_protected` looks at for one written file; past it the write is asked."""


def _glob_component(part: str) -> str:
    """A regex of the names one glob component matches, or of more (`glob_links_out`)."""
    if any(char in part for char in "[]{}"):
        return "[^/]+"
    return "".join("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in part)


GLOB_MAGIC = re.compile(r"[*?\[\]{}]")
"""What makes a glob pattern's component a pattern rather than a name (a brace list too: ripgrep's globs take one)."""


def glob_links_out(place: Path, pattern: str, roots: Sequence[Path], limit: int = LINK_SCAN_MAX_ENTRIES) -> str | None:
    """Why a glob of `pattern` from the folder `place` may list a folder outside `roots` through a link that a wildcard
    folder of the pattern matches (`*/lnk/x`, `**/lnk/*`, `a*/x` with `ab` a link out to a folder), or None. The
    pattern's literal leading folders are judged as a path by the caller (round 25); this walks what its wildcard
    folders may match (no link followed, at most `limit` entries: past them, what lies further cannot be vouched for)
    and judges each link a folder of the pattern may name. `*` and `?` are read as the glob reads them, a component
    with a class or a brace list as any one name, `**` as any run of names: wider than the glob itself, so a link is
    judged that the glob would pass by, never one it passes through unjudged."""
    parts = [part for part in pattern.split("/")[:-1] if part not in ("", ".")]
    literal = list(itertools.takewhile(lambda part: not GLOB_MAGIC.search(part), parts))
    rest = parts[len(literal) :]
    if all(part == "**" for part in rest):
        # none (the literal folder, judged by the caller), or `**` alone (`**/*.py`): a link is matched by no name of
        # the pattern's, only by a walk into every folder, which ripgrep's does not follow (the CLI's Glob: `--files`
        # without `--follow`); walking each such Glob's tree would cost every run's most common search
        return None
    try:
        start = Path(os.path.realpath(place.joinpath(*literal)))
    except (OSError, ValueError):
        return None
    if not any(start.is_relative_to(root) for root in roots):
        return None  # the literal folder is outside: the caller's judgement of it asks
    pieces = ["(?:[^/]+/)*" if part == "**" else _glob_component(part) + "/" for part in rest]
    try:
        # RE2, not `re`: the pattern is the model's, and `*a*a*a...` or `**/**/**/...` against a long name or a
        # deep folder backtracked in `re` for minutes, holding the GIL, so every task of the host stopped (round 31)
        folders = compile_pattern("|".join(f"(?:{''.join(pieces[:end])})" for end in range(1, len(pieces) + 1)))
    except PatternError:
        return f"its folders make a pattern too large to check for a link out of the workspace ({len(rest)} folders)"
    cut = len(str(start).rstrip("/")) + 1
    deepest = None if "**" in rest else len(rest)
    left = limit
    pending = [(start, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            continue
        left -= len(listed)
        if left < 0:
            return f"its folders match more than {limit:,} entries, where a link out of the workspace may lie"
        for entry in listed:
            if folders.fullmatch(matchable(entry.path[cut:]) + "/") is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                if entry.is_symlink():
                    real = Path(os.path.realpath(entry.path))
                    # only a folder is passed through (a venv's `bin/python3 -> /usr/bin/python3.11` is not)
                    if real.is_dir() and not any(real.is_relative_to(root) for root in roots):
                        shown = relative_to_roots(Path(entry.path), roots)
                        return (
                            f"{shown} is a link out of the workspace (to {real}) that a folder of the pattern matches"
                        )
                elif entry.is_dir(follow_symlinks=False) and (deepest is None or depth + 1 < deepest):
                    pending.append((Path(entry.path), depth + 1))
    return None


def linked_from_protected(
    path: Path, roots: Sequence[Path], limit: int = PROTECTED_LINK_SCAN_MAX_ENTRIES
) -> str | None:
    """Why writing the file at the real path `path` (there or not yet: a dangling link comes alive) changes a
    protected path through a symbolic link to it, or None (`LinkSearch.reason`, for one path)."""
    return LinkSearch(roots, limit).reason(path)


@dataclasses.dataclass(frozen=True)
class _Link:
    relative: str
    """The protected link (or a link that holds protected paths: `.vscode -> conf/vscode`), relative to its root."""
    path: str
    """The same, absolute: what the patterns judge (`protected_path`)."""
    leads: tuple[int, int] | None
    """What it leads to, by device and inode; None when that is not there yet."""
    dangling: Path | None
    """Where it leads when that is not there yet."""


class LinkSearch:
    """The protected links beside the folders of the paths one call or command writes (`reason`), each folder listed
    once: a command naming 2,000 files in one folder listed it (and `.git`, `node_modules/.bin`) 2,000 times, 11 s.

    The link is protected, not what it leads to: `node_modules/.bin/prettier -> ../prettier/bin/prettier.cjs`,
    `.venv/bin/tool -> ../../scripts/tool.py`, `.git/hooks/pre-commit -> ../../scripts/hook.sh`, `.envrc -> env.sh`,
    or a folder above it (`.git/hooks -> ../hooks`, `.vscode -> conf/vscode`); a write to the target's own name
    changes what `npx prettier`, the next commit, direnv or the editor runs. Looked for beside each folder from the
    path up to its root: the links among the entries there, and two levels into those that are protected or hold
    protected paths (`.git/hooks/*`, `node_modules/.bin/*`), none followed; past `limit` entries in all (a huge
    folder on the way) the answer is a doubt, a reason."""

    def __init__(self, roots: Sequence[Path], limit: int = PROTECTED_LINK_SCAN_MAX_ENTRIES) -> None:
        self.roots = roots
        self.limit = limit
        self._left = limit
        self._beside: dict[Path, dict[object, list[_Link]]] = {}

    def reason(self, path: Path) -> str | None:
        """Why writing the real path `path` changes a protected path through a link, or None."""
        holders = [root for root in self.roots if path.is_relative_to(root) and path != root]
        if not holders:
            return None
        root = max(holders, key=lambda r: len(r.parts))
        above = [path.parent, *path.parent.parents]
        above = above[: above.index(root) + 1]
        # what a link may lead to, by device and inode (one `stat` of each link, not a `realpath`: 300 links of
        # node_modules/.bin took 120 ms that way): the file, or a folder above it
        reached: dict[tuple[int, int], Path] = {}
        for place in (path, *above):
            with contextlib.suppress(OSError):
                info = os.stat(place)
                reached.setdefault((info.st_dev, info.st_ino), place)
        data = protected_paths()
        for directory in above:
            links = self._links(directory)
            if isinstance(links, str):
                return links
            # by what each leads to: a command naming 2,000 files beside 300 `.bin` links looks up a few keys each
            candidates = [(link, leads) for key, leads in reached.items() for link in links.get(key, ())]
            candidates += [(link, path) for link in links.get(path, ())]
            for link, leads in candidates:
                tail = "" if leads == path else f"/{path.relative_to(leads).as_posix()}"
                name = link.relative + tail
                hit = data.match(link.path + tail)
                if hit is not None:
                    return f"it is {name} ({hit}) through the link {link.relative}"
        # Past the index's bound only the search beside the file (above) applies: asking every write there would
        # take every edit from a workspace with a large node_modules (over 200,000 entries is common), for a link
        # that must already exist deep in it, made by no tool unasked (docs/tools.md says what is then not seen).
        deep = deep_protected_targets(self.roots) or {}
        for place in (path, *above[:-1]):  # a nested repository's `a/b/.git/hooks/x -> ../../../../scripts/x`
            deep_link = deep.get(place)
            if deep_link is not None:
                return f"a protected link deeper in the workspace leads to it: {deep_link}"
        return None

    def _links(self, directory: Path) -> dict[object, list[_Link]] | str:
        """The protected links beside `directory`, by what each leads to (device and inode; a dangling one's path)."""
        found = self._beside.get(directory)
        if found is None:
            listed: list[_Link] = []
            why = self._scan(directory, 0, listed)
            if why is not None:
                return why
            found = {}
            for link in listed:
                found.setdefault(link.leads if link.leads is not None else link.dangling, []).append(link)
            self._beside[directory] = found
        return found

    def _scan(self, directory: Path, depth: int, found: list[_Link]) -> str | None:
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            return None
        self._left -= len(listed)
        if self._left < 0:
            return (
                f"the folders around it hold too many entries to search for a protected link to it "
                f"(over {self.limit:,})"
            )
        data = protected_paths()
        base = relative_to_roots(directory, self.roots)
        prefix = "" if base in ("", ".") else f"{base}/"
        every = data.match(f"{directory}/{_PROBE_NAME}") is not None  # inside `.git/**`: each entry is protected
        for entry in listed:
            if not every and not _may_be_protected(entry.name):  # most entries: no pattern's search (26 us each)
                continue
            relative = prefix + entry.name
            protected = data.match(entry.path)
            if entry.is_symlink():
                if protected is None and data.match_holder(entry.path) is None:
                    continue
                try:
                    info = os.stat(entry.path)
                    found.append(_Link(relative, entry.path, (info.st_dev, info.st_ino), None))
                except FileNotFoundError:  # dangling: it leads to the file once the file is written
                    with contextlib.suppress(OSError, ValueError):
                        found.append(_Link(relative, entry.path, None, Path(os.path.realpath(entry.path))))
                except (OSError, ValueError):
                    continue
            elif depth < 2 and entry.is_dir(follow_symlinks=False) and (protected or data.match_holder(entry.path)):
                why = self._scan(Path(entry.path), depth + 1, found)
                if why is not None:
                    return why
        return None


DEEP_LINKS_TTL_S = 10.0
"""How long the index of the protected links anywhere in the roots (`deep_protected_targets`) is reused. A link made
meanwhile is a write of a protected path (`.git/hooks/x`), asked itself; the search beside each written file
(`LinkSearch`) still sees those near it at once."""

_deep_cache: dict[tuple[Path, ...], tuple[float, dict[Path, str] | None]] = {}


def deep_protected_targets(roots: Sequence[Path]) -> dict[Path, str] | None:
    """What each protected link anywhere under `roots` leads to (its real path, there or not yet), with the link:
    `LinkSearch` looks two folders deep beside each folder on a written file's way up, and a nested repository's
    `a/b/.git/hooks/x -> ../../../../scripts/x` is deeper (round 18). One walk of the roots (`protected_links`'
    bound, `LINK_SCAN_MAX_ENTRIES`), kept `DEEP_LINKS_TTL_S`; None past the bound (what lies past it is not
    known: `LinkSearch` then relies on its search beside the file alone)."""
    key = tuple(roots)
    now = time.monotonic()
    cached = _deep_cache.get(key)
    if cached is not None and now - cached[0] < DEEP_LINKS_TTL_S:
        return cached[1]
    found: dict[Path, str] = {}
    left = LINK_SCAN_MAX_ENTRIES
    data = protected_paths()
    for root in roots:
        pending: list[tuple[str, str, bool]] = [(str(root), "", False)]
        while pending and left >= 0:
            directory, prefix, inside = pending.pop()
            try:
                with os.scandir(directory) as entries:
                    listed = list(entries)
            except OSError:
                continue
            left -= len(listed)
            # inside `.git/**` each entry is protected; a folder is looked up only when its name may be one, a root
            # always (it may itself be in one: an include directory `.git/hooks`)
            every = inside or (
                (prefix == "" or _may_be_protected(os.path.basename(directory)))
                and data.match(f"{directory}/{_PROBE_NAME}")
            )
            for entry in listed:
                if entry.is_symlink():
                    if not every and not _may_be_protected(entry.name):  # most links: no pattern's search
                        continue
                    relative = prefix + entry.name
                    if data.match(entry.path) is not None or data.match_holder(entry.path) is not None:
                        with contextlib.suppress(OSError, ValueError):
                            found.setdefault(Path(os.path.realpath(entry.path)), relative)
                elif entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{prefix}{entry.name}/", bool(every)))
    index = found if left >= 0 else None
    if len(_deep_cache) > 16:
        _deep_cache.clear()
    _deep_cache[key] = (now, index)
    return index


_PROBE_NAME = "unified-probe-\x01"
"""A name no pattern names: protected inside a folder only if every name there is (`.git/**`)."""


@functools.cache
def _last_names() -> tuple[frozenset[str], re.Pattern[str]]:
    """The last components of the patterns (`/**` left off) and of the folders holding them, folded, and those of
    them with a wildcard (`*.pth`, `mise.*.toml`) as one regex: an entry named otherwise is protected only inside a
    `/**` folder."""
    data = protected_paths()
    last = {p.removesuffix("/**").rsplit("/", 1)[-1].casefold() for p in (*data.patterns, *data.holders)}
    wild = [fnmatch.translate(n) for n in sorted(last) if any(c in n for c in "*?[")]
    return frozenset(last), re.compile("|".join(wild) or "(?!)")


def _may_be_protected(name: str) -> bool:
    """Whether a pattern may name an entry called `name` (a quick look before the patterns' search), in the form the
    patterns are matched in (`folded_name`: a link `.envr<U+200C>c` is `.envrc` on HFS+, round 36)."""
    names, wild = _last_names()
    folded = folded_name(name)
    return folded in names or wild.match(folded) is not None


def hard_linked(path: Path) -> str | None:
    """Why a write in place (a shell redirection, a writer program, a backend's own edit tool: not unified's file
    tools, which write a new file and rename it over the name) into the existing file `path` changes more than that
    name, or None: a file with other names (hard links) changes under each (a protected one, `.git/config`, or one
    outside the workspace: a package store's file that every project links to)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if other_names(info) is not None:
        return f"it has {info.st_nlink} names (hard links), and a write in place changes the file under each"
    return None


def _link_target(link: str, roots: Sequence[Path]) -> list[str]:
    """What the protected `link` leads to, relative to the deepest root holding it, if in one and not a root itself
    (`protected_links`)."""
    try:
        real = Path(os.path.realpath(link))
    except (OSError, ValueError):
        return []
    holders = [root for root in roots if real.is_relative_to(root) and real != root]
    if not holders:
        return []
    return [real.relative_to(max(holders, key=lambda r: len(r.parts))).as_posix()]


def _link_leads(path: str) -> str | None:
    """The protected path or directory a link in a searched tree leads to, from where it is or from
    wherever a copy puts it (its text, `../.git`), or None: a later write through it lands there."""
    try:
        text = os.readlink(path)
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    hit = _protected_or_holder(Path(posixpath.normpath(text))) or _protected_or_holder(real)
    return None if hit is None else f"{text} ({hit})"


def _prefix_write(name: str, args: Sequence[str], entry: Mapping[str, Any], scope: _Scope) -> str | None:
    """`split -a 1 x .bashr` writes `.bashrc`: the names a prefix may grow into are judged."""
    valued = {str(v) if str(v).startswith("-") else f"-{v}" for v in entry.get("valued", ())}
    options: dict[str, str] = {}
    operands: list[str] = []
    for arg in _getopt(args, lambda option: _VALUE if option in valued else _NO_VALUE):
        if arg.operand:
            operands.append(arg.word)
        elif arg.value is not None:
            options[arg.word] = arg.value
    where = str(entry["prefix"])
    prefix = (operands[1] if len(operands) > 1 else None) if where == "operand" else options.get(where)
    if not prefix:
        return None
    directory, stem = posixpath.split(prefix)
    names = [prefix + re.sub(r"%[^a-zA-Z%]*[a-zA-Z%]", "", options.get(str(entry.get("format")), ""))]
    for pattern in protected_paths().patterns:
        # the file name only: a pattern's directories match the prefix's own or not (judged whole below)
        last = pattern.casefold().replace("**", "*").replace("?", "*").rsplit("/", 1)[-1]
        head, tail = last.split("*", 1)[0], last.rsplit("*", 1)[-1]
        grown = None
        if last == "*":  # `.git/**`: any name in a protected directory, which the prefix names itself
            continue
        if head.startswith(stem.casefold()):  # `.bashr` grows into `.bashrc`, `i` into `id_x`
            grown = head + ("x" + tail if "*" in last else "")
        elif "*" in last and stem.casefold().startswith(head):  # `evil.p` grows into `evil.p.pth`
            grown = stem + tail
        if grown is not None:
            names.append(posixpath.join(directory, grown))
    for grown in names:
        hit = _names_protected(grown, scope)
        if hit is not None:
            return f"{name} names what it writes by the prefix {prefix}, which may make {grown} ({hit})"
    return None


def _suffix_write(name: str, args: Sequence[str], scope: _Scope, *, strips: bool) -> str | None:
    """`cp -b -S rc x .bash` writes `.bashrc`: each operand with the backup suffix is judged; with
    `strips` (a decompressor: `gunzip .bashrc.gz` writes `.bashrc`), each operand without its last
    suffix, and without the `-S` one, too."""
    suffix = _suffix_option(args)
    for word in args:
        if word.startswith("-"):
            continue
        written = [word + suffix] if suffix and name in protected_paths().backup_suffix else []
        if strips:
            stem = re.sub(r"[._-][^./_-]*$", "", word)
            written += [stem, word.removesuffix(suffix)] if suffix else [stem]
        for name_written in written:
            hit = _names_protected(name_written, scope) if name_written and name_written != word else None
            if hit is not None:
                return f"{name} writes {word} as {name_written} ({hit})"
    return None


def _suffix_option(args: Sequence[str]) -> str:
    """The suffix a `-S SUF` / `--suffix=SUF` (abbreviated, or at the end of a cluster) gives; "" if none."""
    suffix = None
    for index, word in enumerate(args):
        key, eq, value = word.partition("=")
        if key.startswith("--") and len(key) > 3 and "--suffix".startswith(key):
            suffix = value if eq else (args[index + 1] if index + 1 < len(args) else "")
        elif word.startswith("-S") and not word.startswith("--"):
            suffix = word[2:] or (args[index + 1] if index + 1 < len(args) else "")
        elif word.startswith("-") and not word.startswith("--") and "S" in word[1:]:
            suffix = word[word.index("S") + 1 :] or (args[index + 1] if index + 1 < len(args) else "")
    return suffix or ""


# sed: the options GNU sed knows, and which of them take a value
_SED_LONG = {
    "--expression": "script",
    "--file": "file",
    "--in-place": "suffix",
    "--line-length": "value",
    "--quiet": "",
    "--silent": "",
    "--regexp-extended": "",
    "--separate": "",
    "--null-data": "",
    "--zero-terminated": "",
    "--posix": "",
    "--debug": "",
    "--sandbox": "",
    "--unbuffered": "",
    "--follow-symlinks": "",
    "--binary": "",
}
_SED_SHORT = {"e": "script", "f": "file", "l": "value", "i": "suffix"} | dict.fromkeys("nrEsuzb", "")


def _sed_kind(option: str) -> str | None:
    """What a sed option is (the kinds of `_SED_LONG`), a long one written in full or abbreviated as
    getopt allows; None for one sed does not know."""
    if not option.startswith("--"):
        return _SED_SHORT.get(option[-1])
    matches = [name for name in _SED_LONG if name.startswith(option)] if len(option) > 2 else []
    if option not in _SED_LONG and len(matches) != 1:
        return None
    return _SED_LONG[option if option in _SED_LONG else matches[0]]


def _sed_takes(option: str) -> int:
    kind = _sed_kind(option)
    return _VALUE if kind in ("script", "value") else _ATTACHED if kind == "suffix" else _NO_VALUE


def _sed_form(args: Sequence[str], scope: _Scope) -> str | None:
    """None if sed's script writes no file and runs no command, and a backup it makes (`-i SUF`)
    is no protected path."""
    scripts: list[str] = []
    suffix = ""
    operands: list[str] = []
    for arg in _getopt(args, _sed_takes):
        if arg.operand:
            operands.append(arg.word)
            continue
        kind = _sed_kind(arg.word)
        if kind is None:
            return f"an option it is not known to be safe with: {arg.word}"
        if kind == "file":
            return "a script read from a file"
        if kind == "script":
            scripts.append(arg.value or "")
        elif kind == "suffix":
            suffix = arg.value or ""
    if not scripts:
        if not operands:
            return "no script"
        scripts, operands = operands[:1], operands[1:]
    why = _sed_script("\n".join(scripts))  # sed joins its -e pieces with newlines
    if why is not None:
        return why
    if suffix:
        for operand in operands:
            base = posixpath.basename(operand)
            backup = suffix.replace("*", base) if "*" in suffix else operand + suffix
            for name in {backup, posixpath.join(posixpath.dirname(operand), backup)}:
                hit = _names_protected(name, scope)
                if hit is not None:
                    return f"its backup {name} is a protected path ({hit})"
    return None


_SED_SIMPLE = frozenset("{}=dDgGhHnNpPxzF")


def _sed_script(text: str) -> str | None:
    """Why a sed script may write a file or run a command (`w`, `W`, `e`, `s///w`, `s///e`), or
    None. Any command it cannot read is a reason too: a script is judged only if read whole."""
    index, size = 0, len(text)

    def skip(chars: str) -> None:
        nonlocal index
        while index < size and text[index] in chars:
            index += 1

    def to_line_end() -> None:
        nonlocal index
        while index < size and text[index] != "\n":
            index += 2 if text[index] == "\\" else 1

    def delimited(delimiter: str) -> bool:
        """Past the next unescaped `delimiter`; False if there is none."""
        nonlocal index
        while index < size and text[index] != delimiter:
            index += 2 if text[index] == "\\" else 1
        index += 1
        return index <= size

    while True:
        skip(" \t\n;")
        if index >= size:
            return None
        for _ in range(2):  # up to two addresses
            char = text[index] if index < size else ""
            if char.isdigit() or char in "+~":
                index += 1
                skip("0123456789~")
            elif char == "$":
                index += 1
            elif char in ("/", "\\"):
                delimiter = "/" if char == "/" else text[index + 1 : index + 2]
                index += 1 if char == "/" else 2
                if not delimiter or not delimited(delimiter):
                    return "an address it cannot read"
                skip("IM")
            skip(" \t")
            if index < size and text[index] == ",":
                index += 1
                skip(" \t")
                continue
            break
        skip(" \t!")
        if index >= size:
            return "an address without a command"
        command = text[index]
        index += 1
        if command in _SED_SIMPLE:
            continue
        if command in "qQlL":
            skip(" \t0123456789")
        elif command in "#:bBtTvrR":
            # GNU sed ends a label (`:a`, `ba`) at a `;` too: `:a;e touch x` runs `e`
            while index < size and text[index] not in "\n" + (";" if command in ":bBtTv" else ""):
                index += 1
        elif command in "aic":
            to_line_end()
        elif command in "wW":
            return "its script writes a file it names (w)"
        elif command == "e":
            return "its script runs a command (e)"
        elif command in "sy":
            delimiter = text[index : index + 1]
            index += 1
            if delimiter in ("", "\n", "\\") or not delimited(delimiter) or not delimited(delimiter):
                return f"a {command} command it cannot read"
            while command == "s" and index < size and text[index] not in ";\n}":
                flag = text[index]
                if flag in "wW":
                    return "its script writes a file it names (s///w)"
                if flag == "e":
                    return "its script runs a command (s///e)"
                if flag not in "gpiImM0123456789 \t":
                    return f"an s flag it does not know ({flag})"
                index += 1
        else:
            return f"a sed command it does not know ({command})"


_AWK_LONG_FLAGS = frozenset({"--posix", "--traditional", "--re-interval", "--characters-as-bytes", "--csv"})
_AWK_PRINT_TO = re.compile(r"\bprintf?\b[^;{}\n]*[>|]")
_AWK_PIPE = re.compile(r"(?<!\|)\|(?!\|)")
_AWK_AT = re.compile(r"@\s*\w")
"""gawk's `@include`, `@load`, and its indirect calls: `f = "sys" "tem"; @f("cmd")` runs `system`."""


def _awk_form(args: Sequence[str]) -> str | None:
    """None if awk's program writes no file and runs no command: no `print > f`, `| cmd`,
    `system()`, `@include`/`@load`, and no program or extension read from a file."""
    programs: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        index += 1
        key, eq, value = word.partition("=")
        if key in ("--field-separator", "--assign"):
            index += 0 if eq else 1
        elif key == "--source":
            programs.append(value if eq else (args[index] if index < len(args) else ""))
            index += 0 if eq else 1
        elif key.startswith("--"):
            if key not in _AWK_LONG_FLAGS:
                return f"an option it is not known to be safe with: {key}"
        elif word[1] in "Fv":
            index += 0 if len(word) > 2 else 1
        elif word[1] == "e":
            programs.append(word[2:] or (args[index] if index < len(args) else ""))
            index += 0 if len(word) > 2 else 1
        elif word[1:] not in ("b", "c", "P", "r", "N", "s"):
            return f"an option it is not known to be safe with: {key}"
    if not programs:
        if index >= len(args):
            return "no program"
        programs = [args[index]]
    for program in programs:
        if "system" in program:
            return "its program runs a command (system)"
        if _AWK_PIPE.search(program):
            return "its program runs a command (|)"
        if _AWK_AT.search(program):
            return "its program reads code from a file (@include, @load) or calls a function by name (@f())"
        if _AWK_PRINT_TO.search(program):
            return "its program writes a file it names (print >)"
    return None


# --- credential files ----------------------------------------------------------------------------


def credential_files(env: Mapping[str, str] | None = None) -> list[Path]:
    """The credential files that exist now, as the environment names them (see the data file)."""
    env = os.environ if env is None else env
    found: list[Path] = []
    for entry in protected_paths().credentials:
        variable = entry.get("variable")
        if isinstance(variable, str):
            value = env.get(variable, "")
            found.extend(Path(p).expanduser() for p in value.split(os.pathsep) if p)
            continue
        path = str(entry.get("path", ""))
        for base in entry.get("under", []):
            for directory in _homes.get(str(base), ()) if " " in str(base) else (env.get(str(base)),):
                if not directory:
                    continue
                target = os.path.join(directory, path)
                found.extend(Path(p) for p in (glob.glob(target) if "*" in path else [target]))
    return found


_homes: dict[str, tuple[str, ...]] = {}
"""The caller's homes for the binaries that runs of this process used (`credential_home`), by the name the data file's
`under` gives them (`claude-code home`, `codex home`, `session-store home`)."""


def credential_home(name: str, home: Path) -> None:
    """Records `home` as a home of the binary `name` (`claude-code`, `codex`), or the root of a caller's file session
    store (`session-store`), whose credential files (the data file's entries `under` "<name> home") are then refused
    as the environment's are, for the rest of the process: a caller's `home` or `codex_home` option outside unified's
    data folder is set for the child only, and a workspace holding it (a run in the home folder) let the binaries'
    reads and unified's read its keys unasked; a caller's store root, its sessions' histories (round 28)."""
    global _credential_cache
    key, value = f"{name} home", os.path.abspath(home)
    homes = _homes.get(key, ())
    if homes[-1:] != (value,):
        _homes[key] = (*(h for h in homes if h != value), value)[-HOMES_KEPT:]
        _credential_cache = None
    if key in _BINARY_HOMES:
        real = os.path.realpath(value)
        known = _real_homes.get(key, ())
        if known[-1:] != (real,):
            _real_homes[key] = (*(h for h in known if h != real), real)[-HOMES_KEPT:]


def binary_home(path: str) -> str | None:
    """The home of a binary backend (`claude-code home`, `codex home`, as `credential_home` recorded them) the real
    absolute `path` is or lies in, named as a protected pattern; None for the rest. Round 41: a Codex home inside the
    workspace (a run in the home folder, or `codex_home` set there) was written unasked in auto_edit: its `rules/`,
    `hooks.json` or `AGENTS.md` is refused at the next run's start, but a run already going reads what the model
    wrote, and its `config.toml` and `auth.json` are the backend's own. Every write into one is asked."""
    if not path.startswith("/"):
        return None
    for key in _BINARY_HOMES:
        for home in _real_homes.get(key, ()):
            if path == home or path.startswith(home.rstrip("/") + "/"):
                return f"the {key} ({home})"
    return None


_BINARY_HOMES = ("claude-code home", "codex home")
_real_homes: dict[str, tuple[str, ...]] = {}
"""The real paths of the binaries' homes `credential_home` recorded (`binary_home`), at most `HOMES_KEPT` each."""

HOMES_KEPT = 64
"""How many homes of each kind `credential_home` keeps, the latest recorded: an orchestrator giving each run a home of
its own in a temporary folder had every lookup glob the process's whole history of runs. Each run records its own as
it starts, so a run's home is among them while it runs unless 64 runs with other homes started since. (Not pruned by
existence: a store root a run creates later would be dropped before its sessions are written.)"""


CREDENTIAL_CHECK_TTL_S = 1.0
"""How long the set of credential files is reused before it is looked up again. A link made to one
meanwhile is still refused (it has the file's device and inode); only a credential file created
within that second is seen a second late."""

_credential_cache: tuple[float, tuple[tuple[str, str], ...], dict[tuple[int, int], Path]] | None = None


def credential_ids(env: Mapping[str, str] | None = None) -> dict[tuple[int, int], Path]:
    """(device, inode) of every credential file that exists, to refuse it under any name."""
    global _credential_cache
    if env is None:
        key = tuple((k, v) for k, v in os.environ.items() if k in _credential_variables())
        now = time.monotonic()
        cached = _credential_cache
        if cached is not None and cached[1] == key and now - cached[0] < CREDENTIAL_CHECK_TTL_S:
            return cached[2]
        ids = _Checked(_credential_ids(os.environ))
        _credential_cache = (now, key, ids)
        return ids
    return _credential_ids(env)


class _Checked(dict[tuple[int, int], Path]):
    """The credential ids as `credential_ids` keeps them for a second: a hit is looked up again, fresh, before it
    counts. An inode is given to a new file as soon as its file is gone, and the files listed change (a session saved
    replaces its file at every turn, a credential file since round 26): a new file that took a replaced session
    file's inode was refused as that session for up to a second (`echo hi >out.txt` asked again, against the caller's
    allow-always, in 2 of 12 runs of a conformance scenario)."""

    def get(self, key: tuple[int, int], default: Path | None = None) -> Path | None:  # type: ignore[override]
        global _credential_cache
        if not super().__contains__(key):
            return default
        fresh = _Checked(_credential_ids(os.environ))
        if _credential_cache is not None and _credential_cache[2] is self:  # later looks use the fresh list
            _credential_cache = (time.monotonic(), _credential_cache[1], fresh)
        return dict.get(fresh, key, default)


@functools.cache
def _credential_variables() -> frozenset[str]:
    names: set[str] = set()
    for entry in protected_paths().credentials:
        if isinstance(entry.get("variable"), str):
            names.add(entry["variable"])
        names.update(str(v) for v in entry.get("under", []))
    return frozenset(names)


def _credential_ids(env: Mapping[str, str]) -> dict[tuple[int, int], Path]:
    ids: dict[tuple[int, int], Path] = {}
    for path in credential_files(env):
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        ids.setdefault((info.st_dev, info.st_ino), path)
    return ids


def credential_refusal(info: os.stat_result, shown: str) -> str | None:
    """The refusal for a file a tool is about to open, if it is a credential file."""
    if not stat.S_ISREG(info.st_mode):  # only regular files hold credentials here
        return None
    named = credential_ids().get((info.st_dev, info.st_ino))
    if named is None:
        return None
    return f"{shown} is a credential file ({named}); no tool reads or changes it."


publish("unified.tools", ["protected_path", "protected_path_patterns"], globals())
