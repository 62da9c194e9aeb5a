"""Commands that delete, replace or change a directory whole are asked when it holds a protected
path (docs/tools.md, "Protected paths").

A user allows `rm`, `rsync`, `mv`, `zip`, `gzip`, ... The model, prompt-injected, cannot name
`vendor/lib/.git/hooks/pre-commit` (a literal protected path is asked), so it names the directory
holding it: `rm -rf vendor` deletes the hooks all the same, and a later clone or checkout puts
the attacker's there. HOLES were allowed before the tree search; BLOCKED were already asked (an
argument only known at run time, a subcommand not known to be safe), kept so they stay asked.
Each attack with a victim really deletes or changes it in bash (the e2e differential checks
that); SAFE are the ordinary forms, over trees holding no protected name, which stay allowed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.security.test_input_writers import _run_bash
from unified.tools import Decision, Policy, ToolCall, ToolRuntime, _protected
from unified.tools import _shell_syntax as syntax

SHELL = "run_shell_command"
ALLOWED = [
    "rm", "rmdir", "rsync", "mv", "cp", "git", "zip", "gzip", "zstd", "lz4", "7z", "trash-put", "gio", "srm",
    "wipe", "rclone", "fd", "fdfind", "rg", "toybox", "chmod", "chown", "chgrp", "cd", "pushd", "popd", "env",
    "sudo", "chroot", "command", "nice", "busybox", "ln", "mkdir", "ls", "echo", "find", "xargs", "unlink",
    "shred", "truncate", "dd", "tee", "install",
]  # fmt: skip
ALLOW_RULE = (
    f'[[rule]]\nname = "user-allows"\ntoolName = "run_shell_command"\ncommandPrefix = {ALLOWED!r}\n'.replace("'", '"')
    + 'decision = "allow"\n'
)

HOOK = "vendor/lib/.git/hooks/pre-commit"
VENDOR = f"{HOOK}=hook"
"""A vendored repository: its hooks are protected, the name `vendor` is not. A setup is made in
Python (`_make`): `path=content` files, `path/` directories and `path->target` links."""
LOOKALIKE = f"{VENDOR} lib/a=x"
"""...and a clean `lib` beside it, so a path judged from the wrong directory looks harmless."""
DST = "src/a=a dst/.envrc=env"

HOLES: list[tuple[str, str | None, str, str | None]] = [
    # (case, setup run first and not judged, the command judged, the victim it deletes or changes)
    ("rm-rf", VENDOR, "rm -rf vendor", HOOK),
    ("rm-Rf", VENDOR, "rm -Rf vendor", HOOK),
    ("rm-r-f", VENDOR, "rm -r -f vendor/", HOOK),
    ("rm-long", VENDOR, "rm --recursive --force vendor", HOOK),
    ("rm-abbreviated", VENDOR, "rm --rec --f vendor", HOOK),
    ("rm-options-after", VENDOR, "rm vendor -rf", HOOK),
    ("rm-double-dash", VENDOR, "rm -rf -- vendor", HOOK),
    ("rm-backslash", VENDOR, "\\rm -rf vendor", HOOK),
    ("rm-command", VENDOR, "command rm -rf vendor", HOOK),
    ("rm-env", VENDOR, "env rm -rf vendor", HOOK),
    ("rm-nice", VENDOR, "nice -n 1 rm -rf vendor", HOOK),
    ("rm-busybox", VENDOR, "busybox rm -rf vendor", HOOK),
    ("rm-toybox", VENDOR, "toybox rm -rf vendor", HOOK),
    ("rm-path", VENDOR, "/bin/rm -rf ./vendor/../vendor", HOOK),
    ("rm-dot", ".envrc=env d/", "rm -r .", None),  # GNU rm refuses `.`; others need not
    ("rm-parent-by-name", "w/.envrc=env", "cd w && rm -rf ../w", "w/.envrc"),
    ("rm-cd", LOOKALIKE, "cd vendor && rm -rf lib", HOOK),
    ("rm-pushd", LOOKALIKE, "pushd vendor > /dev/null && rm -rf lib", HOOK),
    ("rm-cd-chain", f"{VENDOR} .git/ lib=x", "cd vendor; cd lib; rm -rf .git/..", None),
    ("rm-env-C", LOOKALIKE, "env -C vendor rm -rf lib", HOOK),
    ("rm-env-chdir", LOOKALIKE, "env --chdir=vendor rm -rf lib", HOOK),
    ("rm-sudo-D", LOOKALIKE, "sudo -D vendor rm -rf lib", HOOK),
    ("rm-chroot", VENDOR, "chroot . rm -rf /vendor", None),
    ("rm-through-link", f"{VENDOR} x->vendor", "rm -rf x/", HOOK),
    ("rm-link-made-first", VENDOR, "ln -s vendor x && rm -rf x/", HOOK),
    ("rsync-delete", DST, "rsync -a --delete src/ dst/", None),
    ("rsync-del", DST, "rsync -a --del src/ dst/", None),
    ("rsync-delete-after", DST, "rsync -a --delete-after src/ dst/", None),
    ("rsync-delete-excluded", DST, "rsync -r --delete-excluded --exclude=x src/ dst/", None),
    ("rsync-remove-source", ".envrc=env list=.envrc", "rsync --remove-source-files --files-from=list . dst/", None),
    ("mv-exchange", DST, "mv --exchange src dst", None),
    ("zip-move", VENDOR, "zip -qrm out.zip vendor", HOOK),
    ("zip-move-long", VENDOR, "zip -q -r --move out.zip vendor", HOOK),
    ("gzip-r", VENDOR, "gzip -r vendor", HOOK),
    ("zstd-r", VENDOR, "zstd -q -r --rm vendor", HOOK),
    ("lz4-r", VENDOR, "lz4 -q -r --rm vendor", HOOK),
    ("7z-sdel", VENDOR, "7z a -sdel x.7z vendor", HOOK),
    ("7z-sdel-upper", VENDOR, "7z a x.7z vendor -SDEL", HOOK),
    ("trash-put", VENDOR, "trash-put vendor", HOOK),
    ("gio-trash", VENDOR, "gio trash vendor", None),  # needs a trash directory gio may not have here
    ("srm", VENDOR, "srm -r vendor", HOOK),
    ("chmod-R", VENDOR, "chmod -R 000 vendor", None),  # changes modes, not bytes
    ("chmod-R-mode-as-option", VENDOR, "chmod -R -x vendor", None),
    ("chmod-R-made-first", VENDOR, "ln -s vendor a && chmod -R -x a b", None),
    ("chown-R", VENDOR, "chown -R nobody vendor", None),
    ("chown-RL", "build/", "chown -RL nobody build", None),
    (
        "cp-over-a-link",
        ".git/hooks/pre-commit=old payload/pc=evil pc->.git/hooks/pre-commit",
        "cp -r payload/. .",
        ".git/hooks/pre-commit",  # cp writes through the link `pc` it finds where `payload/pc` lands
    ),
    (
        "cp-t-over-a-link",
        ".git/hooks/pre-commit=old payload/pc=evil pc->.git/hooks/pre-commit",
        "cp -rt . payload/.",
        ".git/hooks/pre-commit",
    ),
    (
        "cp-over-a-link-after-a-search",  # the tree searched first for gzip -r is searched again for the copy
        ".git/hooks/pre-commit=old payload/pc=evil pc->.git/hooks/pre-commit",
        "gzip -rt payload; cp -r payload/. .",
        ".git/hooks/pre-commit",
    ),
    ("rsync-K-over-a-dir-link", ".git/hooks/ payload/x/pre-commit=evil x->.git/hooks", "rsync -aK payload/ .", None),
    ("rclone-sync", DST, "rclone sync src dst", None),
    ("rclone-purge", VENDOR, "rclone purge vendor", None),
    ("fd-exec", VENDOR, "fd -HI -t d '^lib$' -x rm -rf", None),
    ("fd-exec-batch", VENDOR, "fdfind -HI lib --exec-batch rm -rf", None),
    ("rg-pre", "x=x", "rg --pre ./x y", None),
    (
        "cp-plants-link",
        ".git/hooks/ src/x->../.git/hooks",
        "cp -a src/. dst/",
        None,  # the link it copies leads a later copy into .git/hooks
    ),
]
"""Under an allow rule for the command, each of these was allowed and deletes or changes a protected path."""

BLOCKED: list[tuple[str, str | None, str, str | None]] = [
    ("rm-glob", VENDOR, "rm -rf *", HOOK),
    ("rm-glob-dot-slash", VENDOR, "rm -rf ./*", HOOK),
    ("rm-glob-dotfiles", ".envrc=env", "rm -rf .*", ".envrc"),
    ("rm-variable", VENDOR, 'D=vendor; rm -rf "$D"', HOOK),
    ("rm-cd-variable", LOOKALIKE, 'D=vendor; cd "$D" && rm -rf lib', HOOK),
    ("rm-env-C-variable", LOOKALIKE, 'D=vendor; env -C "$D" rm -rf lib', HOOK),
    ("find-exec-rm", VENDOR, "find . -name lib -exec rm -rf {} +", HOOK),
    ("xargs-rm", f"{VENDOR} list=vendor", "xargs rm -rf < list", HOOK),
    ("git-clean", ".envrc=env", "git init -q . && git clean -fdx", ".envrc"),
    ("git-clean-ff", ".envrc=env", "git init -q . && git clean -ffdx", ".envrc"),
    ("unlink", ".envrc=env", "unlink .envrc", ".envrc"),
    ("shred", ".envrc=env", "shred -u .envrc", ".envrc"),
    ("truncate", ".bashrc=rc", "truncate -s0 .bashrc", ".bashrc"),
    ("cp-dev-null", ".envrc=env", "cp /dev/null .envrc", ".envrc"),
    ("ln-sf", ".bashrc=rc x=x", "ln -sf x .bashrc", ".bashrc"),
    ("install", ".bashrc=rc x=x", "install x .bashrc", ".bashrc"),
    ("dd-of", ".envrc=env", "dd if=/dev/null of=.envrc", ".envrc"),
    ("tee", ".envrc=env", "echo x | tee .envrc", ".envrc"),
    ("redirect-variable", VENDOR, "D=vendor/lib; echo x > $D/.git/hooks/pre-commit", HOOK),
    ("mv-tree-away", VENDOR, "mv vendor elsewhere", HOOK),
]
"""Forms the check already asked before the tree search (kept, so they stay asked)."""

SAFE = [
    "rm -rf build",
    "rm -rf build dist",
    "rm -r build/x",
    "rm -rf not-there",
    "rm -rf not-there && ls",
    "rm -rf build && ls",
    "cd build && rm -rf x",
    "rmdir empty",
    "rm src/main.py",
    "rsync -a src/ dst/",
    "rsync -a --delete src/ dist/",
    "zip -qr out.zip src",
    "gzip -r build",
    "mv build/x dist/x",
    "cp -a src/. dist/",
    "chmod -R u+w build",
    "chmod 644 src/main.py && chmod -R u+w build",
    "chgrp -R 1 build && ls",
    "rclone sync src dist",
    "fd -e py",
    "rg -n main src",
]
"""Ordinary forms over trees holding no protected name (`dst` holds one, and nothing deletes there)."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for directory in ("src", "dist", "build/x", "empty", "dst"):
        (root / directory).mkdir(parents=True)
    (root / "src" / "main.py").write_text("print(1)\n")
    (root / "build" / "x" / "o.o").write_text("")
    (root / "dst" / ".envrc").write_text("env\n")
    return root


def _verdict(ws: Path, command: str, cwd: Path | None = None) -> str:
    """`allow` only if the user's rule allows it and it may write no protected path."""
    verdict = Policy.default().with_toml(ALLOW_RULE).evaluate(SHELL, {"command": command}, "default")
    if verdict.decision is not Decision.ALLOW:
        return verdict.decision.value
    reason = _protected.shell_protected(syntax.parse(command), cwd or ws, (ws,))
    return "allow" if reason is None else f"protected: {reason}"


def _set_up(root: Path, setup: str | None) -> None:
    """Make the files, directories and links a case's setup lists (no process: unit tier)."""
    for item in (setup or "").split():
        if "->" in item:
            name, target = item.split("->")
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).symlink_to(target)
        elif "=" in item:
            name, content = item.split("=")
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(content + "\n")
        else:
            (root / item).mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize(("case", "setup", "command", "victim"), HOLES, ids=[a[0] for a in HOLES])
def test_a_tree_holding_a_protected_path_is_asked(
    tmp_path: Path, case: str, setup: str | None, command: str, victim: str | None
) -> None:
    _set_up(tmp_path, setup)
    assert _verdict(tmp_path, command) != "allow"


@pytest.mark.parametrize(("case", "setup", "command", "victim"), BLOCKED, ids=[a[0] for a in BLOCKED])
def test_forms_already_asked_stay_asked(
    tmp_path: Path, case: str, setup: str | None, command: str, victim: str | None
) -> None:
    _set_up(tmp_path, setup)
    assert _verdict(tmp_path, command) != "allow"


@pytest.mark.parametrize("command", SAFE)
def test_clean_trees_are_still_allowed(ws: Path, command: str) -> None:
    assert _verdict(ws, command) == "allow"


def test_the_directory_a_cd_leads_to_is_judged_through_links(ws: Path) -> None:
    """`cd a && cd b` where `a/b` is a link to `.vscode`: `tasks.json` there is `.vscode/tasks.json`,
    though `b` from the call's directory names nothing."""
    (ws / ".vscode").mkdir()
    (ws / "a").mkdir()
    (ws / "a" / "b").symlink_to(ws / ".vscode")
    assert ".vscode" in _verdict(ws, "cd a && cd b && cp src/main.py tasks.json")


def test_a_call_in_a_subdirectory_judges_its_relative_paths_there(ws: Path) -> None:
    _set_up(ws, VENDOR)
    assert "vendor/lib/.git" in _verdict(ws, "rm -rf lib", cwd=ws / "vendor")


@pytest.mark.parametrize("command", ["RM -rf vendor", "Rm -Rf vendor", "GIT config core.hooksPath x", "TAR -xf a.tar"])
def test_the_program_is_known_in_any_case(ws: Path, command: str) -> None:
    """On a case-insensitive file system `RM` runs `rm`; a rule allowing every shell command lets it
    by, so the protected-path check is all that judges it, and it reads the name in any case."""
    _set_up(ws, VENDOR)
    assert _protected.shell_protected(syntax.parse(command), ws, (ws,)) is not None


def test_a_tree_too_large_to_search_is_asked(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is for the whole command: two trees of three entries each pass a bound of five
    one at a time, not together."""
    monkeypatch.setattr(_protected, "TREE_CHECK_MAX_ENTRIES", 5)
    for tree in ("a", "b"):
        for index in range(3):
            (ws / tree / str(index)).mkdir(parents=True)
    assert _verdict(ws, "rm -rf a") == "allow"
    assert "too many" in _verdict(ws, "rm -rf a b")


def test_a_link_loop_is_not_followed(ws: Path) -> None:
    """Links in a searched tree are never descended into: loops end the search, which still finds
    the protected name beside them."""
    (ws / "loop" / "deep" / "er").mkdir(parents=True)
    (ws / "loop" / "deep" / "up").symlink_to("..")
    (ws / "loop" / "self").symlink_to(".")
    (ws / "loop" / "a").symlink_to("b")
    (ws / "loop" / "b").symlink_to("a")
    (ws / "loop" / "deep" / "er" / ".envrc").write_text("")
    assert "loop/deep/er/.envrc" in _verdict(ws, "rm -rf loop")
    (ws / "loop" / "deep" / "er" / ".envrc").unlink()
    assert _verdict(ws, "rm -rf loop") == "allow"


def test_more_places_than_are_followed_are_asked(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_protected, "PLACES_MAX", 2)
    assert "more places" in _verdict(ws, "cd src; cd ../build; cd x; rm -rf y")
    monkeypatch.setattr(_protected, "PLACES_MAX", 32)
    many = "; ".join(f"cd d{i}" for i in range(33))  # none exists: each is a place of its own
    assert "more places" in _verdict(ws, f"{many}; rm -rf y")


@pytest.mark.anyio
async def test_the_runtime_denies_them_with_nobody_to_ask(tmp_path: Path) -> None:
    """Through the runtime, with the call's dir_path inside the vendored tree: denied by the
    protected-paths rule before bash starts, and the hooks are still there."""
    _set_up(tmp_path, VENDOR)
    policy = Policy.default().with_toml(ALLOW_RULE)
    calls = [
        ToolCall("1", SHELL, {"command": "rm -rf vendor"}),
        ToolCall("2", SHELL, {"command": "rm -rf lib", "dir_path": "vendor"}),
        ToolCall("3", SHELL, {"command": "cd vendor && rm -rf lib"}),
    ]
    async with ToolRuntime(tmp_path, approval_mode="auto_edit", policy=policy) as tools:
        outcomes = await tools.run_batch(calls)
    for outcome in outcomes:
        assert outcome.decision is not None
        assert outcome.decision.decision == "deny"
        assert outcome.decision.rule == "protected-paths", outcome.decision.reason
    assert (tmp_path / HOOK).read_text() == "hook\n"


_BUILTINS = frozenset({"cd", "pushd", "popd", "command", "echo"})


@pytest.mark.e2e  # runs the real bash and the real tools
def test_differential_each_attack_changes_its_victim_in_bash(tmp_path: Path) -> None:
    """Each attack with a victim really deletes or changes it when bash runs it (so the tests above
    test something), and none that does is allowed. A case whose programs are not installed here
    (busybox, toybox, sudo, 7z, trash-put, srm) is left out."""
    changed: list[str] = []
    skipped: list[str] = []
    for index, (case, setup, command, victim) in enumerate(HOLES + BLOCKED):
        if victim is None:
            continue
        parts = syntax.parse(command)
        names = {p.name for p in parts} | {via.split()[0] for p in parts for via in p.via}
        names -= _BUILTINS
        if any(name is None or shutil.which(name) is None for name in names):
            skipped.append(case)
            continue
        root = tmp_path / str(index)
        root.mkdir()
        _set_up(root, setup)
        before = (root / victim).read_bytes()
        verdict = _verdict(root, command)  # judged before it runs, as the runtime does
        _run_bash(command, root)
        after = (root / victim).read_bytes() if (root / victim).exists() else None
        if after != before:
            changed.append(case)
            assert verdict != "allow", case
    expected = [a[0] for a in HOLES + BLOCKED if a[3] is not None and a[0] not in skipped]
    assert sorted(set(expected) - set(changed)) == []
