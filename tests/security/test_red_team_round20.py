"""Red team, round 20.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a Codex read-only command reading a file outside the workspace through a value attached to the last letter of an
  option cluster: `file -bm/home/u/.netrc x` (the key file as file's magic file: its lines come back in warnings) and
  `grep -rf../out/key x .` ran unasked, because the outside-workspace check judged only what follows the cluster's
  first letter (`m/home/u/.netrc`, a path inside); now every letter's value is judged (`_read_only.operands`, as
  `_reach` does for path rules), and a cluster longer than that bound is no read-only command;
- token files the credential list did not name: `cat ~/.npmrc`, `cat ~/.cargo/credentials.toml`, `head ~/.pgpass`,
  `cat ~/.vault-token`, ... ran unasked under an allow rule for `cat` (a `~` word is judged against the credential
  files only), and a hard link to one in the workspace was read by read_file; now they are credential files
  (`protected_paths.toml`);
- (hardening, not shown to run) Claude Code's claude.ai tools (`Artifact`, `Projects`, `RemoteTrigger`, ...), which a
  Claude login may offer and which send the workspace off the machine, were not in the CLI's `permissions.ask`;
- a hostile MCP server's tool with `"properties": []` (or another schema no declaration can carry) failed the run
  at its start with a TypeError; now the tool is left out with a warning;
- auto_edit wrote `lefthook-local.yml` (and lefthook's other names, its `.lefthook/` scripts), `*.code-workspace` and
  `.devcontainer.json` unasked: other names of protected files that run later; now protected;
- Claude Code with `excluded_tools=["edit_file"]` still offered `NotebookEdit` (the policy reads it as `edit_file`
  and auto_edit allowed it); a glob was passed to the CLI as a name. Now every tool the policy reads as an excluded
  one is disallowed. The Gemini CLI read a glob in `excluded_tools` (`write_*`) as one tool's name and took nothing;
  excluding `read_file` left `read_many_files` (e2e: `tests/e2e/gemini_cli/test_gemini_cli_options.py`).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import mcp_types
import pytest

from tests.security.test_red_team_round7 import _codex_command
from unified.tools import Policy, ToolCall, ToolRuntime
from unified.tools._read_only import not_read_only, operands
from unified.types import StdioMcpServer

pytestmark = [pytest.mark.anyio]


# 1. a value attached to a later letter of an option cluster, in a Codex read-only command


@pytest.mark.parametrize(
    ("command", "action"),
    [
        ("file -bm../out/key x", {"type": "read", "command": "file", "name": "x", "path": "x"}),
        ("grep -rf{out}/key x .", {"type": "search", "command": "grep", "query": "x", "path": "."}),
        ("grep -rif../out/key x .", {"type": "search", "command": "grep", "query": "x", "path": "."}),
    ],
)
async def test_a_codex_read_naming_an_outside_file_in_an_option_cluster_is_asked(
    tmp_path: Path, command: str, action: dict[str, str]
) -> None:
    """SUCCEEDED before: the outside-workspace check judged `m../out/key` (what follows the cluster's first letter), a
    path inside the workspace, and the command ran unasked; `file -m` prints each line of the file it reads."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "x").write_text("x\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "key").write_text("machine x login u password SECRETPASSWORD123\n")
    filled = command.replace("{out}", str(out))
    assert not_read_only(filled) is None
    answer, decision = await _codex_command(ws, filled, ws, [{**action, "command": filled}])
    assert answer == "decline"
    assert decision.rule == "outside-workspace"


async def test_a_codex_read_with_option_clusters_inside_the_workspace_still_runs_unasked(tmp_path: Path) -> None:
    """The pin beside it: `grep -rn x src` and `head -n5 x` name nothing outside."""
    (tmp_path / "src").mkdir()
    (tmp_path / "x").write_text("x\n")
    for command, action in [
        ("grep -rn x src", {"type": "search", "command": "grep -rn x src", "query": "x", "path": "src"}),
        ("head -n5 x", {"type": "read", "command": "head -n5 x", "name": "x", "path": "x"}),
    ]:
        answer, decision = await _codex_command(tmp_path, command, tmp_path, [action])
        assert (answer, decision.decided_by) == ("accept", "policy"), command


def test_an_option_cluster_too_long_to_judge_is_no_read_only_command() -> None:
    """SUCCEEDED before: past the letters judged, a value would go unjudged, so such a cluster is asked."""
    assert "option cluster" in str(not_read_only("grep -" + "i" * 70 + "f/etc/shadow x ."))
    assert not_read_only("grep -" + "i" * 30 + "f/etc/shadow x .") is None
    assert "/etc/shadow" in operands("grep -" + "i" * 30 + "f/etc/shadow x .")


def test_a_pattern_holding_an_equals_sign_is_not_read_as_a_path() -> None:
    """Pin: an operand is judged as written (`grep url=/api src` is no read of /api), an option's value after `=`."""
    assert operands("grep url=/api src") == ["url=/api", "src"]
    assert operands("grep --file=/etc/shadow src") == ["/etc/shadow", "src"]


# 2. token files the credential list did not name


_TOKEN_FILES = [
    (".npmrc", "//registry.npmjs.org/:_authToken=npm_SECRETTOKEN1234567890\n"),
    (".yarnrc.yml", 'npmAuthToken: "SECRETTOKEN1234567890"\n'),
    (".cargo/credentials.toml", '[registry]\ntoken = "SECRETTOKEN1234567890"\n'),
    (".pgpass", "db:5432:*:u:SECRETPASSWORD123\n"),
    (".vault-token", "hvs.SECRETTOKEN1234567890\n"),
    (".cache/huggingface/token", "hf_SECRETTOKEN1234567890\n"),
    (".aws/sso/cache/0a1b.json", '{"accessToken": "SECRETTOKEN1234567890"}\n'),
    (".terraform.d/credentials.tfrc.json", '{"credentials": {"app.terraform.io": {"token": "SECRET"}}}\n'),
]

_CAT = Policy.default().with_toml(
    '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["cat", "head", "grep"]\ndecision = "allow"\n'
)
"""A caller who lets commands that read run unasked."""


def _home_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str, content: str) -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / relative).parent.mkdir(parents=True, exist_ok=True)
    (home / relative).write_text(content)
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("readme\n")
    return home, ws


@pytest.mark.parametrize(("relative", "content"), _TOKEN_FILES)
async def test_a_shell_read_of_a_token_file_is_asked_under_an_allow_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str, content: str
) -> None:
    """SUCCEEDED before: `cat ~/.npmrc` (and the others) ran unasked under an allow rule for `cat`, printing the
    registry's publish token: only `.netrc`, `.aws/credentials`, `.ssh/id_*` and the like were credential files."""
    _home_with(tmp_path, monkeypatch, relative, content)
    ws = tmp_path / "ws"
    async with ToolRuntime(ws, policy=_CAT) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": f"cat ~/{relative}"}))
        assert decision.decision == "deny"
        assert "credential file" in str(decision.reason)
        # its absolute path too (some were asked before as protected names: `.npmrc`, `.aws/**`)
        command = f"grep -r SECRET {tmp_path / 'home' / relative}"
        assert (await tools.decide(ToolCall("2", "run_shell_command", {"command": command}))).decision == "deny"


@pytest.mark.parametrize(("relative", "content"), _TOKEN_FILES[:3])
async def test_a_hard_link_to_a_token_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str, content: str
) -> None:
    """SUCCEEDED before: a hard link in the workspace to `~/.npmrc` (no protected name) was read by read_file."""
    home, ws = _home_with(tmp_path, monkeypatch, relative, content)
    os.link(home / relative, ws / "notes.txt")
    async with ToolRuntime(ws) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "read_file", {"file_path": "notes.txt"})])
    assert outcome.is_error
    assert "SECRET" not in str(outcome.response)
    assert "credential file" in str(outcome.response)


async def test_reads_beside_the_token_files_stay_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: with every token file present, a read of the workspace is still allowed unasked."""
    home, _ = _home_with(tmp_path, monkeypatch, *_TOKEN_FILES[0])
    for relative, content in _TOKEN_FILES[1:]:
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(content)
    async with ToolRuntime(tmp_path / "ws", policy=_CAT) as tools:
        for command in ("cat README.md", "grep -r readme .", "head -n 1 README.md"):
            decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
            assert decision.decision == "allow", command
        [outcome] = await tools.run_batch([ToolCall("1", "read_file", {"file_path": "README.md"})])
    assert not outcome.is_error


# 3. Claude Code's claude.ai tools, offered with a Claude login


@pytest.mark.parametrize(
    "tool", ["Artifact", "Projects", "RemoteTrigger", "ClaudeDesign", "SendFeedback", "PushNotification"]
)
def test_claude_codes_tools_that_send_the_workspace_off_the_machine_are_asked(tool: str) -> None:
    """SUCCEEDED before: not in the CLI's `permissions.ask` settings, so with a Claude login a call of them (an
    `Artifact` publishing `.env` as a web page, a `Projects` write uploading a `local_path`) was left to the CLI's own
    judgement and never reached the caller's policy. Now the CLI asks, and the shipped policy asks the caller."""
    from unified._adapters.claude_code._tools import ask_settings, policy_call

    assert tool in ask_settings([])["permissions"]["ask"]
    name, _ = policy_call(tool, {"file_path": ".env"})
    assert Policy.default().evaluate(name, {"file_path": ".env"}, "auto_edit").decision == "ask_user"


# 4. an MCP server's input schemas


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "array", "items": node}
    return node


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": []}, "properties are not an object"),
        ({"type": "object", "properties": "x"}, "properties are not an object"),
        ({"properties": None}, "properties are not an object"),
        ({"type": "string"}, 'of type "string"'),
        ({"type": "object", "properties": {"a": {"items": _nested(70)}}}, "deeper than 64"),
    ],
)
async def test_an_mcp_tool_whose_schema_no_declaration_can_carry_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any], why: str
) -> None:
    """SUCCEEDED before: `ToolSpec.declaration` adds `wait_for_previous` to the schema's `properties`, so a hostile
    server's `"properties": []` raised a TypeError when the run declared its tools (the run failed at its start,
    whatever the server's other tools); `type: string` made the API refuse every request. Now that tool is left out
    with a warning and the others stay."""
    from unified.tools import _mcp

    tools = [
        mcp_types.Tool(name="bad", inputSchema=schema),
        mcp_types.Tool(name="good", inputSchema={"type": "object"}),
    ]

    async def connect(server: Any, stack: Any, secrets: Any = ()) -> list[Any]:
        return [_mcp._spec(server.name, cast(Any, None), tool, cast(Any, None)) for tool in tools]

    monkeypatch.setattr(_mcp, "connect_server", connect)
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([StdioMcpServer(name="srv", command="unused")])
        declared = [d["name"] for d in runtime.declarations()]
    assert "mcp__srv__good" in declared
    assert "mcp__srv__bad" not in declared
    assert why in problem.message
    assert "mcp__srv__bad" in problem.message


async def test_an_mcp_tool_with_an_ordinary_schema_is_declared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: a schema as servers write them (properties, required, nested objects and arrays) is declared as given."""
    from unified.tools import _mcp

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "opts": {"type": "object", "properties": {"n": {"type": "array"}}}},
        "required": ["q"],
    }

    async def connect(server: Any, stack: Any, secrets: Any = ()) -> list[Any]:
        tool = mcp_types.Tool(name="search", inputSchema=schema)
        return [_mcp._spec(server.name, cast(Any, None), tool, cast(Any, None))]

    monkeypatch.setattr(_mcp, "connect_server", connect)
    async with ToolRuntime(tmp_path) as runtime:
        assert await runtime.connect_mcp([StdioMcpServer(name="srv", command="unused")]) == []
        [declared] = [d for d in runtime.declarations() if d["name"] == "mcp__srv__search"]
    assert declared["parameters"]["required"] == ["q"]
    assert declared["parameters"]["properties"]["opts"] == schema["properties"]["opts"]


# 5. other names of files that run later


@pytest.mark.parametrize(
    "path",
    [
        "lefthook-local.yml",
        ".lefthook-local.yml",
        "lefthook.yaml",
        "lefthook.toml",
        ".lefthook.json",
        "lefthook.jsonc",
        ".config/lefthook.yml",
        ".config/lefthook-local.yaml",
        ".lefthook/pre-commit/lint.sh",
        ".lefthook-local/pre-push/x.sh",
        "project.code-workspace",
        ".devcontainer.json",
    ],
)
async def test_another_name_of_a_hook_or_editor_file_is_asked_in_auto_edit(tmp_path: Path, path: str) -> None:
    """SUCCEEDED before: only `lefthook.yml`, `.lefthook.yml`, `.devcontainer/**` and `.vscode/{tasks,settings,
    launch}.json` were protected. lefthook reads any of its names and merges `lefthook-local.*` (commands the next
    `git commit` runs), and runs the scripts of `.lefthook/<hook>/`; a `*.code-workspace` file holds VS Code tasks
    that run when it is opened; `.devcontainer.json` at the root is a dev container's file as well."""
    async with ToolRuntime(tmp_path, approval_mode="auto_edit") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "write_file", {"file_path": path, "content": "x"})])
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.rule) == ("deny", "protected-paths")
    assert not (tmp_path / path).exists()


@pytest.mark.parametrize("path", ["docs/lefthook.md.txt", "src/workspace.ts", "devcontainer.md", "config/app.yml"])
async def test_files_named_like_them_stay_written_unasked(tmp_path: Path, path: str) -> None:
    """Pin: names beside them are ordinary files."""
    async with ToolRuntime(tmp_path, approval_mode="auto_edit") as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "write_file", {"file_path": path, "content": "x"})])
    assert outcome.decision is not None
    assert outcome.decision.decision == "allow"


# 6. Claude Code's tools an excluded tool stands for


@pytest.mark.parametrize(
    ("excluded", "taken"),
    [
        ("edit_file", {"Edit", "MultiEdit", "NotebookEdit"}),
        ("read_file", {"Read", "NotebookRead"}),
        ("invoke_agent", {"Agent", "Task"}),
        ("write_*", {"Write"}),
        ("replace", {"Edit", "MultiEdit", "NotebookEdit"}),
    ],
)
def test_an_excluded_tool_takes_every_claude_tool_the_policy_reads_as_it(
    tmp_path: Path, excluded: str, taken: set[str]
) -> None:
    """SUCCEEDED before: `excluded_tools=["edit_file"]` gave `--disallowedTools Edit` alone, so `NotebookEdit`
    (which the policy reads as `edit_file`, allowed in auto_edit) stayed offered and ran; a glob (`write_*`) was
    passed as it is, a name the CLI has no tool of, and took nothing away."""
    from unified._adapters.claude_code._launch import Launch
    from unified._adapters.claude_code._options import claude_code_options
    from unified.types import ExecuteParams

    params = ExecuteParams(
        prompt="x",
        backend="claude-code",
        cwd=tmp_path,
        backend_options={"start_process": print},
        excluded_tools=(excluded,),
    )
    argv = Launch.of(params, claude_code_options(params.backend_options)).argv(session_id="s", resume=False)
    given = set(argv[argv.index("--disallowedTools") + 1].split(","))
    assert taken <= given
    assert "Bash" not in given


@pytest.mark.parametrize(
    ("excluded", "taken"),
    [
        ("write_*", {"write_file"}),
        ("edit_*", {"replace"}),
        ("*_file", {"read_file", "write_file"}),
        ("read_file", {"read_file", "read_many_files"}),
        ("list_dir", {"list_directory"}),
    ],
)
def test_an_excluded_glob_or_tool_takes_the_gemini_clis_tools_it_names(excluded: str, taken: set[str]) -> None:
    """SUCCEEDED before: the CLI reads a rule's `toolName` as one name (`*`, `mcp_*`, `mcp_<server>_*` aside), so
    `excluded_tools=["write_*"]` became a deny rule for no tool and `write_file` stayed offered (and ran in auto_edit,
    the gate not reading `excluded_tools`); excluding `read_file` left `read_many_files`."""
    import tomllib

    from unified._adapters.gemini_cli._launch import deny_rules

    denied = {rule["toolName"] for rule in tomllib.loads(deny_rules([excluded]))["rule"]}
    assert taken <= denied
    assert "run_shell_command" not in denied
