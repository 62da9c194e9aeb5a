"""Every file under cassettes/ is free of secrets and says honestly what it was recorded against.

Cassettes are committed and shipped, so a leaked key would be public. The recorders scrub what they
know (`unified.testing._cassettes`, the gemini-cli transcript recorder); this scan is the net under
them: any API key, OAuth token, bearer token, credential header or `key=` query value that is not
`<redacted>` fails, naming the file and line. A cassette made against the local FakeGemini (or with
the CLI's --fake-responses) must say so, and one claiming a real service must show requests to
Google's hosts: no cassette may pass for a recording of Google's servers when it is not one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from unified.testing._cassettes import REDACTED, SECRET_HEADERS, SECRET_RESPONSE_HEADERS
from unified.testing._yaml import load_yaml

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"
_VALUE = r"""\s*["']?\s*[:=]\s*["']?(?!<redacted>|%3Credacted%3E)(?P<value>[^\s"',;}&]{4,})"""
SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "Google API key": re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),
    "OAuth access token": re.compile(r"ya29\.[0-9A-Za-z_\-]{10,}"),
    "OAuth client secret": re.compile(r"GOCSPX-[0-9A-Za-z_\-]{10,}"),
    "bearer token": re.compile(r"[Bb]earer\s+(?!<redacted>)[A-Za-z0-9._~+/\-]{8,}"),
    "refresh token": re.compile(r"refresh_token", re.IGNORECASE),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "credential header": re.compile(
        r"(?i)(?:x-goog-api-key|authorization|proxy-authorization|x-goog-iam-authorization-token|set-cookie|cookie)"
        + _VALUE
    ),
    "key= query parameter": re.compile(r"[?&](?:key|access_token)=(?!<redacted>|%3Credacted%3E)[^&\s\"']+"),
}
FAKE_SOURCE = re.compile(r"fake|127\.0\.0\.1|localhost", re.IGNORECASE)
REAL_SOURCE = re.compile(r"real (?:service|Google)|googleapis\.com", re.IGNORECASE)
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def cassette_files() -> list[Path]:
    return sorted(p for p in CASSETTES.rglob("*") if p.is_file())


def leaks(path: Path) -> Iterator[str]:
    """`file:line: what` for each secret-looking text, with the value masked."""
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        for what, pattern in SECRET_PATTERNS.items():
            if match := pattern.search(line):
                yield f"{path}:{number}: {what} ({match.group(0)[:12]}...)"
    if path.suffix in (".yaml", ".yml"):
        yield from _header_leaks(path)


def _header_leaks(path: Path) -> Iterator[str]:
    """vcrpy writes header values on the lines after their names: check them structurally."""
    data = load_yaml(path.read_text(encoding="utf-8")) or {}
    for index, interaction in enumerate(data.get("interactions") or []):
        for part, names in (("request", SECRET_HEADERS), ("response", (*SECRET_HEADERS, *SECRET_RESPONSE_HEADERS))):
            headers = (interaction.get(part) or {}).get("headers") or {}
            for name, values in headers.items():
                if name.lower() in names and any(v != REDACTED for v in _as_list(values)):
                    yield f"{path}: interaction {index} {part} header {name} is not {REDACTED}"


def _as_list(values: Any) -> list[Any]:
    return values if isinstance(values, list) else [values]


def source_of(path: Path) -> tuple[str, list[str]]:
    """(what the cassette says it was recorded against, the hosts its requests went to)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        meta = json.loads(text.splitlines()[0])
        return str(meta.get("recorded_from", "")), []
    match = re.search(r"^#\s*Recorded\s+\S+\s+against\s+(.+)$", text, re.MULTILINE)
    data = load_yaml(text) or {}
    hosts = [urlsplit(str(i["request"]["uri"])).hostname or "" for i in data.get("interactions") or []]
    return (match.group(1) if match else ""), hosts


def test_cassettes_exist() -> None:
    assert cassette_files(), f"no cassettes under {CASSETTES}"


@pytest.mark.parametrize("path", cassette_files(), ids=lambda p: str(p.relative_to(CASSETTES)))
def test_no_secrets(path: Path) -> None:
    found = list(leaks(path))
    assert not found, "secrets in a cassette:\n" + "\n".join(found)


@pytest.mark.parametrize("path", cassette_files(), ids=lambda p: str(p.relative_to(CASSETTES)))
def test_says_what_it_was_recorded_against(path: Path) -> None:
    assert path.suffix in (".yaml", ".yml", ".jsonl"), f"{path}: not a cassette format (vcrpy YAML or JSONL transcript)"
    source, hosts = source_of(path)
    assert source, f"{path}: no metadata saying what it was recorded against"
    fake, real = bool(FAKE_SOURCE.search(source)), bool(REAL_SOURCE.search(source))
    assert fake != real, f"{path}: the source must say plainly fake (local) or real, not {source!r}"
    if fake:
        remote = sorted(set(hosts) - LOCAL_HOSTS)
        assert not remote, f"{path}: says it was recorded against a local fake, but requests went to {remote}"
    else:
        elsewhere = sorted(h for h in set(hosts) if not h.endswith("googleapis.com"))
        assert not elsewhere, f"{path}: claims a real service, but requests went to {elsewhere}"


def test_the_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The patterns catch planted secrets (built at run time, so this file holds none) and pass redactions."""
    key = "AIza" + "S" * 35
    planted = tmp_path / "planted.yaml"
    planted.write_text(
        f"uri: https://example.com/v1?alt=sse&key={key}\n"
        "Authorization: Bearer abcdefghijklmnop\n"
        '"x-goog-api-key": "sk-live-123456"\n'
        f"token: ya29.{'a' * 20}\n"
        "interactions:\n- request:\n    headers:\n      x-goog-api-key:\n      - plain-value\n    uri: http://x\n"
    )
    kinds = {line.split(": ", 1)[1].split(" (")[0] for line in leaks(planted)}
    assert {"Google API key", "bearer token", "credential header", "OAuth access token"} <= kinds
    assert any("header x-goog-api-key is not" in line for line in leaks(planted))
    clean = tmp_path / "clean.yaml"
    clean.write_text(
        "uri: http://127.0.0.1:1/v1beta/models/m:streamGenerateContent?alt=sse&key=<redacted>\n"
        "interactions:\n- request:\n    headers:\n      x-goog-api-key:\n      - <redacted>\n    uri: http://x\n"
    )
    assert list(leaks(clean)) == []
