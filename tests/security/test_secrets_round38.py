"""Round 38 of issue 29 (bench/README.md, "The thirty-eighth round"): a stream holds back the end of a piece that
begins a secret by looking that end up (`Redactor.partial_suffix`, `_ends`), not by searching for the secrets'
first characters. The search skipped an end that began inside a failed match (a secret whose beginning repeats, as a
bearer token's run of `A`s does), and the piece showed more of the secret than the stated bound; the look-up finds
the longest end by definition."""

from __future__ import annotations

import random

import pytest

from unified import ExecuteParams
from unified._execute import EventStream
from unified._redaction import REDACTED, SPLIT_HOLD_MIN, SplitGuard, _plain, redactor
from unified.events import SessionStarted, TextDelta
from unified.testing._scripted import ScriptedBackend, Step

pytestmark = pytest.mark.anyio

TOKEN = "A" * 21 + "MLheAAAAAAAA0npTAAAAAAAAround38bearer"
"""A bearer token's shape (21 `A`s, then its id): its beginning repeats, so a run of `A`s longer than its own
begins it only from the second `A` on."""


def _longest_end(text: str, held: tuple[str, ...], least: int) -> int:
    """`partial_suffix` by its definition: the longest end of `text`, `least` long or longer, that begins a held
    secret without being all of it."""
    sizes = [
        size
        for value in held
        for size in range(least, min(len(text), len(value) - 1) + 1)
        if text.endswith(value[:size])
    ]
    return max(sizes, default=0)


def test_a_piece_ending_in_more_of_a_repeated_beginning_holds_the_secret_s_beginning_back() -> None:
    """`x` and 22 `A`s: the token may begin at the second `A` (21 of its own, then `M`). The search for `AAAA` found
    the first `A`, failed, and went on after that match: it held back 18 and showed `xAAAA`, four characters of the
    token before its rest came."""
    guard = SplitGuard(redactor(env={}, extra=[TOKEN]))
    shown = guard.feed("x" + "A" * 22)
    assert shown == "xA"
    assert guard.feed(TOKEN[21:] + " done") == f"{REDACTED} done"


@pytest.mark.parametrize("seed", range(30))
def test_the_held_end_is_the_longest_that_begins_a_secret(seed: int) -> None:
    """Random texts over a small alphabet (so ends begin secrets often, overlapping ones too) against secrets
    whose beginnings repeat: `partial_suffix` is its definition, for every `least` a stream uses and below it."""
    rng = random.Random(seed)
    held = tuple(
        sorted({"".join(rng.choice("ab") for _ in range(rng.randint(8, 24))) for _ in range(3)}, key=len, reverse=True)
    )
    clean = _plain(held)
    for _ in range(200):
        text = "".join(rng.choice("abc") for _ in range(rng.randint(0, 40)))
        for least in (1, SPLIT_HOLD_MIN, SPLIT_HOLD_MIN + 2):
            assert clean.partial_suffix(text, least) == _longest_end(text, held, least), (text, held, least)


async def test_a_streamed_token_after_a_longer_run_of_its_beginning_shows_at_most_the_bound() -> None:
    """Through the stream guard: the token given to the run in code, streamed after one `A` too many. No text delta
    shows `SPLIT_HOLD_MIN` characters of it, and the message has it replaced."""
    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    steps: list[Step] = [started, TextDelta(text="bearer " + "A" * 22), TextDelta(text=TOKEN[21:] + " ok")]
    params = ExecuteParams(prompt="p", backend="scripted", backend_options={"api_key": TOKEN})
    async with EventStream(params, backend=ScriptedBackend(steps)) as stream:
        events = [event async for event in stream]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == f"bearer A{REDACTED} ok"
    for delta in deltas:
        assert TOKEN[:SPLIT_HOLD_MIN] not in delta
