"""The tools' regexes where google-re2's bindings lack the private `_Regexp` class (a later version may
rename it): `_REGEXP` falls back to `re2.compile`, which must take the same options and give the same
answers and errors."""

from __future__ import annotations

import pytest
import re2

from unified.tools import _regex


def test_patterns_compile_through_re2_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_regex, "_REGEXP", re2.compile)
    monkeypatch.setattr(_regex, "_cache", type(_regex._cache)())
    pattern = _regex.compile_pattern(r"(?<word>\p{L}+)\z")
    match = pattern.search("x = héllo")
    assert match is not None
    assert match.group("word") == "héllo"
    with pytest.raises(_regex.PatternError, match="missing"):
        _regex.compile_pattern("(a")
    with pytest.raises(_regex.PatternError, match="too large"):  # the memory bound still holds
        _regex.compile_pattern(r"\pL{1000}")


def test_the_private_class_is_used_where_the_bindings_have_it() -> None:
    """google-re2 1.1 has it: compiling does not also fill `re2.compile`'s own cache of 128 patterns."""
    assert _regex._REGEXP is re2._Regexp
