"""Red team, round 14: the caller's path rules against links on the agent binaries' own tools, and this
round's new code (spare lock files, `--policy` file generation, the shell-output cleaner, API auth checks).

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- round 13 judged a path rule (a deny of `secrets/` by `argsPattern`) also on the path a link reaches, but
  only for unified's own tools: Claude Code's Read, Write, Edit and Grep of `docs/l/key` (`docs/l ->
  ../secrets`) were allowed by the shipped rows or auto_edit, and Codex's patch of `docs/l/key` was accepted in
  auto_edit, past the caller's deny rule. Every backend now asks `_runtime.linked_verdict`;
- a folder reached through a link (or named plainly, or by its absolute path) was judged without its trailing `/`:
  a search of `docs/l` (or of `secrets`) read every file a deny of `secrets/` was written for;
- Claude Code applies `..` before it follows links (`a/b/../c` is `a/c`): the path was judged where the kernel
  goes; Codex's command run in `docs/l` (its `cwd`) was judged on its text alone;
- a file or link put at a swept spare lock file's name was linked as a lease's lock: two holders;
- a DEL in a caller's rule name made the CLI refuse the whole `--policy` file (unified's rules with it);
- a progress line showed the first characters of a secret split by colour sequences, read so far;
- a base URL's problem quoted the URL parser's error, which quotes a token put at the port or in the host;
- an 8-bit OSC opener's body ran to the end of its line: cleaning a line of them was quadratic (5 s of CPU).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.claude_code.claude_code_helpers import model_bodies, run_claude
from tests.e2e.claude_code.conftest import claude_setup
from tests.security.test_red_team_round7 import _claude_answer, _codex_patch_with
from tests.security.test_red_team_round13 import DENY_SECRETS, _linked_workspace
from unified.events import PermissionDecision
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.tools import ToolCall, ToolRuntime

__all__ = ["claude_setup"]

pytestmark = [pytest.mark.anyio]


# --- path rules through links, on the binaries' own tools ----------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        pytest.param("Read", {"file_path": "{ws}/docs/l/key"}, id="read-absolute"),
        pytest.param("Read", {"file_path": "docs/l/key"}, id="read-relative"),
        pytest.param("Read", {"file_path": "k"}, id="read-file-link"),
        pytest.param("Write", {"file_path": "{ws}/docs/l/key", "content": "x"}, id="write"),
        pytest.param("Edit", {"file_path": "{ws}/docs/l/key", "old_string": "T", "new_string": "x"}, id="edit"),
        pytest.param("Grep", {"pattern": "TOP", "path": "{ws}/docs/l/key"}, id="grep-file"),
        pytest.param("Grep", {"pattern": "TOP", "path": "{ws}/docs/l"}, id="grep-folder"),
        pytest.param("Glob", {"pattern": "*", "path": "{ws}/docs/l"}, id="glob-folder"),
        pytest.param("LS", {"path": "{ws}/docs/l"}, id="ls-folder"),
        pytest.param("Grep", {"pattern": "TOP", "path": "{ws}/secrets"}, id="grep-the-folder-itself"),
    ],
)
async def test_a_claude_code_call_through_a_link_is_denied_by_the_callers_path_rule(
    tmp_path: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    """SUCCEEDED before: Claude Code's bridge read the rule against the text of the path only, so `Read
    docs/l/key` was allowed by the shipped `read-only` row (and Write/Edit by auto_edit) though it reads
    `secrets/key`, which the caller's rule denies."""
    ws = _linked_workspace(tmp_path)
    filled = json.loads(json.dumps(tool_input).replace("{ws}", str(ws)))
    body, decision = await _claude_answer(ws, tool, filled, DENY_SECRETS)
    assert body["behavior"] == "deny", body
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")
    assert (ws / "secrets" / "key").read_text() == "TOPSECRET"


@pytest.mark.e2e  # runs the real claude binary, against FakeAnthropic
@pytest.mark.usefixtures("claude_setup")
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_e2e_claude_code_does_not_read_a_denied_file_through_a_link(tmp_path: Path) -> None:
    """SUCCEEDED before, with the real CLI: its Read of `docs/l/key` was allowed (`read-only`) and the model
    read `TOPSECRET`, past the caller's deny of `secrets/`."""
    (tmp_path / "ws").mkdir()
    ws = _linked_workspace(tmp_path / "ws")
    read = FunctionCall(name="Read", args={"file_path": str(ws / "docs" / "l" / "key")}, id="toolu_read")
    turns = [ModelTurn(function_calls=[read]), ModelTurn(text="Done.")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, ws, options={"policy": DENY_SECRETS})
        bodies = model_bodies(server)
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")
    assert not any("TOPSECRET" in body for body in bodies)


async def test_a_claude_code_read_of_an_ordinary_file_is_still_allowed_under_a_path_rule(tmp_path: Path) -> None:
    """The pin beside it: a file no link leads from is judged as before."""
    ws = _linked_workspace(tmp_path)
    (ws / "docs" / "a.md").write_text("hi")
    body, decision = await _claude_answer(ws, "Read", {"file_path": str(ws / "docs" / "a.md")}, DENY_SECRETS)
    assert body == {"behavior": "allow"}
    assert decision.rule == "read-only"


@pytest.mark.parametrize("spelling", ["{ws}/docs/l/key", "{ws}/docs/l/new.txt", "{ws}/k"])
async def test_a_codex_patch_through_a_link_is_denied_by_the_callers_path_rule(tmp_path: Path, spelling: str) -> None:
    """SUCCEEDED before: auto_edit accepted Codex's patch of `docs/l/key`, a write of `secrets/key` the caller's
    rule denies (the rule read the text `docs/l/key`)."""
    ws = _linked_workspace(tmp_path)
    change = {"path": spelling.format(ws=ws), "kind": {"type": "add"}, "diff": "x\n"}
    answer, decision = await _codex_patch_with(ws, [change], DENY_SECRETS)
    assert answer == "decline"
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "no-secrets")


async def test_a_codex_patch_of_an_ordinary_file_is_still_accepted_under_a_path_rule(tmp_path: Path) -> None:
    ws = _linked_workspace(tmp_path)
    change = {"path": str(ws / "docs" / "a.md"), "kind": {"type": "add"}, "diff": "x\n"}
    answer, _ = await _codex_patch_with(ws, [change], DENY_SECRETS)
    assert answer == "accept"


@pytest.mark.parametrize("folder", ["docs/l", "secrets", "docs/l/", "{ws}/secrets"])
async def test_a_search_of_a_denied_folder_is_denied_however_it_is_named(tmp_path: Path, folder: str) -> None:
    """SUCCEEDED before: the folder was judged as `secrets` (no `/`), which a rule for `secrets/` does not match,
    and search printed `TOPSECRET`."""
    ws = _linked_workspace(tmp_path)
    async with ToolRuntime(ws, policy=DENY_SECRETS) as runtime:
        path = folder.format(ws=ws)
        [outcome] = await runtime.run_batch([ToolCall("c1", "search", {"query": "TOP", "path": path})])
    assert "TOPSECRET" not in json.dumps(outcome.response)
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.rule) == ("deny", "no-secrets")


# --- spare lock files (`_sessions/spares.py`) ---------------------------------------------------------------------


@pytest.mark.parametrize("planted", ["file", "symlink"])
def test_a_file_put_at_a_swept_spare_s_name_is_not_linked_as_the_lock(tmp_path: Path, planted: str) -> None:
    """SUCCEEDED before: a spare's name (listed in the leases folder) swept and replaced by a file of the
    attacker's (or a link) was linked at the next lease's lock path: the lease flocked its own inode, the path
    named the other, and a second taker locked that and held the same session (two holders)."""
    from tests.sessions.records import BACKEND
    from unified._sessions import spares
    from unified._sessions.stores import FileSessionStore, folder_lease
    from unified.errors import SessionInUse

    session = "019b2c3d-4e5f-7a8b-9c0d-1e2f3a4b5c6d"
    lock = tmp_path / BACKEND / session[:2] / f"{session}.lock"
    spares._remove_at_exit()

    async def scenario() -> None:
        async with folder_lease(tmp_path, BACKEND, session):
            pass
        (spare,) = (tmp_path / BACKEND).glob(".spare-*")
        spare.unlink()
        if planted == "file":
            spare.write_text("planted")
        else:
            (tmp_path / "elsewhere").write_text("planted")
            spare.symlink_to(tmp_path / "elsewhere")
        async with folder_lease(tmp_path, BACKEND, session):
            assert not lock.is_symlink()
            with pytest.raises(SessionInUse):
                async with FileSessionStore(tmp_path).lease(BACKEND, session):
                    pass
        assert not lock.exists()

    try:
        anyio.run(scenario)
    finally:
        spares._remove_at_exit()
    if planted == "symlink":
        assert (tmp_path / "elsewhere").read_text() == "planted"  # never written through


# --- the Gemini CLI's `--policy` file (`gemini_cli/_launch`) ------------------------------------------------------

HOSTILE_NAMES = ['q"uote', "new\nline", "back\\slash", "tab\tand ]]\n[[rule]]", "del\x7f", "ünï😀", "nul\x00", "\x85c1"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_every_rule_and_tool_name_reaches_the_cli_s_policy_file_as_written(name: str) -> None:
    """SUCCEEDED before for DEL: JSON leaves it raw, TOML (and the CLI's parser) refuse it, and the CLI dropped
    the whole file (the e2e proof: tests/e2e/gemini_cli/test_gemini_cli_user_policy.py). The rest are pins: each
    name is one TOML string, whatever it holds, and reads back as written."""
    import tomllib

    from unified._adapters.gemini_cli import _launch

    tool = f"mcp_srv_{name}"
    denial = f"unified: the policy rule {name} does not allow it"
    subagent = tomllib.loads(_launch.subagent_rules({tool: name}))["rule"]
    assert {(r["toolName"], r["denyMessage"]) for r in subagent} == {(tool, denial + " (a subagent cannot be asked)")}
    [outright] = tomllib.loads(_launch.policy_denials({tool: (name, ("default", "yolo"))}))["rule"]
    assert (outright["toolName"], outright["name"], outright["denyMessage"]) == (tool, f"unified: {name}", denial)
    rules = tomllib.loads(_launch.policy_rules(excluded_tools=[tool], asked=[tool]))["rule"]
    assert rules[0]["toolName"] == tool  # the exclusion
    assert rules[1]["toolName"] == [tool]  # asked in every mode
    assert len(rules) == 7  # no rule of the name's own making


# --- the shell's output cleaner (`tools/_shell.py`) ---------------------------------------------------------------

SECRET = "sk-ant-api03-Zq9XvB7kLmN4pR2tY6wE8uI0oP"


@pytest.mark.parametrize(
    "so_far",
    [
        pytest.param("sk-ant\x1b[m\x1b[K-api03-Zq9XvB7", id="grep-color-inside"),
        pytest.param("\x1b[01;31msk-ant-api03-Zq9XvB7\x1b[m", id="coloured-then-cut"),
        pytest.param("sk-ant-api03-Zq9XvB7\x9b0m", id="c1-csi"),
        pytest.param("sk-ant-api03-Zq9XvB7\x1b", id="lone-esc"),
        pytest.param("sk-ant-api03-Zq9XvB7\x1b[0", id="csi-without-final-byte"),
        pytest.param("sk-ant-api03-Zq9XvB7\x1b]8;;x\x07", id="osc-bel"),
        pytest.param("sk-ant-api03-Zq9XvB7\x1b]8;;x\x1b\\", id="osc-st"),
    ],
)
def test_a_secret_split_by_an_escape_sequence_is_held_back_from_a_progress_line(so_far: str) -> None:
    """SUCCEEDED before: the output read so far ending in a secret's beginning and a sequence (coloured output
    cut by a read) was not held back, since the hold looked at the text with its sequences; once they went, the
    `tool_progress` event showed the first 20 characters of the key."""
    from unified._redaction import redactor
    from unified.tools._shell import _progress_line

    clean = redactor({}, [SECRET])
    line = _progress_line(bytearray(("first line\n" + so_far).encode()), clean)
    assert "Zq9" not in line
    assert "sk-ant" not in line


def test_a_progress_line_still_shows_coloured_output_without_its_colours() -> None:
    from unified._redaction import redactor
    from unified.tools._shell import _progress_line

    clean = redactor({}, [SECRET])
    assert _progress_line(bytearray(b"ok \x1b[01;31mdone\x1b[m 50%\x1b[1"), clean) == "ok done 50%"


# --- API auth checks (`_auth.py`) ---------------------------------------------------------------------------------

TOKEN = "tok_live_9f8e7d6c5b4a3"


@pytest.mark.parametrize(
    "url",
    [
        pytest.param(f"https://gw.example:{TOKEN}/v1beta", id="token-where-the-port-goes"),
        pytest.param(f"https://{TOKEN}@gw.exa\u2100mple/", id="token-in-a-host-nfkc-refuses"),
        pytest.param(f"https://gw.example:443:{TOKEN}/", id="token-after-the-port"),
    ],
)
def test_a_base_url_s_problem_never_quotes_the_url(url: str) -> None:
    """SUCCEEDED before: `problems` (and `describe()`, said to be secret-free: `doctor`, the run's error) quoted
    the URL parser's error, which quotes the port's text or the whole netloc: a gateway token put there."""
    from unified._auth import resolve_api_auth

    auth = resolve_api_auth({"GEMINI_API_KEY": "k" * 20, "GOOGLE_GEMINI_BASE_URL": url}, vertexai=False)
    assert not auth.usable
    assert TOKEN not in auth.describe()
    assert TOKEN not in repr(auth.problems)


def test_a_key_in_a_base_url_s_user_info_is_not_shown_as_its_endpoint() -> None:
    """A pin: `https://<key>@host` is sent to `host`, and only `host` is shown."""
    from unified._auth import resolve_api_auth

    auth = resolve_api_auth({"GEMINI_API_KEY": "k" * 20, "GOOGLE_GEMINI_BASE_URL": f"https://{TOKEN}@gw.example"})
    assert TOKEN not in auth.describe()
    assert auth.endpoint == "https://gw.example"


@pytest.mark.parametrize("where", ["{ws}/docs/l", "{ws}/secrets"])
async def test_a_codex_command_run_in_a_denied_folder_is_denied_by_the_callers_path_rule(
    tmp_path: Path, where: str
) -> None:
    """SUCCEEDED before: Codex's approval of `cat key` run in `docs/l` (its `cwd`: `secrets`) was judged on the
    command's text alone, and auto_edit's table let the read run past the caller's deny of `secrets/`. The cwd is
    now the call's `dir_path`, as the runtime's shell names it, and judged through the link."""
    from typing import cast

    from tests.security.test_permission_type_confusion import Wire
    from tests.security.test_red_team_round7 import _auto_edit
    from unified._adapters.codex._approvals import ApprovalBridge
    from unified._adapters.codex._translate import AppServerTranslator

    ws = _linked_workspace(tmp_path)
    translator = AppServerTranslator(main_thread="T", cwd=str(ws))
    translator.start_turn("U")
    ctx, wire = _auto_edit(ws), Wire()
    params = {
        "threadId": "T",
        "turnId": "U",
        "itemId": "call_read",
        "command": "/bin/bash -lc 'cat key'",
        "cwd": where.format(ws=ws),
        "commandActions": [{"type": "read", "command": "cat key", "name": "key", "path": "key"}],
    }
    request = {"method": "item/commandExecution/requestApproval", "id": 0, "params": params}
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator, DENY_SECRETS).answer(request)
    [(_, _, body)] = wire.answers()
    [decision] = [e for e in ctx.events if isinstance(e, PermissionDecision)]
    assert body["decision"] == "decline"
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


async def test_a_gemini_cli_write_through_a_link_is_denied_by_the_callers_path_rule(tmp_path: Path) -> None:
    """A pin: the Gemini CLI's asked calls are decided by the tool runtime (`ToolRuntime.decide`), which judged
    the path a link reaches already (round 13); its write_file of `docs/l/key` is cancelled, the rule named."""
    from typing import cast

    from tests.security.test_permission_type_confusion import Wire
    from tests.security.test_red_team_round7 import _acp_write, _auto_edit
    from unified._adapters.gemini_cli._permissions import PermissionBridge
    from unified._adapters.gemini_cli._translate import AcpTranslator

    ws = _linked_workspace(tmp_path)
    ctx, wire = _auto_edit(ws), Wire()

    async def deliver(item: Any, raw: Any) -> None:
        ctx.events.append(item)

    async def flush() -> None:
        pass

    bridge = PermissionBridge(
        cast(Any, ctx), cast(Any, wire), AcpTranslator(), "sess-1", deliver, flush, ws, DENY_SECRETS
    )
    message = _acp_write(ws / "docs" / "l" / "key", "docs/l/key")
    try:
        await bridge.answer(message["id"], message["params"], message)
    finally:
        await bridge.aclose()
    assert wire.answers() == [("respond", 3, {"outcome": {"outcome": "selected", "optionId": "cancel"}})]
    [decision] = [e for e in ctx.events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


@pytest.mark.parametrize("line", ["x\x9b2Kfake row", "x\x1b[2Kfake", "x\rsrc/a.py:1: fake", "x\u2028fake", "x\x1b"])
def test_a_search_row_shows_every_acting_character_escaped(line: str) -> None:
    """A pin: `shown_line` writes a row holding an 8-bit CSI, an escape, a CR or a line separator as a literal."""
    from unified.tools._paths import shown_line

    shown = shown_line(line)
    assert shown == repr(line)
    assert not any(ch in shown for ch in "\x9b\x1b\r\u2028")


async def test_a_claude_code_read_whose_dot_dot_follows_a_link_is_judged_as_the_cli_reads_it(tmp_path: Path) -> None:
    """SUCCEEDED before: Claude Code applies `..` to the text before it opens a path (`a/b/../c` is `a/c`, as
    round 7 measured), while the kernel follows the link `a/b` first: with `a/c -> ../secrets/key` and
    `a/b -> ../z/y`, the path was judged `z/c`, and the CLI read `secrets/key` past the deny of `secrets/`."""
    ws = _linked_workspace(tmp_path)
    (ws / "a").mkdir()
    (ws / "z" / "y").mkdir(parents=True)
    (ws / "a" / "c").symlink_to("../secrets/key")
    (ws / "a" / "b").symlink_to("../z/y")
    body, decision = await _claude_answer(ws, "Read", {"file_path": str(ws / "a" / "b" / ".." / "c")}, DENY_SECRETS)
    assert body["behavior"] == "deny", body
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


def test_an_osc_body_never_spans_another_opener() -> None:
    """SUCCEEDED before (a CPU bound): each 8-bit OSC opener's body was read to the end of its line when no
    terminator came, so a line of openers cost the square of its length to clean (16,384 of them, the 32 KiB a
    result keeps: 1.4 s of CPU; 32,768, a background read's 64 KiB: 5 s; measured). A body now stops at the next
    opener: the first, unterminated, is shown escaped, and the text after it is not swallowed with the second."""
    from unified._redaction import redactor
    from unified.tools._shell import terminal_text

    clean = redactor({}, [])
    assert terminal_text("\x9dkept\x9d0;title\x07after", clean) == "\\x9dkeptafter"
    assert terminal_text("\x1b]kept\x90dcs\x9cafter", clean) == "keptafter"
    assert terminal_text("a\x1b]0;title\x07b \x9d8;;http://x\x9cc \x1b]8;;u\x1b\\d", clean) == "ab c d"


@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"pattern": "docs/l/*"}, id="relative"),
        pytest.param({"pattern": "l/**/*", "path": "{ws}/docs"}, id="under-a-path"),
        pytest.param({"pattern": "{ws}/docs/l/*"}, id="absolute"),
    ],
)
async def test_a_claude_code_glob_whose_pattern_goes_through_a_link_is_denied_by_the_callers_path_rule(
    tmp_path: Path, tool_input: dict[str, Any]
) -> None:
    """SUCCEEDED before: Glob `docs/l/*` listed the names under `secrets` (the rule read the pattern's text)."""
    ws = _linked_workspace(tmp_path)
    filled = json.loads(json.dumps(tool_input).replace("{ws}", str(ws)))
    body, decision = await _claude_answer(ws, "Glob", filled, DENY_SECRETS)
    assert body["behavior"] == "deny", body
    assert (decision.decision, decision.rule) == ("deny", "no-secrets")


async def test_a_glob_pattern_without_a_link_is_judged_as_written(tmp_path: Path) -> None:
    """The pin beside it: `**/*.py` and `docs/*.md` reach nothing else; allowed as before."""
    ws = _linked_workspace(tmp_path)
    for pattern in ("**/*.py", "docs/*.md", "*"):
        body, decision = await _claude_answer(ws, "Glob", {"pattern": pattern}, DENY_SECRETS)
        assert body == {"behavior": "allow"}, pattern
        assert decision.rule == "read-only"
