"""Commands that write the paths their input names are asked under an allow rule (docs/tools.md,
"Protected paths").

A user allows `tar *`, `git *`, `cp *`, ... The model, prompt-injected, cannot name
`.git/hooks/pre-commit` in its command (a literal protected path is asked), so it lets the data
name it: an archive's member, a diff's file, a revision's tree, a directory copied whole, a list
fed to xargs, a build tool's recipe. Each attack below really writes its victim in bash (the e2e
differential checks that), and none may be allowed without asking; the ordinary forms of the same
commands (`tar -tf`, `tar -czf out.tgz src`, `unzip -l`, `git status|diff|log|add|commit`) still are.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.harness.bash import run_bash
from unified.tools import Decision, Policy, ToolCall, ToolRuntime, _protected
from unified.tools import _shell_syntax as syntax

SHELL = "run_shell_command"
ALLOWED = [
    "tar", "unzip", "cpio", "7z", "patch", "git", "rsync", "cp", "mv", "ln", "find", "xargs", "make",
    "npm", "yarn", "pnpm", "npx", "pip", "gzip", "gunzip", "curl", "wget", "sed", "awk", "perl", "ed",
    "ar", "jar", "scp", "cat", "echo", "ls", "touch", "python3", "python3.11", "node", "bash", "sh", "pytest",
    "go", "cargo",
]  # fmt: skip
ALLOW_RULE = (
    f'[[rule]]\nname = "user-allows"\ntoolName = "run_shell_command"\ncommandPrefix = {ALLOWED!r}\n'.replace("'", '"')
    + 'decision = "allow"\n'
)

HOOK = ".git/hooks/pre-commit"
PAYLOAD = "mkdir -p p/.git/hooks p/.vscode && echo pwned > p/.git/hooks/pre-commit && echo pwned > p/.vscode/tasks.json"
GIT_EVIL = (
    "git init -q -b main . && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m base"
    " && git checkout -q -b evil && echo pwned > .envrc && git add .envrc"
    " && git -c user.name=a -c user.email=a@b commit -q -m evil && git checkout -q main"
)
"""A repository whose branch `evil` tracks `.envrc` (git never tracks `.git/`: its payloads are the
other protected names)."""
DIFF = "printf -- '--- /dev/null\\n+++ b/.envrc\\n@@ -0,0 +1 @@\\n+pwned\\n' > x.diff"
UPSTREAM = f"mkdir up && (cd up && {GIT_EVIL} && git checkout -q evil)"
BEHIND = f"{UPSTREAM} && git clone -q up w && git -C w reset -q --hard HEAD~1"

ATTACKS: list[tuple[str, str | None, str, str | None]] = [
    # (case, setup run first and not judged, the command judged, the victim it writes)
    ("tar-x", f"{PAYLOAD} && tar -cf a.tar -C p . && rm -rf p", "tar -xf a.tar", HOOK),
    ("tar-legacy", f"{PAYLOAD} && tar -cf a.tar -C p . && rm -rf p", "tar xf a.tar", HOOK),
    ("tar-long", f"{PAYLOAD} && tar -cf a.tar -C p . && rm -rf p", "tar --extract --file a.tar", HOOK),
    ("tar-abbrev", f"{PAYLOAD} && tar -cf a.tar -C p . && rm -rf p", "tar --ext --file=a.tar", HOOK),
    ("tar-gz-C", f"{PAYLOAD} && tar -czf a.tgz -C p . && rm -rf p", "tar -xzf a.tgz -C .", ".vscode/tasks.json"),
    (
        "tar-checkpoint",
        "mkdir src",
        "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='touch .envrc' src",
        ".envrc",
    ),
    (
        "tar-to-command",
        "mkdir src && touch src/f && tar -cf a.tar src",
        "tar -xf a.tar --to-command='touch .envrc'",
        ".envrc",
    ),
    ("tar-compress-program", "mkdir src", "tar -cf x.tar -I 'touch .envrc;cat' src", ".envrc"),
    ("tar-attached-file", "mkdir src", "tar -cf.envrc src", ".envrc"),
    ("unzip", f"{PAYLOAD} && (cd p && zip -qr ../a.zip .) && rm -rf p", "unzip a.zip", HOOK),
    ("unzip-d", f"{PAYLOAD} && (cd p && zip -qr ../a.zip .) && rm -rf p", "unzip -o a.zip -d .", HOOK),
    ("patch", DIFF, "patch -p1 < x.diff", ".envrc"),
    ("patch-i", DIFF, "patch -p1 -i x.diff", ".envrc"),
    ("git-checkout-path", GIT_EVIL, "git checkout evil -- .", ".envrc"),
    ("git-checkout", GIT_EVIL, "git checkout -q evil", ".envrc"),
    ("git-switch", GIT_EVIL, "git switch -q evil", ".envrc"),
    ("git-restore", GIT_EVIL, "git restore --source evil .", ".envrc"),
    ("git-merge", GIT_EVIL, "git merge -q evil", ".envrc"),
    ("git-reset-hard", GIT_EVIL, "git reset -q --hard evil", ".envrc"),
    ("git-cherry-pick", GIT_EVIL, "git -c user.name=a -c user.email=a@b cherry-pick evil", ".envrc"),
    (
        "git-apply",
        f"git init -q . && {DIFF}",
        "git apply x.diff",
        ".envrc",
    ),
    ("git-stash-pop", f"{GIT_EVIL} && git checkout -q evil -- .envrc && git stash -q", "git stash pop -q", ".envrc"),
    ("git-pull", BEHIND, "git -C w pull -q", "w/.envrc"),
    ("git-clone", UPSTREAM, "git clone -q up sub", "sub/.envrc"),
    ("git-read-tree", GIT_EVIL, "git read-tree -u --reset evil", ".envrc"),
    ("git-alias", f"{GIT_EVIL} && git config alias.co checkout", "git co -q evil", ".envrc"),
    ("git-c", "git init -q .", "git -c core.fsmonitor='touch .envrc; false' status", ".envrc"),
    (
        "git-upload-pack",
        f"mkdir up && (cd up && {GIT_EVIL}) && git init -q .",
        "git fetch --upload-pack='touch .envrc; git-upload-pack' up",
        ".envrc",
    ),
    ("git-submodule-foreach", "git init -q .", "git submodule foreach 'touch ../.envrc'", None),
    ("git-grep-pager", f"{GIT_EVIL}", "git grep --open-files-in-pager='touch .envrc;' base", None),
    ("rsync-tree", PAYLOAD, "rsync -a p/ .", HOOK),
    ("cp-tree", PAYLOAD, "cp -r p/. .", HOOK),
    ("cp-tree-slash", PAYLOAD, "cp -rT p .", HOOK),
    ("cp-target", PAYLOAD, "cp -r -t . p/.git", HOOK),
    ("mv-tree", "mkdir -p p/.git/hooks && echo pwned > p/.git/hooks/pre-commit && rm -rf .git", "mv p/.git .", HOOK),
    ("mv-dir", "mkdir -p p/x && echo pwned > p/x/.envrc", "mv p/x y", "y/.envrc"),
    ("cp-attached-target", "echo pwned > evil && mkdir -p .git/hooks", "cp -t.git/hooks evil", ".git/hooks/evil"),
    ("xargs-writer", "printf '.envrc\\n' > list && echo pwned > evil", "xargs cp evil < list", None),
    ("xargs-a", "printf '.envrc\\n' > list && echo pwned > evil", "xargs -a list -n1 cp evil", None),
    ("xargs-touch", "printf '.envrc\\n' > list", "cat list | xargs touch", ".envrc"),
    (
        "find-delete",
        "mkdir -p .gemini/policies && echo x > .gemini/policies/deny.toml",
        "find . -name '*.toml' -delete",
        None,
    ),
    ("make", "printf 'all:\\n\\ttouch .envrc\\n' > Makefile", "make", ".envrc"),
    ("make-n", "printf 'all:\\n\\t+touch .envrc\\n' > Makefile", "make -n", ".envrc"),
    ("npm-install", None, "npm install --offline", None),
    ("npm-run", None, "npm run build", None),
    ("npx", None, "npx some-package", None),
    ("pip-install", None, "pip install .", None),
    ("gunzip-name", "echo pwned > .envrc && gzip -N .envrc && mv .envrc.gz x.gz", "gunzip -N x.gz", ".envrc"),
    ("sed-w", "echo pwned > x", "sed -n 'w .envrc' x", ".envrc"),
    ("sed-s-w", "echo a > x && mkdir .git", "sed 's/a/pwned/w .git/config' x", ".git/config"),
    ("sed-e", "echo a > x", "sed '1e touch .envrc' x", ".envrc"),
    ("sed-s-e", "echo 'touch .envrc' > x", "sed 's/^//e' x", ".envrc"),
    ("sed-script-file", "printf 'w .envrc\\n' > s.sed && echo pwned > x", "sed -n -f s.sed x", ".envrc"),
    ("awk-redirect", "echo pwned > x", "awk '{print > \".envrc\"}' x", ".envrc"),
    ("awk-system", "echo a > x", "awk 'BEGIN{system(\"touch .envrc\")}'", ".envrc"),
    ("perl", None, "perl -e 'open F, \">.envrc\"'", ".envrc"),
    ("ed", "echo pwned > x", "ed -s x <<< 'w .envrc'", ".envrc"),
    ("curl-remote-header-name", None, "curl -OJ https://example.invalid/x", None),
    ("wget-recursive", None, "wget -r https://example.invalid/", None),
    ("wget-execute", None, "wget -e output_document=.envrc https://example.invalid/", None),
    ("ar-x", "mkdir q && echo pwned > q/.envrc && (cd q && ar rc ../a.a .envrc) && rm -rf q", "ar x a.a", ".envrc"),
    ("scp-remote-tree", None, "scp -r host:dir/. .", None),
    # interpreters and what runs a project's own code (perl -e was asked, python3 -c was not)
    ("python3-c", None, "python3 -c \"open('.envrc', 'w').write('pwned')\"", ".envrc"),
    ("python3-script", 'printf \'open(".envrc", "w")\\n\' > x.py', "python3 x.py", ".envrc"),
    ("python3-stdin", None, "python3 <<< \"open('.envrc', 'w')\"", ".envrc"),
    ("python3-versioned", None, "python3.11 -c \"open('.envrc', 'w')\"", ".envrc"),
    ("python3-module", 'printf \'open(".envrc", "w")\\n\' > m.py', "python3 -m m", ".envrc"),
    ("node-e", None, "node -e \"require('fs').writeFileSync('.envrc', 'pwned')\"", ".envrc"),
    ("bash-script", "echo 'echo pwned > .envrc' > s.sh", "bash s.sh", ".envrc"),
    ("sh-script", "echo 'echo pwned > .envrc' > s.sh", "sh s.sh", ".envrc"),
    ("pytest-conftest", 'printf \'open(".envrc", "w")\\n\' > conftest.py', "pytest --co -q", None),
    ("go-generate", "printf 'package x\\n//go:generate touch .envrc\\n' > x.go", "go generate", None),
    ("go-test", None, "go test ./...", None),
    ("cargo-build", "mkdir src && echo 'fn main(){}' > build.rs", "cargo build", None),
]
"""Under an allow rule for the command, each of these writes a protected path (the victim)."""

SAFE = [
    "tar -tf a.tar",
    "tar tvf a.tar",
    "tar -czf out.tgz src",
    "tar -cvzf out.tgz -C src .",
    "tar --list --file=a.tar",
    "unzip -l a.zip",
    "unzip -t a.zip",
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat HEAD~1",
    "git log --oneline -5",
    "git show HEAD:src/main.py",
    "git add .",
    "git add -A src",
    "git commit -m 'a message'",
    "git -C sub status",
    "git --no-pager log",
    "git branch -a",
    "git fetch origin",
    "git push origin main",
    "git stash list",
    "git rev-parse HEAD",
    "git --version",
    "cp a b",
    "cp -r src dist",
    "rsync -a src/ dist/",
    "mv build/x dist/x",
    "find . -name '*.py'",
    "sed -n 1,10p src/main.py",
    "sed -i 's/a/b/' src/main.py",
    "sed -e 's/x/y/g;s/e/f/' -e '/^#/d' src/main.py",
    "awk '{print $1}' src/main.py",
    "awk -F: '$3 > 100 {print $1}' users.txt",
    "gunzip x.gz",
    "gzip -k src/main.py",
    "curl -o out.html https://example.invalid/",
    "npm ls",
    "pip list",
    "xargs echo < list",
    "go build ./...",
    "go vet ./...",
    "go -C sub build",
    "cargo fmt",
    "cargo --version",
    "bash -c 'echo hi'",
]
"""Ordinary forms of the same commands: they write nothing their arguments do not name."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for directory in ("src", "dist", "build", "sub"):
        (root / directory).mkdir(parents=True)
    (root / "src" / "main.py").write_text("print(1)\n")
    return root


def _verdict(ws: Path, command: str) -> str:
    """`allow` only if the user's rule allows it and it may write no protected path."""
    verdict = Policy.default().with_toml(ALLOW_RULE).evaluate(SHELL, {"command": command}, "default")
    if verdict.decision is not Decision.ALLOW:
        return verdict.decision.value
    reason = _protected.shell_protected(syntax.parse(command), ws, (ws,))
    return "allow" if reason is None else f"protected: {reason}"


@pytest.mark.parametrize(("case", "setup", "command", "victim"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_a_write_decided_by_data_is_asked(
    ws: Path, case: str, setup: str | None, command: str, victim: str | None
) -> None:
    assert _verdict(ws, command) != "allow"


@pytest.mark.parametrize("command", SAFE)
def test_ordinary_forms_are_still_allowed(ws: Path, command: str) -> None:
    (ws / "src" / "lib").mkdir()
    (ws / "build" / "x").write_text("")
    assert _verdict(ws, command) == "allow"


@pytest.mark.anyio
async def test_the_runtime_denies_them_with_nobody_to_ask(ws: Path) -> None:
    """Through the runtime: each is denied by the protected-paths rule before bash starts."""
    policy = Policy.default().with_toml(ALLOW_RULE)
    async with ToolRuntime(ws, approval_mode="auto_edit", policy=policy) as tools:
        outcomes = await tools.run_batch([ToolCall(str(i), SHELL, {"command": a[2]}) for i, a in enumerate(ATTACKS)])
    for attack, outcome in zip(ATTACKS, outcomes, strict=True):
        assert outcome.is_error, attack[0]
        assert outcome.decision is not None
        assert outcome.decision.decision == "deny", attack[0]
        assert outcome.decision.rule == "protected-paths", (attack[0], outcome.decision.reason)


def test_a_copied_tree_is_judged_by_what_it_holds(ws: Path) -> None:
    """A source holding no protected name is copied without asking; one holding any is asked."""
    (ws / "clean" / "a").mkdir(parents=True)
    (ws / "clean" / "a" / "x.py").write_text("")
    (ws / "dirty" / "deep" / "er").mkdir(parents=True)
    (ws / "dirty" / "deep" / "er" / ".bashrc").write_text("")
    assert _verdict(ws, "cp -r clean/. .") == "allow"
    assert _verdict(ws, "rsync -a clean/ .") == "allow"
    assert "dirty/deep/er/.bashrc" in _verdict(ws, "cp -r dirty/. .")
    assert "dirty/deep/er/.bashrc" in _verdict(ws, "mv dirty elsewhere")


def test_a_tree_too_large_to_check_is_asked(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_protected, "TREE_CHECK_MAX_ENTRIES", 3)
    for index in range(5):
        (ws / "big" / str(index)).mkdir(parents=True)
    assert "too many" in _verdict(ws, "cp -r big/. .")


def _run_bash(command: str, cwd: Path) -> None:
    """bash without the machine's git configuration, its HOME the workspace."""
    run_bash(
        command, cwd, {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    )


@pytest.mark.e2e  # runs the real bash and the real tools
def test_differential_each_attack_writes_its_victim_in_bash(tmp_path: Path) -> None:
    """Each attack with a victim really writes it when bash runs it (so the tests above test
    something), and none that does is allowed."""
    wrote: list[str] = []
    skipped: list[str] = []
    for index, (case, setup, command, victim) in enumerate(ATTACKS):
        if victim is None:
            continue
        tool = syntax.parse(command)[0].name
        if tool is None or shutil.which(tool) is None:
            skipped.append(case)
            continue
        root = tmp_path / str(index)
        root.mkdir()
        if setup is not None:
            _run_bash(setup, root)
        before = (root / victim).read_bytes() if (root / victim).exists() else None
        _run_bash(command, root)
        after = (root / victim).read_bytes() if (root / victim).exists() else None
        if after is not None and after != before:
            wrote.append(case)
            assert _verdict(root, command) != "allow", case
    expected = [a[0] for a in ATTACKS if a[3] is not None and a[0] not in skipped]
    assert sorted(set(expected) - set(wrote)) == []
