"""`unified.tools._read_only`: the commands that only read (the codex backend runs those unasked when Codex's
own parse agrees), and what must be asked though Codex parses it as a read (measured on Codex 0.171)."""

from __future__ import annotations

import pytest

from unified.tools._read_only import not_read_only, operands

READS = [
    "cat a",
    "cat -n a b",
    "ls -la",
    "ls -R src",
    "head -n 3 a | wc -l",
    "tail -n 20 log.txt",
    "nl -ba a",
    "sed -n 1,200p a",
    "sed -n '$p' a",
    "sed -n 5p a",
    "rg foo .",
    "rg -n --hidden 'x y' src 2>/dev/null",
    "rg --pre-glob '*.gz' foo",
    "grep -rn foo src",
    "find . -name '*.py'",
    "find src -type f -newer a",
    "fd -e py",
    "git grep -n foo",
    "sort a",
    "tree -L 2",
    "file a",
    "stat a && du -sh .",
    "pwd; ls",
    "cat a | grep foo | head -n 5",
    "/usr/bin/cat a",
]

NOT_READS = [
    ("find . -delete", "-delete"),
    ("find . -exec touch X \\;", "find"),
    ("find . -execdir rm {} +", "-execdir"),
    ("find . -ok rm {} \\;", "find"),
    ("find . -fprint x", "-fprint"),
    ("find . -fprintf x '%p'", "-fprintf"),
    ("find . -fls x", "-fls"),
    ("find -files0-from list -name x", "-files0-from"),  # lists where a list the model wrote points
    ("find -- . -delete", "-delete"),  # find's `--` ends its options, not its expression: it deletes
    ("find . -name x -- -delete", "-delete"),
    ("sort -- -o x a", "-o"),  # after `--` a name, but asked all the same
    ("rg --pre ./evil.sh foo .", "--pre"),
    ("rg --pre=./evil.sh foo", "--pre"),
    ("rg --hostname-bin=./evil --hyperlink-format='{host}' foo", "--hostname-bin"),
    ("fd -x touch", "-x"),
    ("fd --exec-batch rm", "--exec-batch"),
    ("fdfind -X rm", "-X"),
    ("git grep -O'touch x' foo", "-O"),
    ("git grep --open-files-in-pager='touch x' foo", "--open-files-in-pager"),
    ("git grep --textconv foo", "--textconv"),
    ("sort -o x a", "-o"),
    ("sort --compress-program=./evil a", "--compress-program"),
    ("tree -o x", "-o"),
    ("tree -R -L 1", "-R"),  # writes 00Tree.html in every directory
    ("sort --files0-from=list", "--files0-from"),  # prints the files a list the model wrote names
    ("wc --files0-from=list", "--files0-from"),
    ("du --files0-from list", "--files0-from"),
    ("file -C -m magic", "-C"),
    ("sed -n 'w x' a", "script"),
    ("sed -n '1e touch x' a", "script"),
    ("sed -n 's/a/b/w x' a", "script"),
    ("sed -i 1d a", "-i"),
    ("sed 1p a", "without -n"),
    ("sed -n -e 'w x' a", "-e"),
    ("sed -n -f script.sed a", "-f"),
    ("cat a | tee x", "tee"),
    ("nl a | xargs touch", "xargs"),
    ("cat a > x", "writes"),
    ("grep -r foo . >> x", "writes"),
    ("cat $(touch x)", "touch"),
    ("cat `touch x`", "touch"),
    ("cat <(touch x)", "touch"),
    ("ls; touch x", "touch"),
    ("head a && rm -rf ~", "rm"),
    ("./cat a", "path"),
    ("/tmp/cat a", "path"),
    ("X=1 cat a", "variable"),
    ("env cat a", "env"),
    ("timeout 5 cat a", "timeout"),
    ("bash -c 'cat a'", "bash"),
    ('cat "$HOME/.netrc"', "run time"),
    ("less +'!touch x' a", "only reads"),
    ("awk 'BEGIN{system(\"touch x\")}'", "only reads"),
    ("git --no-pager grep foo", "only reads"),
    ("git -c core.pager=evil grep foo", "only reads"),
    ("cat < /dev/tcp/example.com/80", "not a plain file"),
    ("", "no command"),
]


@pytest.mark.parametrize("command", READS)
def test_reads(command: str) -> None:
    assert not_read_only(command) is None


@pytest.mark.parametrize(("command", "said"), NOT_READS)
def test_what_may_write_delete_or_run_is_not_a_read(command: str, said: str) -> None:
    why = not_read_only(command)
    assert why is not None
    assert said in why


def test_the_docs_table_lists_every_program_and_option() -> None:
    """docs/tools.md, "Read-only commands", names every program of read_only.toml and each of its options."""
    import tomllib
    from pathlib import Path

    import unified.tools

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "tools.md").read_text()
    section = doc.split("### Read-only commands", 1)[1].split("\n### ", 1)[0]
    data = tomllib.loads((Path(unified.tools.__file__).parent / "read_only.toml").read_text())
    rows = {line.split(" | ")[0]: line for line in section.splitlines() if line.startswith("| `")}
    for program in data["program"]:
        [row] = [line for key, line in rows.items() if f"`{program['commands'][0]}`" in key]
        for name in [*program["commands"], *program.get("unsafe", ())]:
            assert f"`{name}`" in row, (name, row)


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("nl a /etc/hostname", ["a", "/etc/hostname"]),
        ("grep -rn foo src", ["n", "foo", "src"]),  # a cluster of letters reads as an attached value: harmless
        ("grep -f/etc/passwd a", ["/etc/passwd", "a"]),
        ("rg --file=/etc/x y", ["/etc/x", "y"]),
        ("cat a | head -n 2 ../b", ["a", "2", "../b"]),
        ('cat "$HOME"', []),
    ],
)
def test_every_word_that_may_be_a_path_is_an_operand(command: str, words: list[str]) -> None:
    assert operands(command) == words
