"""Red team round 39: three holes left open by earlier rounds.

1. Claude Code's and Codex's permission prompts repeated the model's path or command as it was: a person approving
   `Write .git<U+200D>/hooks/pre-commit` read `.git/hooks/pre-commit`'s look-alike, and a command's U+202E turned the
   rest of it around. Round 36 escaped these in the tool runtime's prompts (`_paths.shown_prompt`), which the Gemini
   CLI's ACP prompts go through (`PermissionGate` is a `ToolRuntime`); now both bridges use the same escape.
2. A caller's deny (or ask) rule on a path matched its text only: `SECRETS/key`, `secrets./key` (vfat, exfat and
   Windows drop a name's trailing dots) and `secr<U+200C>ets/key` (HFS+ ignores it) name the same file on such a
   volume and got past a deny of `secrets/`. Now a deny or ask rule is also searched, case folded, in the path folded
   as protected paths are (`_protected.folded_name`); an allow rule never is.
3. zlib at levels 0-5 (78 01: `eA`, 78 5e: `eF`) was not decoded by the redactor's block decoder: a key compressed
   with `zlib.compress(data, 1)` and base64'd came back as it was. Now those headers' base64 begins a block too.
"""

from __future__ import annotations

import base64
import zlib
from pathlib import Path
from typing import Any, cast

import pytest

from tests.security.test_permission_type_confusion import Context, Wire
from tests.security.test_red_team_round37 import _answer
from unified._adapters.codex._approvals import ApprovalBridge
from unified._adapters.codex._translate import AppServerTranslator
from unified._redaction import REDACTED, redactor
from unified.events import UserInputRequest, UserInputResponse
from unified.tools import Policy
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

# --- 1. what a person approving a call reads ------------------------------------------------------------------------

HIDDEN = ["\u200d", "\u200b", "\u202e", "\u2066", "\ufeff", "\U000e0041"]


@pytest.mark.parametrize("char", HIDDEN)
async def test_a_claude_code_prompt_shows_a_hidden_character_in_a_path(tmp_path: Path, char: str) -> None:
    """SUCCEEDED before: the prompt read `Allow Write on .git<U+200D>/hooks/pre-commit?`, the character unseen."""
    asked: list[UserInputRequest] = []
    path = f".git{char}/hooks/pre-commit"
    await _answer(tmp_path, "Write", {"file_path": path, "content": "x"}, "default", asked=asked)
    [prompt] = asked
    text = prompt.questions[0].prompt
    assert char not in text
    assert repr(char)[1:-1] in text or f"\\U{ord(char):08x}" in text, text


async def test_a_claude_code_prompt_shows_a_bidi_override_in_a_command(tmp_path: Path) -> None:
    """SUCCEEDED before: `echo ok #<U+202E>` showed the rest of the command reversed."""
    asked: list[UserInputRequest] = []
    await _answer(tmp_path, "Bash", {"command": "rm -rf ~ #\u202e/tmp/x rm"}, "default", asked=asked)
    [prompt] = asked
    assert "\u202e" not in prompt.questions[0].prompt
    assert "\\u202e" in prompt.questions[0].prompt


@pytest.mark.parametrize(
    ("tool", "tool_input"), [("Read", {"file_path": "/etc/pass\u200dwd\u202e"}), ("Glob", {"pattern": "/etc/\u202e*"})]
)
async def test_a_read_outside_the_workspace_names_its_path_escaped_in_the_decision(
    tmp_path: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    """SUCCEEDED before: the decision's reason (and the denial the model reads) began with the path as the model wrote
    it (`_runtime.read_outside`), its U+200D and U+202E unseen; the rest of the reason escaped them."""
    body, decision = await _answer(tmp_path, tool, tool_input, "default")
    for text in (decision.reason or "", body["message"]):
        assert "\u202e" not in text
        assert "\\u202e" in text


async def _codex_prompt(tmp_path: Path, method: str, fields: dict[str, Any]) -> str:
    """The prompt a Codex approval request puts to a caller who denies it."""
    asked: list[UserInputRequest] = []

    def deny(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny("no")

    translator = AppServerTranslator(main_thread="T", cwd=str(tmp_path))
    translator.start_turn("U")
    ctx, wire = Context(ExecuteParams(prompt="p", cwd=tmp_path, on_user_input=lambda r: None), deny), Wire()
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator).answer(
        {"method": method, "id": 0, "params": fields}
    )
    [(_, _, body)] = wire.answers()
    assert body["decision"] == "decline"
    [prompt] = asked
    return prompt.questions[0].prompt


@pytest.mark.parametrize("char", HIDDEN)
async def test_a_codex_command_prompt_shows_a_hidden_character(tmp_path: Path, char: str) -> None:
    """SUCCEEDED before: `Allow the command `cat .git<U+200D>/config`?` showed the command without it."""
    text = await _codex_prompt(
        tmp_path,
        "item/commandExecution/requestApproval",
        {
            "threadId": "T",
            "turnId": "U",
            "itemId": "call_1",
            "command": f"touch .git{char}/hooks/x",
            "cwd": str(tmp_path),
        },
    )
    assert char not in text
    assert f"touch .git{repr(char)[1:-1]}/hooks/x" in text or f"\\U{ord(char):08x}/hooks/x" in text, text


# --- 2. a caller's deny and ask rules on a path ---------------------------------------------------------------------


def _policy(decision: str, pattern: str) -> Policy:
    rule = f"[[rule]]\ntoolName = 'read_file'\ndecision = '{decision}'\npriority = 500\nargsPattern = '''{pattern}'''\n"
    return Policy.default().with_toml(rule)


FOLDED_SECRETS = ["SECRETS/key", "Secrets/key", "secrets./key", "secrets ./key", "secr\u200cets/key", "./SECRETS./key"]


@pytest.mark.parametrize("path", FOLDED_SECRETS)
@pytest.mark.parametrize(("decision", "verdict"), [("deny", "deny"), ("ask_user", "ask_user")])
def test_a_deny_or_ask_rule_covers_every_spelling_of_its_path(path: str, decision: str, verdict: str) -> None:
    """SUCCEEDED before: each spelling was allowed by the shipped read rule past a deny of `secrets/`: on a volume that
    folds case (macOS, Windows) or drops trailing dots (vfat, exfat) it reads `secrets/key`."""
    policy = _policy(decision, '"file_path": "secrets/')
    assert policy.evaluate("read_file", {"file_path": path}, "default").decision.value == verdict


@pytest.mark.parametrize("path", ["Secrets./key", "Secr\u200cets/key", "./Secrets /key"])
def test_a_deny_rule_written_in_capitals_covers_the_other_spellings_with_them(path: str) -> None:
    """SUCCEEDED before: a deny of `Secrets/` let `Secrets./key` through (the same folder on vfat or Windows)."""
    policy = _policy("deny", '"file_path": "Secrets/')
    assert policy.evaluate("read_file", {"file_path": path}, "default").decision.value == "deny"
    assert policy.evaluate("read_file", {"file_path": "public/key"}, "default").decision.value == "allow"


@pytest.mark.parametrize("path", ["APP/a.py", "app./a.py", "ap\u200cp/a.py"])
def test_an_allow_rule_is_never_widened_by_the_fold(path: str) -> None:
    """Pin: an allow rule allows only what it names as written (fail closed): `app/` does not allow `APP/a.py`."""
    rule = (
        "[[rule]]\ntoolName = 'write_file'\ndecision = 'allow'\npriority = 500\nargsPattern = '\"file_path\": \"app/'\n"
    )
    policy = Policy().with_toml(rule)
    assert policy.evaluate("write_file", {"file_path": "app/a.py"}, "default").decision.value == "allow"
    assert policy.evaluate("write_file", {"file_path": path}, "default").decision.value == "ask_user"


# --- 3. zlib at its fast levels -------------------------------------------------------------------------------------

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
KEYED = f"export GEMINI_API_KEY={KEY}\n".encode()


@pytest.mark.parametrize("level", range(10))
def test_a_key_compressed_by_zlib_at_any_level_is_replaced(level: int) -> None:
    """SUCCEEDED before for levels 0-5 (headers 78 01 and 78 5e: `eA...`, `eF...`): the block came back as it was,
    and `base64 -d | zlib-flate -uncompress` showed the key."""
    block = base64.b64encode(zlib.compress(KEYED, level)).decode()
    assert zlib.decompress(base64.b64decode(block)) == KEYED
    out = redactor({"GEMINI_API_KEY": KEY})(f"$ cmd\n{block}\ndone\n")
    assert block not in out
    assert REDACTED in out
    assert out.startswith("$ cmd\n")


@pytest.mark.parametrize("text", ["typeAlias: eAEnum and readFile eF4 are plain words, not compressed data at all\n"])
def test_a_word_with_a_fast_zlib_marker_is_left_as_it_is(text: str) -> None:
    """Pin: the markers stand in words too; a run whose header does not check out is not inflated, nor replaced."""
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(text) == text
