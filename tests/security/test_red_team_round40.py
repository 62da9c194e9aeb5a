"""Red team round 40: the tool runtime, the shell-command policy and the questions put to a person.

1. The model's own questions (unified's `ask_user`, which the API backends and the Gemini CLI's ask server run, Claude
   Code's AskUserQuestion, Codex's request_user_input) reached the caller as the model wrote them: a U+202E turned the
   rest of a question around, an option `Yes<U+2066>, delete` read as `Yes`. Now escaped as permission prompts are.
2. A caller's deny or ask rule read the folded spellings of the file tools' paths (round 39), not a shell command's
   words: a deny of `secrets/` let `cat SECRETS/key` and `cat secr<U+200C>ets/key` through. And a rule written in
   capitals (`Secrets/`) matched its own case only. Now a command's words are folded too, and a rule naming a capital
   is also read whatever the case.
3. One command that makes all three of git's marks (`mkdir -p x/objects x/refs && echo ref: ... > x/HEAD`) was judged
   by what was on disk before it ran, where each write completed nothing: a bare repository made and used at once.
4. `git -C <a folder outside the workspace>` (or `cd` there, `--work-tree=` there) under a rule allowing git ran that
   repository's configured filters, diff drivers and hooks.

Then the holes found this round (each test's docstring says what happened before):

5. bash expands a `~` after the `=` of an argument that looks like an assignment (`dd of=~/bin/git`): it was read as
   the text `of=~/bin/git`, a file here.
6. A redirection's descriptor of over 4,300 digits (`echo x 111...1>y`) raised ValueError out of the policy: the run
   ended with an internal error. The same cap on `int` left out `kill -9 -000...001`, which bash reads as -1.
7. The descriptor before each redirection was found by a regex search of the whole text before it: quadratic
   (4,000 redirections in 76 KB: 17.8 s, 4,000 here-documents: 10.7 s, the event loop held; now 0.75 s and 0.71 s).
8. `0<y rm -rf z`: tree-sitter-bash takes the `0` for the command's name, and the part was `0 rm -rf z`: a deny of `rm`
   did not apply (and an allow of a command named `0`... would have).
9. Under a deny of `secrets/`, `git grep` was judged as a walk of its folder, but `git show`, `git log -p`, `git diff`,
   `git archive HEAD`, `git cat-file --batch-all-objects --batch` print tracked files' content too, and were allowed
   (in a subfolder, the whole repository's: judged as a walk of the workspace root).
10. `pkill -f '[^a]'`, `pkill -f ' '` and `pkill -f /` match every process that matters (unified's host among them)
    and were no mass kill: the sample names held `a` and `-`, and -f matches whole command lines.
Besides: git marks copied into one folder (`cp -r a/objects a/refs b/HEAD x/`) or named through an option's value
(`dd of=x/HEAD`), and a deny rule naming a capital by its code (`\x53ecrets/`), extend holes 3 and 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from tests.security.test_permission_type_confusion import Context, Wire
from tests.security.test_red_team_round37 import _answer
from unified._adapters.codex._approvals import ApprovalBridge
from unified._adapters.codex._translate import AppServerTranslator
from unified.events import UserInputRequest, UserInputResponse
from unified.tools import Policy, ToolCall, ToolRuntime, _protected, _shell_syntax
from unified.tools._ask_user import AskUserParams, ask_user_tool
from unified.tools._policy import Decision, Rule, kills_all
from unified.tools._regex import PatternError, RulePattern
from unified.types import ApprovalMode, ExecuteParams

pytestmark = pytest.mark.anyio

# --- 1. the model's questions ---------------------------------------------------------------------------------------

HIDDEN = ["\u202e", "\u2066", "\u200d", "\ufeff", "\x1b", "\U000e0041"]


def _shown(request: UserInputRequest) -> list[str]:
    """Every text of a question request a person reads."""
    texts: list[str] = []
    for question in request.questions:
        texts += [question.prompt, question.header or ""]
        texts += [text for option in question.options for text in (option.label, option.description or "")]
    return texts


def _escaped_everywhere(request: UserInputRequest, char: str) -> None:
    for text in _shown(request):
        assert char not in text, text
    assert any(repr(char)[1:-1] in text or f"\\U{ord(char):08x}" in text for text in _shown(request))
    assert all(f"{repr(char)[1:-1]}x" in text or f"\\U{ord(char):08x}x" in text for text in _shown(request) if text)


@pytest.mark.parametrize("char", HIDDEN)
async def test_unified_ask_user_shows_a_hidden_character(char: str) -> None:
    """SUCCEEDED before: the question, its header, its options' labels and descriptions went to `on_user_input` with
    the character in them; the answer still names the model's own option label."""
    asked: list[UserInputRequest] = []

    async def bridge(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q1": "option-1"})

    spec = ask_user_tool(bridge, lambda: "r1")
    params = AskUserParams.model_validate(
        {
            "questions": [
                {
                    "question": f"Deploy?{char}x",
                    "header": f"h{char}x",
                    "options": [{"label": f"Yes{char}x", "description": f"d{char}x"}],
                }
            ]
        }
    )

    async def progress(message: str) -> None:
        del message

    output = await spec.run(params, progress)
    [request] = asked
    _escaped_everywhere(request, char)
    assert output.output == {"answers": {f"Deploy?{char}x": f"Yes{char}x"}}


@pytest.mark.parametrize("char", HIDDEN)
async def test_a_claude_code_question_shows_a_hidden_character(tmp_path: Path, char: str) -> None:
    """SUCCEEDED before: AskUserQuestion's question and options reached the caller as the model wrote them."""
    asked: list[UserInputRequest] = []
    question = {
        "question": f"Deploy?{char}x",
        "header": f"h{char}x",
        "options": [{"label": f"Yes{char}x", "description": f"d{char}x"}],
        "multiSelect": False,
    }
    await _answer(tmp_path, "AskUserQuestion", {"questions": [question]}, "default", asked=asked)
    [request] = asked
    _escaped_everywhere(request, char)


@pytest.mark.parametrize("char", HIDDEN)
async def test_a_codex_question_shows_a_hidden_character(tmp_path: Path, char: str) -> None:
    """SUCCEEDED before: request_user_input's question and options reached the caller as the model wrote them; the
    answer goes back under the question's own id."""
    asked: list[UserInputRequest] = []

    def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q": f"Yes{char}x"})

    translator = AppServerTranslator(main_thread="T", cwd=str(tmp_path))
    translator.start_turn("U")
    ctx, wire = Context(ExecuteParams(prompt="p", cwd=tmp_path, on_user_input=lambda r: None), answer), Wire()
    question = {
        "id": "q",
        "question": f"Deploy?{char}x",
        "header": f"h{char}x",
        "options": [{"label": f"Yes{char}x", "description": f"d{char}x"}],
    }
    fields = {"threadId": "T", "turnId": "U", "itemId": "call_1", "questions": [question]}
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator).answer(
        {"method": "item/tool/requestUserInput", "id": 0, "params": fields}
    )
    [request] = asked
    _escaped_everywhere(request, char)
    [(_, _, body)] = wire.answers()
    assert body == {"answers": {"q": {"answers": [f"Yes{char}x"]}}}


# --- 2. a caller's deny and ask rules on a shell command's paths, and rules in capitals -----------------------------


def _policy(decision: str, pattern: str, tool: str = "run_shell_command") -> Policy:
    rule = f"[[rule]]\ntoolName = '{tool}'\ndecision = '{decision}'\npriority = 500\nargsPattern = '''{pattern}'''\n"
    return Policy.default().with_toml(rule)


FOLDED_COMMANDS = [
    "cat SECRETS/key",
    "cat Secrets/key",
    "cat secr\u200cets/key",
    "cat secrets./key",
    "cat 'secrets '/key",
    "cat S'ECRETS'/key",
    "cp SECRETS/key /tmp/k",
]


@pytest.mark.parametrize("command", FOLDED_COMMANDS)
@pytest.mark.parametrize(("decision", "mode"), [("deny", "yolo"), ("ask_user", "yolo"), ("deny", "default")])
def test_a_deny_or_ask_rule_covers_every_spelling_of_its_path_in_a_command(
    command: str, decision: str, mode: ApprovalMode
) -> None:
    """SUCCEEDED before: a deny (or ask) of `secrets/` on run_shell_command let each spelling through (yolo allows every
    call no rule refuses), though on a volume that folds case, drops trailing dots or ignores the joiner it is
    `cat secrets/key`. Round 39 folded the file tools' paths only."""
    verdict = _policy(decision, "secrets/").evaluate("run_shell_command", {"command": command}, mode)
    assert verdict.decision.value == decision, command


@pytest.mark.parametrize("command", ["cat secrets/key", "cat SECRETS/key", "cat secr\u200cets./key"])
def test_a_deny_rule_in_capitals_covers_every_case(command: str) -> None:
    """SUCCEEDED before (but for the second): a deny of `Secrets/` matched `Secrets/` alone."""
    verdict = _policy("deny", "Secrets/").evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision.value == "deny"
    assert _policy("deny", "Secrets/").evaluate("run_shell_command", {"command": "cat public/key"}, "yolo").decision


@pytest.mark.parametrize("path", ["secrets/key", "SECRETS/key", "secrets./key"])
def test_a_file_rule_in_capitals_covers_every_case(path: str) -> None:
    """SUCCEEDED before (but for round 39's own case-kept fold of `Secrets./key`): `"file_path": "Secrets/` matched
    `Secrets/` alone, not `secrets/key`."""
    policy = _policy("deny", '"file_path": "Secrets/', "read_file")
    assert policy.evaluate("read_file", {"file_path": path}, "default").decision.value == "deny"


def test_an_allow_rule_is_never_widened_by_the_folds() -> None:
    """A pin: an allow of `cat secrets/` does not allow `cat SECRETS/x` or `cat Secrets/x` (asked in default)."""
    policy = _policy("allow", '"command": "cat secrets/')
    assert policy.evaluate("run_shell_command", {"command": "cat secrets/x"}, "default").decision.value == "allow"
    for command in ("cat SECRETS/x", "cat secr\u200cets/x"):
        assert policy.evaluate("run_shell_command", {"command": command}, "default").decision.value == "ask_user"


def test_a_caseless_copy_reads_a_class_and_its_ranges() -> None:
    """The copy a rule in capitals is searched with (`RulePattern.caseless`) reads `[A-C]` as `[A-Ca-c]` and keeps a
    negated class negated in both cases; the rule itself stays as written."""
    pattern = RulePattern(r"[A-C]x[^K]Z")
    assert pattern.search("bx1z") is False
    caseless = pattern.caseless()
    assert caseless.search("bX1z") is True
    assert caseless.search("bxkz") is False
    assert caseless is pattern.caseless()


# --- 3. a bare repository made by one command ----------------------------------------------------------------------

EVERY_COMMAND = Rule(("run_shell_command",), Decision.ALLOW, priority=9.0, name="all-shell")
ASKED = ("deny", "protected-paths")
"""What auto_edit decides on a protected write with nobody to answer (asked, then refused)."""


async def _decided(ws: Path, command: str) -> tuple[str, str]:
    """The decision on `command` under a rule allowing every command, in auto_edit, nobody there to answer."""
    policy = Policy.default().with_rules([EVERY_COMMAND])
    async with ToolRuntime(ws, approval_mode="auto_edit", policy=policy) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    return decision.decision, str(decision.rule)


MAKES_A_REPOSITORY = [
    "mkdir -p x/objects x/refs && echo ref: refs/heads/main > x/HEAD",
    "mkdir -p x/objects/pack x/refs/heads; cd x && echo ref: refs/heads/main > HEAD",
    "mkdir x && cd x && mkdir objects refs && touch HE\u200cAD",
    "mkdir -p x/Objects x/REFS && printf 'ref: refs/heads/main' > x/head",
    "mkdir -p x/objects && echo ../y > x/commondir && touch x/HEAD",
    "install -d x/objects x/refs && cp /dev/null x/HEAD",
]


@pytest.mark.parametrize("command", MAKES_A_REPOSITORY)
async def test_one_command_making_a_bare_repository_is_asked(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before: allowed under a rule allowing every command (each mark's write was judged by the disk before
    the command, where the others did not exist yet)."""
    assert await _decided(tmp_path, command) == ASKED


async def test_a_command_completing_a_repository_with_two_marks_is_asked(tmp_path: Path) -> None:
    """SUCCEEDED before: with `x/HEAD` on disk, `mkdir x/objects x/refs` made two marks at once, neither of which
    completed a repository alone."""
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "HEAD").write_text("ref: refs/heads/main\n")
    assert await _decided(tmp_path, "mkdir x/objects x/refs") == ASKED


@pytest.mark.parametrize(
    "command",
    ["mkdir -p x/objects x/refs", "echo HEAD objects refs > notes.txt", "git log HEAD -- objects refs", "touch HEAD"],
)
def test_what_makes_no_repository_is_not_held_for_one(tmp_path: Path, command: str) -> None:
    """A pin: two marks, mark names in text a command prints, git's own revisions: no reason."""
    assert _protected.shell_protected(_shell_syntax.parse(command), tmp_path, [tmp_path]) is None


# --- 4. git in a repository outside the workspace ------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace (`tmp_path / "ws"`), and a link to it inside."""
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "ws" / "lnk").symlink_to(tmp_path / "other")
    return tmp_path / "other"


@pytest.mark.parametrize(
    "command",
    [
        "git -C {other} status",
        "git -C .. status",
        "git -C sub -C ../.. diff",
        "git -C lnk log",
        "cd {other} && git status",
        "git --work-tree={other} diff",
        "git --work-tree {other} status",
    ],
)
async def test_git_in_a_folder_outside_the_workspace_is_asked(outside: Path, command: str) -> None:
    """SUCCEEDED before: allowed under a rule allowing every command, and git obeyed the other repository's config
    (a `filter.x.clean` ran on `git status`)."""
    ws = outside.parent / "ws"
    assert await _decided(ws, command.format(other=outside)) == ASKED


@pytest.mark.parametrize("command", ["git status", "git -C sub status", "git -C sub -C .. log", "cd sub && git diff"])
async def test_git_in_the_workspace_is_still_allowed(outside: Path, command: str) -> None:
    """A pin: git inside the workspace stays allowed by the rule."""
    assert await _decided(outside.parent / "ws", command) == ("allow", "all-shell")


async def test_git_outside_the_workspace_runs_in_yolo(outside: Path) -> None:
    """A pin: yolo allows it, as it allows every call."""
    async with ToolRuntime(outside.parent / "ws", approval_mode="yolo") as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": f"git -C {outside} status"}))
    assert decision.decision == "allow"


# --- 5. a `~` bash expands after an argument's `=` -----------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["dd if=payload of=~/bin/git", "dd if=payload of=~/.local/bin/git", "cp payload PATH=a:~/bin/git"]
)
async def test_a_tilde_after_an_arguments_equals_sign_is_read_as_bash_expands_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before: allowed under a rule allowing every command, the word read as a file `of=~/bin/git` in the
    workspace; bash writes `$HOME/bin/git`, which a login puts in PATH ahead of git."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert await _decided(tmp_path / "ws", command) == ASKED


@pytest.mark.parametrize(
    ("word", "known"),
    [
        *[("of=~/x", False), ("x=a:~/b", False), ("x[1]=~/z", False), ("a+=~/x", False), ("x=~", False)],
        *[("1x=~/y", True), ("--file=~/c", True), ("a:~/b", True), ("x=y", True)],
    ],
)
def test_which_arguments_bash_expands_a_tilde_in(word: str, known: bool) -> None:
    """As measured with bash 5.2 (`echo x=~/y` prints `x=$HOME/y`, `echo --file=~/c` and `echo 1x=~/y` do not)."""
    [part] = _shell_syntax.parse(f"echo {word}")
    assert (part.words[1] is not None) is known


# --- 6. a number past what Python's int reads ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["echo x " + "1" * 5000 + ">y", "cat 0" + "0" * 5000 + "<<<y", "echo " + "3" * 5000 + "<&0"]
)
async def test_a_descriptor_of_thousands_of_digits_is_judged_not_raised(tmp_path: Path, command: str) -> None:
    """RAISED before: ValueError (Python's limit of 4,300 digits) out of `ToolRuntime.decide`, which ended the run with
    an internal error."""
    async with ToolRuntime(tmp_path, approval_mode="default") as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    assert decision.decision == "deny"  # asked, nobody to answer


@pytest.mark.parametrize("pid", ["-" + "0" * 5000 + "1", "-" + "0" * 20 + "1", " -1"])
def test_kill_of_pid_minus_one_with_leading_zeros_is_a_mass_kill(pid: str) -> None:
    """SUCCEEDED before (the first): `kill -9 -000...001` (bash: -1, every process the user owns) was no mass kill, and
    an allow rule for `kill` covered it."""
    assert kills_all(["kill", "-9", pid]) is not None
    rule = "[[rule]]\ntoolName = 'run_shell_command'\ndecision = 'allow'\npriority = 500\ncommandPrefix = 'kill'\n"
    policy = Policy.default().with_toml(rule)
    assert policy.evaluate("run_shell_command", {"command": f"kill -9 '{pid}'"}, "default").decision.value == "ask_user"


def test_a_pid_past_what_bash_reads_is_none() -> None:
    """A pin: 20 significant digits are past intmax_t (bash refuses the pid), and `-` is no number."""
    assert _shell_syntax.decimal("-" + "9" * 20) is None
    assert _shell_syntax.decimal("-") is None
    assert _shell_syntax.decimal("0" * 5000 + "42") == 42


# --- 7. the descriptor before each redirection, found in linear time -----------------------------------------------


class _Counted(bytes):
    """A command's bytes that count what the parser slices out of them."""

    sliced = 0

    def __getitem__(self, key: Any) -> Any:
        got = super().__getitem__(key)
        if isinstance(key, slice):
            _Counted.sliced += len(got)
        return got


@pytest.mark.parametrize("line", ["cat x > /dev/null", "cat <<E\nx\nE"])
def test_the_parse_of_many_redirections_reads_the_command_a_bounded_number_of_times(line: str) -> None:
    """FAILED before: each redirection's descriptor was searched for in the whole text before it (`data[:start]`), so
    2,000 of them sliced about 2,000 times half the command (17.8 s for 4,000 in 76 KB). Counted, not timed."""
    command = "\n".join([line] * 2000)
    walker = _shell_syntax._Walker(command, depth=0, via=())
    walker.data = _Counted(walker.data)
    _Counted.sliced = 0
    parts = walker.run()
    assert len(parts) == 2000
    assert _Counted.sliced < 20 * len(command), _Counted.sliced


# --- 8. a `0<` before the command ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["0<y rm -rf z", "0>y rm -rf z", "x=1 0<y rm -rf z", "0<<<y rm -rf z"])
def test_a_zero_descriptor_before_the_command_is_no_command_name(command: str) -> None:
    """SUCCEEDED before: the part was `0 rm -rf z` and a deny of `rm` let it run in yolo."""
    rule = "[[rule]]\ntoolName = 'run_shell_command'\ndecision = 'deny'\npriority = 500\ncommandPrefix = 'rm'\n"
    policy = Policy.default().with_toml(rule)
    assert policy.evaluate("run_shell_command", {"command": command}, "yolo").decision.value == "deny"
    assert [part.words for part in _shell_syntax.parse(command)] == [("rm", "-rf", "z")]


def test_a_zero_descriptor_alone_still_writes() -> None:
    """A pin: `0>.envrc` makes no command, and still writes `.envrc`."""
    [part] = _shell_syntax.parse("0>.envrc")
    assert part.writes == (".envrc",)


# --- 9. git printing the files it tracks ---------------------------------------------------------------------------

GIT_PRINTERS = [
    "git show",
    "git -C . show HEAD",
    "git --no-pager log -p",
    "git log -U3",
    "git diff HEAD",
    "git archive HEAD",
    "git cat-file --batch-all-objects --batch",
    "git format-patch --stdout --root",
    "git stash show -p",
]


@pytest.fixture
def tracked(tmp_path: Path) -> Path:
    """A workspace holding `secrets/key` (as a repository tracks it; git itself is not run)."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("hunter2\n")
    return tmp_path


async def _yolo_with_a_deny_of_secrets(ws: Path, command: str) -> str:
    rule = "[[rule]]\ntoolName = 'run_shell_command'\ndecision = 'deny'\npriority = 500\nargsPattern = 'secrets/'\n"
    async with ToolRuntime(ws, approval_mode="yolo", policy=Policy.default().with_toml(rule)) as runtime:
        decision = await runtime.decide(ToolCall("c1", "run_shell_command", {"command": command}))
    return decision.decision


@pytest.mark.parametrize("command", GIT_PRINTERS)
async def test_git_printing_tracked_files_is_judged_as_a_walk(tracked: Path, command: str) -> None:
    """SUCCEEDED before: allowed in yolo past a deny of `secrets/` (measured: `git show` of the commit adding it printed
    `hunter2`); `git grep k` was already denied."""
    assert await _yolo_with_a_deny_of_secrets(tracked, command) == "deny"


@pytest.mark.parametrize("command", ["git log --oneline", "git status", "git log --stat", "git branch", "git ls-files"])
async def test_git_printing_no_files_is_still_allowed(tracked: Path, command: str) -> None:
    """A pin: what prints no file's content stays allowed."""
    assert await _yolo_with_a_deny_of_secrets(tracked, command) == "allow"


def test_a_caseless_copy_that_cannot_be_made_leaves_the_rule_applying(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deny rule in capitals whose caseless copy RE2 cannot compile is a doubt (asked), never passed over."""

    def refused(self: RulePattern) -> RulePattern:
        raise PatternError("pattern too large - compile failed")

    monkeypatch.setattr(RulePattern, "caseless", refused)
    verdict = _policy("deny", "Secrets/").evaluate("run_shell_command", {"command": "cat secrets/key"}, "yolo")
    assert verdict.decision.value == "ask_user"


def test_a_mass_kills_reason_clips_its_operand() -> None:
    """The reason names a 5,000-digit operand in at most 40 characters."""
    reason = kills_all(["kill", "-9", "-" + "0" * 5000 + "1"])
    assert reason is not None
    assert len(reason) < 100


@pytest.mark.parametrize(
    "command",
    [
        "cp -r a/objects a/refs b/HEAD x/",
        "mkdir x && cp -r a/objects a/refs b/HEAD x",
        "mkdir x; cp -r -t x a/objects a/refs b/HEAD",
        "mkdir x; mv a/objects a/refs b/HEAD x",
    ],
)
async def test_marks_copied_together_into_one_folder_are_asked(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before (and after the first fix of this round, which read each mark where its source is): three marks
    from two folders, none of them a repository, copied into one: `x` becomes one."""
    (tmp_path / "a" / "objects").mkdir(parents=True)
    (tmp_path / "a" / "refs").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "HEAD").write_text("ref: refs/heads/main\n")
    assert await _decided(tmp_path, command) == ASKED


async def test_a_mark_written_through_an_options_value_counts(tmp_path: Path) -> None:
    """SUCCEEDED before: `dd of=x/HEAD` named the folder `of=x`, so x's three marks were never seen together."""
    assert await _decided(tmp_path, "mkdir -p x/objects x/refs && dd if=/dev/null of=x/HEAD") == ASKED


async def test_git_printing_the_whole_repository_from_a_subfolder_walks_the_workspace(tracked: Path) -> None:
    """SUCCEEDED before (and after the first fix of this round, which walked the folder it runs in, as for `git
    grep`): `git show` run in `docs` prints every file of the commit, `secrets/key` included."""
    (tracked / "docs").mkdir()
    rule = "[[rule]]\ntoolName = 'run_shell_command'\ndecision = 'deny'\npriority = 500\nargsPattern = 'secrets/'\n"
    async with ToolRuntime(tracked, approval_mode="yolo", policy=Policy.default().with_toml(rule)) as runtime:
        for command, decided in (("git show", "deny"), ("git log -p", "deny"), ("git grep k", "allow")):
            call = ToolCall("c1", "run_shell_command", {"command": command, "dir_path": "docs"})
            assert (await runtime.decide(call)).decision == decided, command


@pytest.mark.parametrize(
    "pattern", [r"\x53ecrets/", r"\u0053ecrets/", r"\123ecrets/", r"\N{LATIN CAPITAL LETTER S}ecrets/"]
)
def test_a_deny_rule_naming_a_capital_by_its_code_covers_every_case(pattern: str) -> None:
    """FAILED before this round's own fix was extended: a capital written by its code (`\\x53` is `S`) was not seen as
    one, and the rule matched `Secrets/` alone."""
    verdict = _policy("deny", pattern).evaluate("run_shell_command", {"command": "cat secrets/key"}, "yolo")
    assert verdict.decision.value == "deny"


# --- 10. pkill by a pattern every process that matters matches ---------------------------------------------------


@pytest.mark.parametrize("args", [["-f", "[^a]"], ["-f", " "], ["-f", "/"], ["-9", "-f", "[^z]"], ["--full", "/"]])
def test_pkill_by_a_pattern_matching_every_real_process_is_a_mass_kill(args: list[str]) -> None:
    """SUCCEEDED before: `pkill -f '[^a]'` was no mass kill (it did not match the sample name `a`), nor `pkill -f ' '`
    (the samples were bare names, and -f matches whole command lines: `/usr/bin/python3 -m unified run`, unified's
    host, holds a space and a `/`); an allow rule for `pkill` covered them."""
    assert kills_all(["pkill", *args]) is not None
    rule = "[[rule]]\ntoolName = 'run_shell_command'\ndecision = 'allow'\npriority = 500\ncommandPrefix = 'pkill'\n"
    policy = Policy.default().with_toml(rule)
    command = " ".join(["pkill", *(f"'{arg}'" for arg in args)])
    assert policy.evaluate("run_shell_command", {"command": command}, "default").decision.value == "ask_user"


@pytest.mark.parametrize("args", [["-f", "vite"], ["node"], ["-f", "python3 -m http.server"], ["-x", "bash"]])
def test_pkill_of_a_named_program_is_no_mass_kill(args: list[str]) -> None:
    """A pin: a pattern naming a program stays a rule for `pkill`'s to allow."""
    assert kills_all(["pkill", *args]) is None


async def test_git_in_the_workspace_reached_through_a_link_is_still_allowed(tmp_path: Path) -> None:
    """A pin: `cd <a link to the workspace> && git status` runs git inside it (macOS's `/tmp` is such a link)."""
    (tmp_path / "real" / "ws").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "ws")
    assert await _decided(tmp_path / "link", f"cd {tmp_path / 'link'} && git status") == ("allow", "all-shell")
    assert await _decided(tmp_path / "link", f"git -C {tmp_path / 'link'} -C .. status") == ASKED
