"""Red team, round 6: the file tools' paths and walks, session ids and stored records, and conversations
imported from JSON, attacked by someone who reads the code (the shell's parser had rounds 1-5).

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a write whose path did not resolve when the call was judged (`lnk/config`, `lnk` a link leading
  outside) skipped the judged-path check: a background command re-pointing `lnk` at `.git` between
  the decision and the run made an auto_edit write land in `.git/config`, never asked;
- an `argsPattern` deny rule for `secrets/` was passed by the spellings the tools read as the same
  path: `secr\\u0000ets/key` (NUL removed), `@secrets/key` (the `@` dropped), and
  `file:///ws/%73ecrets/key` (a URL decoded);
- a path of a name over 255 bytes behind an `@` (`@aaa...`): the `@` check asked the file system,
  whose ENAMETOOLONG escaped as an OSError: write_file in default or auto_edit mode made `run_batch`
  raise (the run failed), read_file "failed unexpectedly"; and a path of 100,000 components took
  `realpath` 1.4 s (its time grows as the square of the length) before the length was checked;
- ignore files were compiled outside the call's time budget on the way to the directory asked for
  (one `.gitignore` of 10,000 patterns like `*a*a*a...` took 15 s; ten levels of them, 150 s with
  no bound and no cancellation);
- an ignore file of one 1 MiB line went to pathspec whole, whose translation grows as the square of the
  line (128,000 `*a`: 15 s), in one step no budget interrupts;
- a session record whose `updated_at` has no time zone (another tool, a hand) made every listing and
  every short id of its backend fail with TypeError (naive and aware datetimes do not compare);
- a session id over 250 characters made load, lease and delete raise the kernel's ENAMETOOLONG
  (an untyped OSError), as did a long backend name in a listing;
- a search query of nine characters (`\\pL{1000}`) compiled to 1.2 million instructions in 1.5 s with
  the GIL held (the whole host stopped), and the pattern cache kept every compiled pattern whatever its
  size (256 such queries: over 2 GB);
- write_file's placeholder check ran a Python regex tried at every position of each line holding
  `...`: `...` and 5,000 spaces took 232 s (cubic) on the event loop, GIL held: the whole host stopped;
- a NUL in a reference or id given to the PostgreSQL store (resolve, load, delete, list, save) was
  `SessionStoreUnavailable` ("cannot be reached"; hint: start the database): a working store looked down;
- a conversation of tiny values (`[[],[],...]`, `[1.5,1.5,...]`): 15 MB of JSON held 1.1 GB and 9 s
  (parse and `problem()`), so the 256 MiB a run accepts could take some 18 GiB;
- a key pasted where a field name goes came back in the ValidationError's location.

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pathspec
import pytest
from pydantic import ValidationError

from tests.hang_guard import HANG_GUARD_S
from tests.security.file_tool_calls import SECRET, Call, call, error, output, outside, text_of
from unified import _limits as limits
from unified.conversations import Conversation
from unified.errors import CorruptSession, SessionError, SessionNotFound
from unified.sessions import FileSessionStore, MemorySessionStore, SessionStore, StoredSession
from unified.tools import Policy, ToolCall, ToolRuntime
from unified.tools._base import ToolError
from unified.tools._paths import PATH_MAX, Workspace
from unified.tools._regex import compile_pattern

__all__ = ["call", "outside"]

pytestmark = [pytest.mark.anyio]


# --- a write whose path did not resolve when it was judged ------------------------------------------------------


class _RepointOnDecision:
    """Re-points a link right after the decision (as a background command racing the call would)."""

    def __init__(self, link: Path, target: Path) -> None:
        self.link, self.target = link, target

    async def decision(self, tool_call: ToolCall, event: Any) -> None:
        self.link.unlink()
        self.link.symlink_to(self.target)

    async def progress(self, tool_call: ToolCall, event: Any) -> None:
        return None


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"file_path": "lnk/config", "content": "[core]\n\tfsmonitor = touch PWNED\n"}),
        ("edit_file", {"file_path": "lnk/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = x"}),
    ],
)
async def test_a_write_unresolvable_when_judged_does_not_run_once_it_resolves(
    ws: Path, tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    """SUCCEEDED before: `lnk` led outside when the call was judged, so the protected-path check found
    nothing to judge and auto_edit allowed it; `lnk` re-pointed at `.git` meanwhile, the tool wrote
    `.git/config`. Now a path that did not resolve then is refused whatever it resolves to now."""
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    away = tmp_path / "away"
    away.mkdir()
    (away / "config").write_text("[core]\n")
    (ws / "lnk").symlink_to(away)
    async with ToolRuntime(ws, approval_mode="auto_edit") as rt:
        [outcome] = await rt.run_batch([ToolCall("1", tool, args)], _RepointOnDecision(ws / "lnk", ws / ".git"))
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (away / "config").read_text() == "[core]\n"
    message = error(outcome)
    assert "changed after the call was judged (it did not resolve then: Path not in workspace" in message
    assert "nothing was written" in message


async def test_a_write_that_resolves_nowhere_then_and_now_keeps_its_own_message(ws: Path, tmp_path: Path) -> None:
    """Held: with nothing re-pointed, the refusal is the path's own."""
    (ws / "lnk").symlink_to(tmp_path)
    async with ToolRuntime(ws, approval_mode="auto_edit") as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "write_file", {"file_path": "lnk/x", "content": "x"})])
    assert error(outcome).startswith('Path not in workspace: "lnk/x"')
    assert not (tmp_path / "x").exists()


# --- a deny rule's argsPattern and the other spellings of a path ------------------------------------------------

_DENY = '[[rule]]\ntoolName = "*"\nargsPattern = {pattern}\ndecision = "deny"\npriority = 100\n'
_DENY_SECRETS = _DENY.format(pattern="""'"(file_path|path|dir_path)": "secrets/'""")
"""Anchored on the argument, as docs/tools.md writes one."""
_DENY_ANYWHERE = _DENY.format(pattern='"secrets/"')


@pytest.mark.parametrize(
    ("rule", "path"),
    [
        (_DENY_SECRETS, "secr\0ets/key"),
        (_DENY_SECRETS, "secrets\0/key"),
        (_DENY_SECRETS, "@secrets/key"),
        (_DENY_SECRETS, "@./secrets/key"),
        (_DENY_ANYWHERE, "secr\0ets/key"),
        (_DENY_ANYWHERE, "file:///ws/%73ecrets/key"),
        (_DENY_ANYWHERE, "file:///ws/secret%73/key"),
    ],
)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "search", "glob"])
def test_a_deny_rule_for_a_path_covers_the_spellings_the_tools_read_as_it(rule: str, path: str, tool: str) -> None:
    """SUCCEEDED before: the rule matched the text as given; the tools remove NUL bytes, drop a
    leading `@` and decode a `file://` URL, so each of these read `secrets/key` unasked."""
    key = "dir_path" if tool == "glob" else "path" if tool == "search" else "file_path"
    verdict = Policy.default().with_toml(rule).evaluate(tool, {key: path, "pattern": "*"}, "yolo")
    assert verdict.decision.value == "deny"


def test_an_allow_rule_for_a_path_must_match_its_plain_spelling_too() -> None:
    """SUCCEEDED before: an allow rule for `app/` covered `app/\\0../setup.py` (its plain form kept the
    NUL, and matched), which the tool reads as `setup.py`. Now the plain form is the one the tool reads."""
    rule = (
        '[[rule]]\ntoolName = "write_file"\nargsPattern = \'"file_path": "app/\'\ndecision = "allow"\npriority = 100\n'
    )
    policy = Policy.default().with_toml(rule)
    assert policy.evaluate("write_file", {"file_path": "app/x.py"}, "default").decision.value == "allow"
    for sneaky in ["app/../setup.py", "app/\0../setup.py", "@app/../setup.py"]:
        assert policy.evaluate("write_file", {"file_path": sneaky}, "default").decision.value != "allow", sneaky


async def test_a_denied_spelling_reads_nothing(ws: Path) -> None:
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text(SECRET)
    policy = Policy.default().with_toml(_DENY_SECRETS)
    async with ToolRuntime(ws, approval_mode="yolo", policy=policy) as rt:
        outcomes = await rt.run_batch(
            [ToolCall(str(n), "read_file", {"file_path": p}) for n, p in enumerate(["secr\0ets/key", "@secrets/key"])]
        )
    for outcome in outcomes:
        assert SECRET not in text_of(outcome)
        assert "was denied" in error(outcome)


# --- long paths -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["default", "auto_edit", "yolo"])
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_dir", "search"])
async def test_a_name_too_long_behind_an_at_sign_is_a_tool_error(ws: Path, mode: str, tool: str) -> None:
    """SUCCEEDED before: asking whether `@aaa...` exists raised ENAMETOOLONG; write_file and edit_file
    made run_batch itself raise (default, auto_edit), the others "failed unexpectedly: OSError"."""
    arg = "@" + "a" * 300
    args = {
        "read_file": {"file_path": arg},
        "write_file": {"file_path": arg, "content": "x"},
        "edit_file": {"file_path": arg, "old_string": "", "new_string": "x"},
        "list_dir": {"dir_path": arg},
        "search": {"query": "x", "path": arg},
    }[tool]
    async with ToolRuntime(ws, approval_mode=mode) as rt:  # type: ignore[arg-type]
        [outcome] = await rt.run_batch([ToolCall("1", tool, args)])
    message = error(outcome)
    assert "OSError" not in message
    assert message.startswith('Path too long: "@aaa') or "was denied" in message, message


@pytest.mark.parametrize("raw", ["x/" * 100_000, "../" * 50_000, "a" * 5_000, "@" + "x/" * 3_000])
def test_a_path_longer_than_the_kernel_takes_is_refused_before_realpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    """SUCCEEDED before: `realpath` ran on the whole argument first (100,000 components: 1.4 s, growing
    as the square), and the length was measured on its answer. Now the kernel's bound is checked first."""
    seen: list[int] = []
    real = os.path.realpath

    def measured(path: Any) -> str:
        seen.append(len(os.fsencode(path)))
        return str(real(path))

    monkeypatch.setattr(os.path, "realpath", measured)
    with pytest.raises(ToolError, match="Path too long"):
        Workspace(tmp_path)._resolve_sync(raw)
    assert all(length < PATH_MAX for length in seen), seen


def test_a_long_escape_is_quoted_clipped(tmp_path: Path) -> None:
    """SUCCEEDED before (in part): a path that collapses to an escape (`//////...etc`) was refused, but the
    message quoted all 100,000 characters of it. Now it is clipped."""
    with pytest.raises(ToolError, match="Path not in workspace") as caught:
        Workspace(tmp_path)._resolve_sync("/" * 100_000 + "etc")
    assert len(str(caught.value)) < 1_000


# --- ignore files compiled on the call's budget -----------------------------------------------------------------


@pytest.fixture
def spent_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every walk's time budget already spent when it starts: what still runs is what it does not cover."""
    monkeypatch.setattr(limits, "SEARCH_TIME_BUDGET_S", -1.0)


@pytest.mark.usefixtures("spent_budget")
@pytest.mark.parametrize(
    ("tool", "args", "note"),
    [
        ("glob", {"pattern": "**/*", "dir_path": "a/b"}, "[glob stopped early"),
        ("search", {"query": "x", "path": "a/b"}, "[search stopped early"),
        ("tree", {"path": "a/b"}, "[tree stopped early"),
    ],
)
async def test_ignore_files_on_the_way_to_a_directory_are_compiled_on_the_budget(
    ws: Path, call: Call, tool: str, args: dict[str, Any], note: str
) -> None:
    """SUCCEEDED before: the ignore files of the workspace root and of every directory down to the one
    asked for were compiled before the budget began, with no bound (10 levels of 1 MiB `.gitignore`s of
    `*a*a*a...` patterns: 150 s). With the budget spent, an empty directory's walk met no clock and
    answered as if nothing were there. Now their compilation is on the budget and the call says it stopped."""
    (ws / "a" / "b").mkdir(parents=True)
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "a" / ".ignore").write_text("build/\n")
    assert note in output(await call(tool, **args))


@pytest.mark.parametrize("line", ["*a" * 500_000, "?" * 1_000_000, "**/" * 300_000 + "x"])
async def test_an_ignore_pattern_longer_than_a_path_is_never_compiled(
    ws: Path, call: Call, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    """SUCCEEDED before: a `.gitignore` of one 1 MiB line went to pathspec whole; its translation grows as
    the square of the line (128,000 `*a`: 15 s; the whole line: minutes), one step the budget cannot
    interrupt. Now a pattern over 4,096 characters is passed over (a path is no longer) and the rest of
    the file still counts. (The spy refuses a long line instead of spending those minutes.)"""
    compiled = pathspec.GitIgnoreSpec.from_lines
    longest: list[int] = [0]

    def spy(lines: list[str], **kwargs: Any) -> pathspec.GitIgnoreSpec:
        longest[0] = max([longest[0], *(len(one) for one in lines)])
        if longest[0] > 4096:
            raise ValueError("a pattern longer than a path reached pathspec")
        return compiled(lines, **kwargs)

    monkeypatch.setattr(pathspec.GitIgnoreSpec, "from_lines", spy)
    (ws / ".gitignore").write_text(f"{line}\n*.log\n")
    (ws / "x.log").write_text("x\n")
    (ws / "x.txt").write_text("x\n")
    found = output(await call("glob", pattern="*"))
    assert "x.txt" in found
    assert "x.log" not in found
    assert 0 < longest[0] <= 4096


async def test_a_hostile_ignore_file_in_the_walk_ends_with_the_budget(ws: Path, call: Call) -> None:
    """Held: patterns a set refuses are split and passed over (RE2, no backtracking), and what is
    left still ignores what it says."""
    (ws / "sub").mkdir()
    (ws / "sub" / ".gitignore").write_text("\n".join([*(f"a{i}[" for i in range(2000)), "*.log"]) + "\n")
    (ws / "sub" / "x.log").write_text("x\n")
    (ws / "sub" / "x.txt").write_text("x\n")
    found = output(await call("glob", pattern="**/*"))
    assert "x.txt" in found
    assert "x.log" not in found


# --- regular expressions: compile time and the cache ------------------------------------------------------------


@pytest.mark.parametrize("query", ["\\pL{1000}", "(?:\\pL|\\pN|\\pS){1000}", "[\\pL\\pN]{1000}"])
async def test_a_tiny_query_that_compiles_to_a_huge_program_is_refused(ws: Path, call: Call, query: str) -> None:
    """SUCCEEDED before: `\\pL{1000}` (nine characters) compiled to 1.2 million instructions in 1.5 s with
    the GIL held (every task of the host stopped) and stayed in the cache (9 MB each). Now RE2's memory
    bound is its own default (8 MiB) and such a pattern is an invalid one, refused in about 0.1 s."""
    (ws / "f.txt").write_text("x\n")
    message = error(await call("search", query=query))
    assert message.startswith(f"Invalid regular expression {query!r}: pattern too large")


def test_large_compiled_patterns_are_not_kept() -> None:
    """SUCCEEDED before: every compiled pattern stayed in a 256-entry cache, whatever its size: 256 queries
    like `\\pL{N}` held over 2 GB. Now only small ones are kept; a large one is freed after its call."""
    large = "[\\pL\\pN]{300}x"
    assert compile_pattern(large).programsize > 100_000
    assert compile_pattern(large) is not compile_pattern(large)
    small = "(?i)todo|fixme round 6"
    assert compile_pattern(small) is compile_pattern(small)
    long_text = "(?:" + "x" * 50_000 + "){0}y"  # a tiny program, but its text would be kept
    assert compile_pattern(long_text) is not compile_pattern(long_text)


@contextlib.contextmanager
def _hang_guard() -> Iterator[None]:
    """`HANG_GUARD_S` for code that holds the GIL (a Python regex): SIGALRM interrupts even that, where
    `anyio.fail_after` would wait for the event loop the regex holds."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after the {HANG_GUARD_S:g} s hang guard")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, HANG_GUARD_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("line", ["..." + " " * 50_000 + "x", "// ..." + " \t" * 30_000 + "-"])
async def test_write_file_s_placeholder_check_is_linear_in_a_line(ws: Path, call: Call, line: str) -> None:
    """SUCCEEDED before: write_file looks for an omission placeholder (`// ... rest unchanged`) in every line
    holding `...`, and took the comment marks off with a Python regex tried at every position
    (`\\s*(?:\\*/|-->)?\\s*$`): `...` then 5,000 spaces took 232 s, cubic in the line, on the event loop
    with the GIL held (the whole host stopped). Now the marks are taken off with string methods."""
    content = f"x = 1\n{line}\n"
    with _hang_guard():
        assert output(await call("write_file", file_path="f.txt", content=content)).startswith("Successfully")
    assert (ws / "f.txt").read_text() == content


# --- held: the file tools' paths ---------------------------------------------------------------------------------


async def test_proc_self_fd_of_a_file_outside_is_outside(ws: Path, outside: Path, call: Call) -> None:
    """Held: `/proc/self/fd/N` resolves to what the descriptor names, outside the workspace."""
    fd = os.open(outside / "secret.txt", os.O_RDONLY)
    try:
        for tool, key in [("read_file", "file_path"), ("search", "path")]:
            seen = text_of(
                await call(tool, **{key: f"/proc/self/fd/{fd}"}, **({"query": "root"} if tool == "search" else {}))
            )
            assert SECRET not in seen
            assert "Path not in workspace" in seen
    finally:
        os.close(fd)


async def test_proc_self_root_into_the_workspace_is_the_workspace(ws: Path, call: Call) -> None:
    """Held: `/proc/self/root<ws>/f` is the workspace's own `f`, read as such and nothing else."""
    (ws / "f.txt").write_text("inside\n")
    assert output(await call("read_file", file_path=f"/proc/self/root{ws}/f.txt")) == "inside\n"


async def test_dot_dot_after_a_link_climbs_the_link_s_target(ws: Path, outside: Path, call: Call) -> None:
    """Held: `lnk/../secret.txt`, `lnk` leading to a directory outside: `..` is taken after the link
    (as the kernel does), so the path is the outside one and is refused."""
    (outside / "sub").mkdir()
    (ws / "lnk").symlink_to(outside / "sub")
    (ws / "secret.txt").write_text("the workspace's own\n")
    seen = text_of(await call("read_file", file_path="lnk/../secret.txt"))
    assert SECRET not in seen
    assert "Path not in workspace" in seen


@pytest.mark.parametrize("name", [".GIT/config", ".Git/hooks/pre-commit", ".gi\u0301t/config", "\uff0egit/config"])
async def test_a_look_alike_of_git_is_its_own_directory(ws: Path, name: str) -> None:
    """Held: Linux names are bytes; a case or Unicode look-alike of `.git` is another directory and
    writing it never touches `.git` (a case-folding file system is not one this runs tests on)."""
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "write_file", {"file_path": name, "content": "x\n"})])
    assert not outcome.is_error, outcome.response
    assert (ws / ".git" / "config").read_text() == "[core]\n"


async def test_a_sparse_file_of_a_terabyte_is_binary_at_its_first_chunk(ws: Path, call: Call) -> None:
    """Held: a hole reads as NUL bytes, so read_file, edit_file and search stop at the first chunk."""
    (ws / "sparse.txt").write_bytes(b"text at the start\n")
    os.truncate(ws / "sparse.txt", 1 << 40)
    assert error(await call("read_file", file_path="sparse.txt")) == "Cannot display content of binary file: sparse.txt"
    assert "over the 16 MiB limit" in error(
        await call("edit_file", file_path="sparse.txt", old_string="text", new_string="t")
    )
    assert output(await call("search", query="text")).startswith("No matches found")


@pytest.mark.parametrize("tool", ["read_file", "edit_file", "write_file"])
async def test_a_directory_given_as_a_file_is_refused(ws: Path, call: Call, tool: str) -> None:
    """Held: a directory named where a file is wanted, with and without a trailing slash."""
    (ws / "d").mkdir()
    for arg in ["d", "d/", ".", "d/."]:
        args = {"read_file": {}, "edit_file": {"old_string": "a", "new_string": "b"}, "write_file": {"content": "x"}}[
            tool
        ]
        message = error(await call(tool, file_path=arg, **args))
        assert "is a directory" in message, (arg, message)
    assert (ws / "d").is_dir()


async def test_deep_globstars_match_in_linear_time(ws: Path, call: Call) -> None:
    """Held: `**/**/**/...` is an RE2 pattern (no backtracking) over a path 60 directories deep."""
    deep = ws.joinpath(*["d"] * 60)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x\n")
    found = output(await call("glob", pattern="**/" * 200 + "*.txt"))
    assert found.endswith("/d/f.txt")
    assert "No files found" in output(await call("glob", pattern="**/" * 200 + "*.md"))


async def test_a_search_pattern_that_backtracks_in_python_runs_in_linear_time(ws: Path, call: Call) -> None:
    """Held: `(a+)+$` over a long line of `a`s ending in `b` (hours in Python's re) is RE2's."""
    (ws / "f.txt").write_text("a" * 60_000 + "b\n")
    assert output(await call("search", query="(a+)+$")).startswith("No matches found")
    assert output(await call("search", query="(a|aa)+b")).startswith("Found 1 match")


# --- session ids and records --------------------------------------------------------------------------------------

_BACKEND = "generate-content"


def _store(tmp_path: Path) -> FileSessionStore:
    return FileSessionStore(tmp_path / "sessions")


async def _saved(store: SessionStore, prompt: str = "hi") -> StoredSession:
    session = StoredSession.new(_BACKEND, model="m", cwd="/w", first_prompt=prompt)
    await store.save(session)
    return session


def _rewrite_header(path: Path, **fields: Any) -> bytes:
    """The record at `path` with header fields replaced (kept in unified's one-line layout)."""
    first, rest = path.read_text().split("\n", 1)
    header = json.loads(first[len('{"header": ') : -1])
    header.update(fields)
    path.write_text('{"header": ' + json.dumps(header) + ",\n" + rest)
    return path.read_bytes()


async def test_a_record_stamped_without_a_time_zone_lists_with_the_others(tmp_path: Path) -> None:
    """SUCCEEDED before: `updated_at` without a zone compared with the others' raised TypeError, and
    every listing and every short id of the backend failed. Now it is read as UTC (as unified writes)."""
    store = _store(tmp_path)
    sound = await _saved(store)
    odd = await _saved(store, "odd")
    path = store.path_of(_BACKEND, odd.session_id)
    before = _rewrite_header(path, updated_at="2020-01-01T00:00:00", created_at="2020-01-01T00:00:00")
    listed = await store.list_sessions(_BACKEND)
    assert [s.session_id for s in listed] == [sound.session_id, odd.session_id]
    assert (await store.resolve(_BACKEND, sound.short_id)).session_id == sound.session_id
    assert (await store.resolve(_BACKEND, odd.short_id)).updated_at.utcoffset() is not None  # type: ignore[union-attr]
    loaded = await store.load(_BACKEND, odd.session_id)
    assert loaded.updated_at.utcoffset() is not None
    assert path.read_bytes() == before


@pytest.mark.parametrize("length", [251, 300, 5_000])
async def test_a_session_id_too_long_for_a_file_name_is_a_session_error(tmp_path: Path, length: int) -> None:
    """SUCCEEDED before: load, lease and delete of an id of 251 characters or more raised the kernel's
    ENAMETOOLONG (OSError), not a SessionError; a backend name so long did in a listing."""
    store = _store(tmp_path)
    await _saved(store)
    long_id = "a" * length

    async def lease() -> None:
        async with store.lease(_BACKEND, long_id):
            pass

    for attempt in (store.load(_BACKEND, long_id), store.delete(_BACKEND, long_id), lease()):
        with pytest.raises(SessionError, match=f"is {length:,} characters: it cannot name a stored session") as caught:
            await attempt
        assert len(caught.value.message) < 300
    with pytest.raises(SessionError, match="cannot name a stored session"):
        await store.list_sessions("b" * length)


async def test_a_long_reference_is_quoted_clipped(tmp_path: Path) -> None:
    """SUCCEEDED before: the miss quoted the whole reference (100,000 characters in one message)."""
    store = _store(tmp_path)
    await _saved(store)
    with pytest.raises(SessionNotFound) as caught:
        await store.resolve(_BACKEND, "z" * 100_000)
    assert len(caught.value.message) < 1_000


HOSTILE_IDS = ["../x", "../../etc/passwd", "a/b", "a\0b", "*", "?", "[a-z]*", "..", ".", "a b", "é", "a\nb", "~"]


@pytest.mark.parametrize("ref", HOSTILE_IDS)
async def test_hostile_ids_name_no_file(tmp_path: Path, ref: str) -> None:
    """Held: an id that is not letters, digits, `-` and `_` never becomes a path (load, lease, delete:
    SessionError); as a reference it is matched against the listing only (SessionNotFound)."""
    store = _store(tmp_path)
    (tmp_path / "sessions" / _BACKEND).mkdir(parents=True)
    (tmp_path / "x.json").write_text("{}")
    await _saved(store)

    async def lease() -> None:
        async with store.lease(_BACKEND, ref):
            pass

    for attempt in (store.load(_BACKEND, ref), store.delete(_BACKEND, ref), lease()):
        with pytest.raises(SessionError, match="cannot name a stored session"):
            await attempt
    with pytest.raises(SessionNotFound):
        await store.resolve(_BACKEND, ref)
    assert (tmp_path / "x.json").read_text() == "{}"


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE_RECORDS: dict[str, Callable[[str, str], str]] = {
    "state nested 100,000 deep": lambda first, rest: f'{first}\n"state": {{"a": {_deep(100_000)}}}}}\n',
    "header nested 100,000 deep": lambda first, rest: '{"header": ' + _deep(100_000) + ',\n"state": {}}\n',
    "a first line of 4 MB": lambda first, rest: '{"header": "' + "x" * 4_000_000 + '",\n"state": {}}\n',
    "one line of 4 MB, no newline": lambda first, rest: "[" * 4_000_000,
    "state a list": lambda first, rest: f'{first}\n"state": [1, 2]}}\n',
    "header a string": lambda first, rest: '{"header": "x",\n"state": {}}\n',
    "format a bool": lambda first, rest: first.replace('"format":1', '"format":true') + "\n" + rest,
    "turns a list": lambda first, rest: first.replace('"turns":0', '"turns":[1]') + "\n" + rest,
    "turns 5,000 digits": lambda first, rest: first.replace('"turns":0', '"turns":' + "9" * 5000) + "\n" + rest,
    "usage a string": lambda first, rest: first.replace('"usage":{', '"usage":"x","u":{') + "\n" + rest,
    "created_at a number": lambda first, rest: first.replace('"created_at":"', '"created_at":5,"c":"') + "\n" + rest,
    "id of another session": lambda first, rest: first.replace('"id":"', '"id":"x') + "\n" + rest,
    "not UTF-8": lambda first, rest: first + "\n" + rest.replace("{", "{\udcff", 1),
}


_BEHIND_A_SOUND_HEADER = {"state nested 100,000 deep", "state a list", "not UTF-8"}


@pytest.mark.parametrize("case", list(HOSTILE_RECORDS))
async def test_a_hostile_record_is_a_typed_error_and_is_never_replaced(tmp_path: Path, case: str) -> None:
    """Held: listing reports it, load raises CorruptSession, a save over it is refused, delete is the
    only way it goes (asked for by its id), and its bytes never change otherwise."""
    store = _store(tmp_path)
    other = await _saved(store, "other")
    session = await _saved(store)
    path = store.path_of(_BACKEND, session.session_id)
    first, rest = path.read_text().split("\n", 1)
    path.write_bytes(HOSTILE_RECORDS[case](first, rest).encode("utf-8", "surrogateescape"))
    before = path.read_bytes()
    listed = {s.session_id: s for s in await store.list_sessions(_BACKEND)}
    assert listed[other.session_id].problem is None
    if case in _BEHIND_A_SOUND_HEADER:  # a listing reads the header only
        assert listed[session.session_id].problem is None
    else:
        assert listed[session.session_id].problem is not None
        with pytest.raises(CorruptSession):
            await store.resolve(_BACKEND, session.short_id)
    with pytest.raises(CorruptSession):
        await store.load(_BACKEND, session.session_id)
    with pytest.raises(CorruptSession):
        await store.save(StoredSession(backend=_BACKEND, session_id=session.session_id))
    async with store.lease(_BACKEND, session.session_id):
        pass
    assert path.read_bytes() == before
    assert (await store.resolve(_BACKEND, other.short_id)).session_id == other.session_id


async def test_a_memory_store_document_without_a_time_zone_lists_with_the_others() -> None:
    """SUCCEEDED before (the same TypeError, through the shared header reader)."""
    store = MemorySessionStore()
    sound = await _saved(store)
    odd = await _saved(store, "odd")
    key = (_BACKEND, odd.session_id)
    store._documents[key] = store._documents[key].replace(
        '"updated_at":"', '"updated_at":"2020-01-01T00:00:00","x":"', 1
    )
    store._documents[key] = store._documents[key].replace(',"x":"' + odd.updated_at.isoformat() + '"', "", 1)
    listed = await store.list_sessions(_BACKEND)
    assert [s.session_id for s in listed] == [sound.session_id, odd.session_id]


@pytest.mark.parametrize("shape", ["{short}/" + "../" * 12 + "{victim}", "{short}/../..", "{short}\0x"])
async def test_a_gemini_cli_chat_file_naming_a_path_as_its_session_deletes_nothing(
    isolated_home: Path, tmp_path: Path, shape: str
) -> None:
    """Held: `delete` removes `chats/<sessionId>/` (the subagents' folder) with the id read from the
    file's header, and a chat file whose `sessionId` is `abcd1234/../../..<dir>` has the harmless short
    id `abcd1234`; `unified sessions delete abcd1234` checks the id first (`check_session_id`) and
    refuses with CorruptSession, deleting nothing. (The chat-file layer below it, `ChatFiles.delete`,
    trusts its caller: called directly with such a file, it removed the directory.)"""
    from unified.sessions import locator

    ws = tmp_path / "ws"
    ws.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(ws): "ws"}}))
    chats = isolated_home / ".gemini" / "tmp" / "ws" / "chats"
    (chats / "abcd1234").mkdir(parents=True)
    session_id = shape.format(short="abcd1234", victim=str(victim).lstrip("/"))
    chat = chats / "session-2026-11-29T10-00-abcd1234.jsonl"
    header = {"sessionId": session_id, "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"}
    prompt = {"id": "u1", "type": "user", "content": [{"text": "hi"}]}
    chat.write_text(json.dumps(header) + "\n" + json.dumps(prompt) + "\n")
    before = chat.read_bytes()
    with pytest.raises(CorruptSession, match="which is no Gemini CLI session id"):
        await locator("gemini-cli").delete("abcd1234", str(ws))
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (chats / "abcd1234").is_dir()
    assert chat.read_bytes() == before


@pytest.mark.e2e  # a PostgreSQL server of its own
async def test_a_nul_in_a_postgres_session_reference_is_no_unreachable_store(postgres_url: str) -> None:
    """SUCCEEDED before: psycopg refuses a NUL in a text parameter before sending the query, and the store
    read that as `SessionStoreUnavailable` ("cannot be reached or refused the request"; hint: start the
    database) for resolve, load, delete and a listing: an orchestrator would fail over from a working
    store. Now a reference with one is a miss (SessionNotFound), an id or backend a SessionError; and a
    missed id of 100,000 characters is quoted clipped."""
    from unified.sessions import PostgresSessionStore

    store = PostgresSessionStore(postgres_url)
    session = await _saved(store)
    with pytest.raises(SessionNotFound, match="no generate-content session matches 'a\\\\x00b'"):
        await store.resolve(_BACKEND, "a\0b")
    for attempt in (store.load(_BACKEND, "a\0b"), store.delete(_BACKEND, "a\0b"), store.list_sessions("g\0c")):
        with pytest.raises(SessionError, match="holds a NUL character: it cannot name a stored session"):
            await attempt
    with pytest.raises(SessionError, match="holds a NUL character"):
        await store.save(StoredSession(backend=_BACKEND, session_id="x\0y"))
    with pytest.raises(SessionNotFound) as caught:
        await store.load(_BACKEND, "x" * 100_000)
    assert len(caught.value.message) < 1_000
    assert (await store.resolve(_BACKEND, session.short_id)).session_id == session.session_id


# --- conversations from untrusted JSON ---------------------------------------------------------------------------


def _conversation(data: object) -> str:
    return json.dumps(
        {
            "turns": [
                {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
                {"role": "model", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": data}}]},
            ]
        }
    )


@pytest.mark.parametrize("item", ["[]", "1.5", '"ab"', "{}"])
def test_a_conversation_of_more_values_than_the_bound_is_refused_unparsed(
    monkeypatch: pytest.MonkeyPatch, item: str
) -> None:
    """SUCCEEDED before: 15 MB of `[],` held 1.1 GB and 9 s (parse, then `problem()`), 16 MB of `1.5,`
    535 MB; the 256 MiB a run accepts could take some 18 GiB. Now the values are counted on the text first."""
    monkeypatch.setattr(limits, "MAX_CONVERSATION_VALUES", 1_000, raising=False)
    text = _conversation(None).replace("null", "[" + ",".join([item] * 1_000) + "]")
    for given in (text, text.encode()):
        with pytest.raises(ValidationError, match=r"it holds [12],0\d\d JSON values .* \(1,000\); it was not parsed"):
            Conversation.from_json(given)


def test_brackets_and_commas_inside_texts_are_not_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held (and kept): a conversation of code and prose quotes brackets and commas; only those outside
    strings count, escaped quotes included."""
    monkeypatch.setattr(limits, "MAX_CONVERSATION_VALUES", 1_000, raising=False)
    code = '{"a": [1, 2], "b": "\\"[{,"}, ' * 2_000
    text = json.dumps({"turns": [{"role": "user", "parts": [{"type": "text", "text": code}]}]})
    assert Conversation.from_json(text).turns[0].parts[0].text == code  # type: ignore[union-attr]


def test_nesting_the_parser_takes_is_named_by_problem() -> None:
    """Held: 65 levels parse, and `problem()` (which a run calls) names the depth."""
    conversation = Conversation.from_json(_conversation(None).replace("null", _deep(65)))
    assert "deeper than 64 levels" in str(conversation.problem(limits.MAX_CONVERSATION_BYTES, limits.MAX_JSON_DEPTH))


@pytest.mark.parametrize("depth", [200, 100_000])
def test_nesting_past_the_parser_s_limit_is_a_validation_error(depth: int) -> None:
    """Held: pydantic's parser stops at its recursion limit: a ValidationError, never a RecursionError."""
    with pytest.raises(ValidationError, match="recursion limit"):
        Conversation.from_json(_conversation(None).replace("null", _deep(depth)))


WRONG_TYPES: list[object] = [
    [],
    "x",
    None,
    {"turns": "x"},
    {"turns": [{"role": "user", "parts": "x"}]},
    {"turns": [{"role": "user", "parts": [{"type": "image", "mime_type": "image/png", "data": "!!"}]}]},
    {"turns": [{"role": "model", "parts": [{"type": "tool_call", "id": 5, "name": "f"}]}]},
    {"turns": [{"role": "model", "parts": [{"type": "tool_call", "id": "c", "name": "f", "arguments": [1]}]}]},
    {"version": 2},
    {"format": "other"},
]


@pytest.mark.parametrize("data", WRONG_TYPES, ids=[json.dumps(d)[:40] for d in WRONG_TYPES])
def test_wrong_types_are_a_validation_error(data: object) -> None:
    with pytest.raises(ValidationError):
        Conversation.from_json(json.dumps(data))


_A_KEY = "sk-ant-api03-" + "Zq7" * 30


def test_a_field_name_no_part_has_is_not_quoted() -> None:
    """SUCCEEDED before: a key pasted where a field name goes (`{"type": "text", "text": "x", "sk-ant-...": 1}`)
    came back in the error's location (`turns.0.user.parts.0.text.sk-ant-...`). Now the name is `...`."""
    text = json.dumps({"turns": [{"role": "user", "parts": [{"type": "text", "text": "x", _A_KEY: 1}]}]})
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(text)
    assert _A_KEY[:16] not in str(caught.value)
    assert "turns.0.user.parts.0.text.`...`" in str(caught.value)
    assert "a field this part of a conversation does not have (its name not shown)" in str(caught.value)


@pytest.mark.parametrize(
    "hidden",
    [
        {"turns": [{"role": "{secret}", "parts": []}]},
        {"turns": [{"role": "user", "parts": [{"type": "{secret}"}]}]},
        {"turns": [{"role": "user", "parts": [{"type": "text", "text": ["{secret}"]}]}]},
        {"turns": [{"role": "model", "parts": [{"type": "tool_call", "id": ["{secret}"], "name": "f"}]}]},
        {"origin": {"backend": "x", "session_id": ["{secret}"]}},
    ],
)
def test_a_refused_conversation_never_quotes_a_key_it_holds(hidden: dict[str, Any]) -> None:
    """Held: no ValidationError message quotes the input or a tag the input made up."""
    text = json.dumps(hidden).replace("{secret}", _A_KEY)
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(text)
    assert _A_KEY[:16] not in str(caught.value)


def test_a_key_in_an_accepted_conversation_is_kept_for_the_run_to_redact() -> None:
    """Held (documented): a conversation's texts are the caller's; the stores redact on save."""
    text = json.dumps({"turns": [{"role": "user", "parts": [{"type": "text", "text": _A_KEY}]}]})
    assert _A_KEY in Conversation.from_json(text).to_json()


async def test_an_exported_session_with_a_hostile_state_is_a_typed_error(tmp_path: Path) -> None:
    """Held: a stored state nested just under the parser's limit does not escape as RecursionError."""
    from unified.sessions import locator

    store = _store(tmp_path)
    session = StoredSession.new(_BACKEND, model="m", cwd="/w", first_prompt="p")
    session.state = {"contents": json.loads(_deep(900))}
    try:
        await store.save(session)
    except (ValueError, RecursionError):
        pytest.skip("the state cannot even be saved at this depth")
    with pytest.raises((CorruptSession, SessionError)):
        await locator(_BACKEND, store=store).export(session.short_id)
