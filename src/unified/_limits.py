"""Every size, depth and time bound that protects `unified` from what a backend, a model or a tool
sends it (docs/tools.md, "Limits"; docs/protocol.md, "Limits"). One place, so the numbers the docs
state are the numbers the code uses, and tests can lower one to try it cheaply.

A bound is enforced while the data arrives wherever that is possible (a stream is cut or refused
when it passes the bound, never read whole and cut afterwards), and a cut always says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "BACKGROUND_LOG_MAX_BYTES",
    "ECHO_MAX_CHARS",
    "LIST_DIR_MAX_ENTRIES",
    "MAX_CALLS_PER_TURN",
    "MAX_CONVERSATION_BYTES",
    "MAX_CONVERSATION_VALUES",
    "MAX_DECLARED_TOOLS",
    "MAX_EVENT_BYTES",
    "MAX_JSON_CONTAINERS",
    "MAX_JSON_DEPTH",
    "MAX_MCP_DECLARATION_BYTES",
    "MAX_PARTS_PER_TURN",
    "MAX_PATCH_FILES",
    "MAX_SESSION_HEADER_BYTES",
    "MAX_SESSION_PROMPT_CHARS",
    "MAX_SESSION_RECORD_BYTES",
    "MAX_SESSION_VALUES",
    "MAX_TOOL_OUTPUT_CHARS",
    "MAX_TURN_TEXT_CHARS",
    "MCP_MAX_MESSAGE_BYTES",
    "POLICY_PARTS_TEXT_MAX",
    "POLICY_WALK_MAX_ENTRIES",
    "SEARCH_MAX_BYTES",
    "SEARCH_TIME_BUDGET_S",
    "SHELL_MAX_FILE_BYTES",
    "SHELL_MAX_MEMORY_BYTES",
    "SHELL_MAX_PROCESSES",
    "SHELL_MAX_RUN_S",
    "WALK_MAX_ENTRIES",
    "WALK_OPEN_DIRS",
    "command_too_long",
    "conversation_too_large",
    "too_deep",
]

# --- what a backend or a tool may send --------------------------------------------------------

MAX_JSON_DEPTH = 64
"""Deepest nesting (objects and arrays) accepted in function-call arguments, ACP messages, MCP
replies and tool outputs. Gemini's own function declarations allow far less; deeper data is a
typed error naming where it came from (never a RecursionError)."""

MAX_EVENT_BYTES = 8 * 1024 * 1024
"""Largest single server-sent event of the Gemini API streams (one `data:` payload), ACP JSON-RPC
line and MCP message. A larger one is refused while it arrives: at most this much is ever held."""

MAX_JSON_CONTAINERS = 100_000
"""Most objects and arrays in one such event (`{`/`[` counted on the raw bytes before parsing): a
million tiny parts in one chunk would cost seconds and gigabytes in the SDK's models."""

MAX_PARTS_PER_TURN = 10_000
"""Most content parts one model turn may carry, over all its chunks."""

MAX_TURN_TEXT_CHARS = 4 * 1024 * 1024
"""Most characters of model text (answer plus thoughts) one model turn may produce."""

MAX_CONVERSATION_BYTES = 32 * 1024 * 1024
"""Largest conversation (`ExecuteParams.history`, a `--history` file, a prompt read from stdin, a history failover
carries) as JSON: a run refuses a larger one before it writes anything (`conversation_too_large` says so). It is what
the providers take in one request, and every request of a continued run sends the whole conversation: the Anthropic
API refuses a request over 32 MB (413 `request_too_large`, Claude Code's "Request too large (max 32MB)"), the Gemini
API took 20 MB of inline data (100 MB since January 2026), and a model's window of a million tokens holds some 4 MB
of text. It was 256 MiB: a 100 MB history was taken, written to a session file, and sent to fail at the provider."""

MAX_CONVERSATION_VALUES = 4_000_000
"""Most JSON values `Conversation.from_json` parses, counted as the `{`, `[` and `,` outside strings:
parsed, a value costs about 100 bytes and `Conversation.problem`'s walk as many again, so 16 MB of
`1.5,` held 535 MB and 256 MiB of `[],` would have held some 18 GiB before any check ran (worst case
now about 0.5-1 GiB). A conversation's values are mostly texts: a long session has a few hundred
thousand."""

MAX_SESSION_HEADER_BYTES = 16 * 1024 * 1024
"""Most bytes of a session record a listing (`unified sessions list`) or a short id's resolve reads for
its header: the record's first line, and the whole record when it is not in the one-line layout unified
writes. Every file of a backend is read so, one after another: a damaged or hostile one whose first line
was 300 MB (or that had no newline) was read whole twice, 1.5 GB held, to list it. A longer one is
listed as unreadable, named, and left as it is. A header unified writes is a few KB (its first prompt is
clipped to `MAX_SESSION_PROMPT_CHARS`); one an older unified wrote held the whole first prompt, which no
model takes at 16 MB."""

MAX_SESSION_PROMPT_CHARS = 4096
"""Most characters of the first prompt a session record's header keeps (what a listing shows of it:
80): the header is read by every listing, so a pasted 10 MB prompt made every listing read and hold
10 MB. The whole prompt is in the record's state."""

MAX_SESSION_RECORD_BYTES = 512 * 1024 * 1024
"""Largest session record (`FileSessionStore`) a resume, a `show` or a save over it reads. Nothing bounded it: a
resume read a record of any size whole, then parsed it. A larger one is refused unread as unreadable
(`CorruptSession` naming it), and left as it is. Far above `MAX_CONVERSATION_BYTES`: an agent CLI's own files (a
Claude Code transcript, a Codex rollout) keep every event and tool output of a long session, compacted or not,
and still resume on their own backend."""

MAX_SESSION_VALUES = 2 * MAX_CONVERSATION_VALUES
"""Most JSON values a stored session record may hold (counted as `Conversation.from_json` counts them, before
anything is parsed, by every store): parsed, a value costs 60-100 bytes, so 30 MB of `[],` in a record's state
held 870 MB on a resume, and a record at `MAX_SESSION_RECORD_BYTES` would have held some 15 GiB. A record holds
about as many values as its conversation (twice the conversation's bound: the API's own form of it nests a
level more)."""

# --- what a tool gives the model --------------------------------------------------------------

MAX_SHELL_COMMAND_BYTES = 120 * 1024
"""Longest shell command (UTF-8) a call may carry. bash takes the command as one argument of exec, which Linux
refuses over 128 KiB (MAX_ARG_STRLEN): a longer one could never run. It is refused before the policy parses it
(a 1 MB command held the event loop about 8 s there); the margin is the runtime's own lines around it."""

MAX_PATCH_FILES = 1_000
"""Most files of one Codex patch approval unified judges (each path through links, against protected paths and
the caller's rules): a patch naming more is declined unjudged, with a warning. Judging is linear but not cheap:
a request naming 20,000 files took 29 s (9 s of CPU) in auto_edit, and the asked prompt listed every path."""

MAX_CALLS_PER_TURN = 128
"""Most function calls of one model turn the agent loop runs (the rest are answered "not run"): a turn may
carry 10,000 parts, and as many reads at once (each up to `MAX_TOOL_OUTPUT_CHARS`) held 2.5 GiB and sent it
all in the next request; 128 reads are 32 Mi characters at most."""

MAX_TOOL_OUTPUT_CHARS = 256 * 1024
"""Largest output (or error) of any tool as the model reads it: secrets are replaced first, then a
longer text keeps its head and says how much was cut. Structured outputs count as their JSON."""

SHELL_MAX_MEMORY_BYTES = 8 * 1024 * 1024 * 1024
"""Memory each process of a shell command may allocate (RLIMIT_DATA: its heap and private writable
mappings, not address space merely reserved, so a JVM's or V8's reservations still fit). Set as the
hard limit in the command's shell before the command runs: the command cannot raise it (root, or a
process with CAP_SYS_RESOURCE, can). An allocation past it fails (ENOMEM, MemoryError) instead of
pushing the host into swap or the OOM killer."""

SHELL_MAX_PROCESSES = 4096
"""Processes (threads count) the user may have when a shell command forks (RLIMIT_NPROC, set as the
hard limit like `SHELL_MAX_MEMORY_BYTES`): a fork bomb's forks fail past it. The kernel counts every
process of the user, not only the command's, and does not apply it to root."""

SHELL_MAX_FILE_BYTES = 16 * 1024 * 1024 * 1024
"""Largest file each process of a shell command may write (RLIMIT_FSIZE, set as the hard limit like
`SHELL_MAX_MEMORY_BYTES`): without it `yes > f` fills the disk at a gigabyte a second for all of
`SHELL_MAX_RUN_S`, and the host's other work fails with it. A write past it fails (the process gets
SIGXFSZ, "File size limit exceeded"; one that ignores the signal gets EFBIG, "File too large").
Generous: a build's largest artifacts, a database dump, a disk image fit. Only the size a write reaches
is bounded, not the number of files; pipes and the output the runtime reads are not files."""

SHELL_MAX_RUN_S = 3600.0
"""Longest a foreground shell command may run, output or not: the inactivity timeout restarts with
every byte, so `yes` would otherwise hold its call (and the turn) forever. Past it the command's
processes are killed and the call says so."""

ECHO_MAX_CHARS = 200
"""Characters of a tool's argument (a glob or search pattern, a path) that its answer repeats: a pattern of
40 KB came back whole in each line that named it."""

LIST_DIR_MAX_ENTRIES = 2_000
"""Entries list_dir shows; it counts the rest without holding them."""

BACKGROUND_LOG_MAX_BYTES = 8 * 1024 * 1024
"""Disk a background command's output may use: the newest output is kept, in two halves."""

MCP_MAX_MESSAGE_BYTES = MAX_EVENT_BYTES
"""Largest message an MCP server may send (one stdio line, one HTTP body or SSE event)."""

MAX_DECLARED_TOOLS = 500
"""Most tools one run of an API backend declares to the model, its own and its MCP servers' together: the Gemini
API takes at most 512 function declarations in a request (FIELD-NOTES seeds 004, "Limits"; its guide advises 10-20
active), and unified may add one more of its own after the MCP tools (the `delegate` tool of subagents), so 500
leaves room. An MCP server's tools past it are left out, in its order, with a warning naming them: a server listing
10,000 tools had them all declared (2.5 MB in every request), which the API refuses at the first turn."""

MAX_MCP_DECLARATION_BYTES = 512 * 1024
"""Most bytes (JSON) of MCP tool declarations (name, description, input schema) one run sends the model: they go in
every request, and 512 KiB is some 130,000 tokens of each turn's input, more than a model's whole context on the
smaller ones. The tool that would pass it, and every later one, is left out with a warning, as for
`MAX_DECLARED_TOOLS`."""

# --- search and walks -------------------------------------------------------------------------

SEARCH_TIME_BUDGET_S = 30.0
"""Wall-clock time a search or glob may take before it stops and says so."""

SEARCH_MAX_BYTES = 1024 * 1024 * 1024
"""Bytes of file content one search may read before it stops and says so."""

WALK_MAX_ENTRIES = 1_000_000
"""Directory entries one walk (search, glob) may visit before it stops and says so."""

POLICY_WALK_MAX_ENTRIES = 20_000
"""Entries of the folders one call walks elsewhere (Claude Code's Grep, `rg x` in a shell) that are judged against
the caller's path rules before it runs (`tools._reach.tree_verdict`); a call that reaches more is asked."""

POLICY_PARTS_TEXT_MAX = 16 * 1024 * 1024
"""Characters an `argsPattern` may be searched in for the simple commands of one shell call (`_policy._allow_each`:
each part's text is the whole arguments with `command` put as that part): past it the rule is not read part by part
(an allow does not apply, a deny or ask is a doubt, asked). 20,000 parts (`a;a;...`, 40 KB) beside a 100 KB argument
were 2 GB of text, 5 s of CPU with the loop held; 60,000 beside 1 MB, minutes. At RE2's speed this is ~40 ms."""

WALK_OPEN_DIRS = 64
"""Directory descriptors a walk keeps open at once; deeper levels are reopened from the root."""


_CONTAINERS = (dict, list, tuple)


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `value` nests deeper than `limit` levels of dicts, lists and tuples.

    It runs on every message an agent binary sends and on every event's JSON fields, so it is the
    cheapest walk that answers: recursive, at most `limit + 1` frames deep (never a RecursionError
    at the default limit), scalars never visited, and it stops at the first level too many.
    """
    if isinstance(value, dict):
        children: Iterable[Any] = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    else:
        return False
    if limit <= 0:
        return True
    for child in children:  # noqa: SIM110  # a loop, not any(<generator>): twice as fast on this path
        if isinstance(child, _CONTAINERS) and too_deep(child, limit - 1):
            return True
    return False


def conversation_too_large(size: int, bound: int | None = None) -> str:
    """Why a conversation of `size` bytes of JSON is refused (`MAX_CONVERSATION_BYTES`, or `bound`), in one wording
    for the CLI and the library: the size and the limit, in bytes and MiB, and what to do."""
    bound = MAX_CONVERSATION_BYTES if bound is None else bound
    return (
        f"{size:,} bytes of JSON ({size / 2**20:.1f} MiB), more than a run takes ({bound:,}, {bound / 2**20:g} MiB: "
        "about the largest request the providers accept, and each request of the run sends the whole conversation); "
        "leave out its oldest turns or its largest images and tool outputs"
    )


def command_too_long(command: str) -> int | None:
    """The size in bytes of `command` when it is longer than bash can be given (`MAX_SHELL_COMMAND_BYTES`), else None:
    such a command is refused before anything parses it (the policy's parse of 240 KB held the event loop 4.3 s).
    Measured without encoding a command too short to be over whatever its characters are."""
    if len(command) <= MAX_SHELL_COMMAND_BYTES // 4:
        return None
    size = len(command.encode("utf-8", "surrogatepass"))
    return size if size > MAX_SHELL_COMMAND_BYTES else None
