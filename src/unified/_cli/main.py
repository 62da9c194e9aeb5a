"""The `unified` command: `run`, `demo`, `serve`, `replay`, `record`, `capabilities`, `schema`, `doctor`, `sessions`.

Only this package imports typer and rich, so `import unified` stays light. Everything printed
passes through `redact()`: no secret from the environment reaches the terminal or a log, whatever
a backend or a model says. Every `--json` output is JSON Lines (one document per line, `_json_line`);
every failure is one `error:` line (`_fail`) and an exit code from the table in docs/cli.md.

A new command is a function here decorated with `@app.command()` (or `@sessions_app.command()`),
its body in a module of its own when it is more than option handling (`demo.py`, `serve.py`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import anyio
import typer
import typer.core
from anyio import CancelScope

from unified._cli.demo_backends import DEMO_BACKENDS, not_one_of
from unified._cli.serve import FAKE_SERVERS, FakeServer, ServedFake
from unified._redaction import clip, redact, redact_key_shapes
from unified._text import one_line
from unified.errors import ConfigurationError, SessionNotFound, UnifiedError

if TYPE_CHECKING:
    from anyio.abc import TaskStatus
    from pydantic import ValidationError
    from rich.console import Console
    from rich.table import Table

    from unified._cli.render import Renderer
    from unified._execute import EventStream
    from unified.conversations import Conversation
    from unified.events import ResultStatus, UnifiedEvent
    from unified.sessions import SessionInfo, SessionListing
    from unified.types import ApprovalMode, ExecuteParams

__all__ = [
    "APPROVAL_CHOICES",
    "DEMO_BACKENDS",
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_CODES",
    "EXIT_INTERNAL",
    "EXIT_OUTPUT_FAILED",
    "LEVEL_STYLES",
    "CwdOption",
    "SessionBackendOption",
    "app",
    "capabilities",
    "demo",
    "doctor",
    "install_claude_code_command",
    "install_gemini_command",
    "main",
    "record",
    "replay",
    "run",
    "schema",
    "sessions_app",
    "sessions_delete",
    "sessions_list",
    "sessions_show",
]


def _flags_without_values(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # typer's rich help would show `<bool>` after a flag that takes no value
    return params


class _Command(typer.core.TyperCommand):
    """Help as people read it: `unified run [OPTIONS] PROMPT`, and flags without a `<bool>` value."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = (param.metavar or param.name or "").upper()
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_without_values(super().get_params(ctx))


class _Group(typer.core.TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_without_values(super().get_params(ctx))


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,  # `main` reports every exception in one line (UNIFIED_DEBUG=1: the traceback)
    rich_markup_mode=None,  # click's plain help: rich's help renderer costs ~70 ms of every `--help`
    help="Drive agent backends (Gemini CLI, generateContent, Interactions, Claude Code, Codex) through one stream.",
)
sessions_app = typer.Typer(
    cls=_Group, no_args_is_help=True, rich_markup_mode=None, help="List, show and delete stored sessions."
)
app.add_typer(sessions_app, name="sessions")

EXIT_CODES: dict[ResultStatus, int] = {"success": 0, "error": 1, "max_turns": 1, "cancelled": 130, "interrupted": 130}
"""A run's exit code from its result (docs/cli.md lists every exit code)."""
EXIT_BAD_INPUT = 2
"""A bad argument, option, file or setting: nothing ran."""
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a process ended by SIGPIPE: the reader of stdout left (`| head`)."""
EXIT_OUTPUT_FAILED = 74
"""stdout cannot be written (a full disk, a closed or failing file): EX_IOERR."""
EXIT_TERMINATED = 128 + signal.SIGTERM
"""What a shell reports for a process ended by SIGTERM: `unified run` exits with it when SIGTERM interrupted the run."""
EXIT_INTERNAL = 70
"""An exception `unified` did not expect: a bug (EX_SOFTWARE)."""
APPROVAL_CHOICES: tuple[str, ...] = ("default", "auto_edit", "yolo", "plan")
"""`unified.types.ApprovalMode`'s values, written out so that `--help` loads no pydantic (a test keeps them equal)."""
LEVEL_STYLES = {"full": "green", "partial": "yellow", "emulated": "cyan", "none": "dim red"}


class _ReaderLeft(Exception):
    """stdout's reader left (`| head`): the command stops and exits 141, saying nothing more.

    Not an OSError on purpose: typer turns a BrokenPipeError into exit code 1.
    """


class _OutputFailed(Exception):
    """stdout cannot be written (`> /dev/full`, a full disk, a file that fails): the command stops and exits 74
    with one line saying so. It was an OSError from deep inside (an ExceptionGroup during a run), reported as
    "unexpected ... a bug in unified", exit 70."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error


class _Stdout:
    """sys.stdout for rich, as it is (rich asks it `isatty`, `fileno`, `encoding`), but a write or flush that fails
    raises `_OutputFailed` (a BrokenPipeError stays one: rich's `on_broken_pipe` handles it)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)

    def write(self, text: str) -> int:
        try:
            return sys.stdout.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(exc) from None

    def flush(self) -> None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(exc) from None


@functools.cache
def _console_class() -> type[Console]:
    """rich is imported by the commands that print, not by `--help` (~40 ms)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """Rich would exit 1 here."""
            self.quiet = True
            raise _ReaderLeft

    return _Console


def _console(*, stderr: bool = False) -> Console:
    if stderr:
        return _console_class()(stderr=True, highlight=False, soft_wrap=True)
    return _console_class()(file=_Stdout(), highlight=False, soft_wrap=True)  # type: ignore[arg-type]


def _say(text: str, *, style: str = "", stderr: bool = False) -> None:
    """Print `text` redacted, each control character a terminal would act on written out (`visible`): a message
    quotes what a session holds (its first prompt, its cwd), which another worker or a hand may have written."""
    from rich.text import Text

    from unified._cli.render import visible

    _console(stderr=stderr).print(Text(visible(redact(text)), style=style))


_JSON_ERRORS: ContextVar[bool] = ContextVar("unified_cli_json_errors", default=False)
"""Set by `main` for `unified run ... --json` and the other event commands (`_wants_json_errors`): each failure is an
`error` event on stdout too."""


_EVENT_COMMANDS = frozenset({"run", "demo", "replay", "record"})
"""The commands whose `--json` prints the run's events, an `error` event among them when the run fails."""


def _wants_json_errors(args: list[str]) -> bool:
    """`run ... --json` (or `demo`, `replay`, `record`), read from the words themselves (those before a `--`): a
    usage error (an unknown flag, a value a callback refuses, a missing one) comes before typer has read `--json`
    into the command's parameters."""
    words = args[: args.index("--")] if "--" in args else args
    return bool(words) and words[0] in _EVENT_COMMANDS and "--json" in words


def _error_line(message: str, code: str = "configuration_error") -> None:
    """`error: <message>` on one line of stderr; under `run --json` also the `error` event a failing run gives
    (`code`, the message with its hint in parentheses, fatal), one line on stdout: a caller parsing only the JSON
    sees why nothing ran, not an empty stdout. A stdout that is gone is left at that: the exit code says the error."""
    line = one_line(message)
    _say(f"error: {line}", style="bold red", stderr=True)
    if not _JSON_ERRORS.get():
        return
    from unified.events import ErrorEvent, dump_event

    try:
        _write_line(dump_event(ErrorEvent(seq=0, code=code, message=line, fatal=True)))
    except (_ReaderLeft, _OutputFailed):
        _reader_left()  # what is left goes to /dev/null: exiting prints nothing more


def _fail(message: str, code: int = 1) -> typer.Exit:
    """Say `error: <message>` on one line of stderr (`_error_line`); raise what this returns to exit with `code`."""
    _error_line(message)
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from unified import __version__
        from unified.events import PROTOCOL_VERSION

        _say(f"unified {__version__} (event protocol {PROTOCOL_VERSION})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Drive agent backends (Gemini CLI, generateContent, Interactions, Claude Code, Codex) through one stream."""


def _named_path(refusal: str) -> Callable[[str], Path]:
    """A typer parser of a path option that refuses an empty one (`--cwd "$DIR"` with DIR unset) with `refusal`,
    where a Path of it would be `.`: the shell's own directory, unasked (`unified.types._named_directory`)."""

    def parse(value: str) -> Path:
        if not value:
            raise typer.BadParameter(refusal)
        return Path(value)

    return parse


_directory = _named_path("the directory's name is empty: name a directory, or leave --cwd out for this one")
_file = _named_path(  # `unified replay ""` said ".: not a cassette", `record ""` wrote about "." (bad input round 26)
    "the file's name is empty (it would be the current directory): name the file"
)
_install_folder = _named_path(  # `--prefix ''` installed the binary into the current directory (round 24)
    "the folder's name is empty (it would install into the current directory): name a folder, or leave --prefix out "
    "to install where unified looks"
)


def _choice(values: tuple[str, ...] | Callable[[], tuple[str, ...]]) -> Callable[[str | None], str | None]:
    """A typer callback that accepts one of `values` (a callable: looked up when an option is given, so
    building the command line, for `--help`, loads nothing of the registry or the matrix)."""

    def check(value: str | None) -> str | None:
        choices = values() if callable(values) else values
        if value is not None and value not in choices:
            raise typer.BadParameter(not_one_of(value, choices))
        return value

    return check


def _finite_seconds(value: float | None) -> float | None:
    """A typer callback for a time limit: infinity (`inf`, or `1e400`, which reads as it) is refused, not taken as
    no limit: leaving the option out is that, and a limit nobody can reach is more likely a typo. NaN is said to be
    no number: the option's own range (`min=`, checked before this) said "Input should be greater than or equal to
    0.001" of it, as if a number had been given, so the range is checked here, after it (bad input round 26)."""
    if value is None:
        return value
    if value != value:  # NaN, as `nan` reads
        raise typer.BadParameter("nan is not a number: give a number of seconds, or leave the option out for no limit")
    if value == float("inf"):
        raise typer.BadParameter(f"{value} is no number of seconds (give one, or leave the option out for no limit)")
    if value < _SHORTEST_S:
        raise typer.BadParameter(
            f"{value:g} s is shorter than any run: give at least {_SHORTEST_S:g} s, or leave the option out for "
            "no limit"
        )
    return value


_SHORTEST_S = 0.001
"""The shortest time limit `--timeout` takes."""


def _matrix_backends() -> tuple[str, ...]:
    from unified import capabilities

    return capabilities.BACKENDS


def _session_backends() -> tuple[str, ...]:
    from unified import sessions

    return sessions.session_backends()


def _known_backend(value: str) -> str:
    """`auto` or a backend the registry knows (built in, registered, or an installed entry point)."""
    from unified.backends import known_backends

    choices = ("auto", *known_backends())
    if value not in choices:
        raise typer.BadParameter(not_one_of(value, choices))
    return value


def _known_fallbacks(value: str | None) -> str | None:
    """`B[,C...]`: backends the registry knows (not `auto`: a fallback is a backend to go on on)."""
    if value is None:
        return None
    from unified.backends import known_backends

    names = [name.strip() for name in value.split(",")]
    known = known_backends()
    for name in names:
        if name not in known:
            raise typer.BadParameter(not_one_of(name, tuple(known)))
    return ",".join(names)


def _read_history(path: Path) -> Conversation:
    """A conversation file (as `unified sessions export REF` prints it; `-` reads stdin), or exit 2 with one line."""
    from pydantic import ValidationError

    from unified import _limits as limits
    from unified._files import FileTooLarge, read_regular
    from unified.conversations import Conversation

    bound = limits.MAX_CONVERSATION_BYTES
    try:  # a regular file only (a FIFO is never waited on, /dev/zero never read), and bounded
        data = sys.stdin.buffer.read(bound + 1) if str(path) == "-" else read_regular(path, max_bytes=bound)
    except FileTooLarge as exc:  # its size, as the file says it (`open_regular` refuses it unread)
        raise _fail(f"--history {path} is {limits.conversation_too_large(exc.size)}", EXIT_BAD_INPUT) from None
    except OSError as exc:
        raise _fail(f"cannot read --history {path}: {exc.strerror or exc}", EXIT_BAD_INPUT) from None
    if len(data) > bound:  # stdin: read no further than one byte over
        raise _fail(
            f"--history {path} is more than {bound:,} bytes ({bound / 2**20:g} MiB), more than a run takes: "
            "leave out its oldest turns or its largest images and tool outputs",
            EXIT_BAD_INPUT,
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16, as Windows PowerShell's `>` saves an export
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeError:
            raise _fail(f"--history {path} is not UTF-8, nor whole UTF-16: save it as UTF-8", EXIT_BAD_INPUT) from None
    try:
        conversation = Conversation.from_json(data)
    except ValidationError as exc:
        raise _fail(
            f"--history {path} is not a conversation (unified sessions export REF prints one): {_validation_line(exc)}",
            EXIT_BAD_INPUT,
        ) from None
    if not conversation.turns:  # `{}` (every field has a default) ran as a fresh session: a wrong file, unsaid
        raise _fail(
            f"--history {path} holds no turns: a conversation must hold `turns`, a list of user and model turns "
            "(unified sessions export REF prints one); leave --history out to start afresh",
            EXIT_BAD_INPUT,
        )
    return conversation


def _read_prompt() -> str:
    """The prompt `-` names: stdin read to its end as UTF-8 (a long task piped in, `unified run - < task.md`), bounded
    as a conversation is, or exit 2 with one line."""
    from unified import _limits as limits

    bound = limits.MAX_CONVERSATION_BYTES
    if sys.stdin is None or sys.stdin.isatty():  # a terminal: the user meant a prompt, not to type one until Ctrl-D
        raise _fail("PROMPT is - but stdin is a terminal: pipe the prompt in (unified run - < task.md)", EXIT_BAD_INPUT)
    try:
        data = sys.stdin.buffer.read(bound + 1)
    except OSError as exc:
        raise _fail(f"cannot read the prompt from stdin: {exc.strerror or exc}", EXIT_BAD_INPUT) from None
    if len(data) > bound:
        raise _fail(
            f"the prompt on stdin is more than {bound:,} bytes ({bound / 2**20:g} MiB), more than a run sends: put "
            "long material in a file of the workspace and name it in the prompt",
            EXIT_BAD_INPUT,
        )
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise _fail(
            f"the prompt on stdin is not UTF-8 (byte {exc.start}: {exc.reason}): save it as UTF-8", EXIT_BAD_INPUT
        ) from None
    if not text.strip():
        raise _fail("the prompt on stdin is empty: say what the agent should do", EXIT_BAD_INPUT)
    return text


def _json_line(data: Any) -> None:
    """One JSON document as one line of stdout (JSON Lines: `unified ... --json | jq` parses each)."""
    _write_line(json.dumps(data, default=str, ensure_ascii=False, separators=(",", ":")))


def _print_json(data: Any) -> None:
    """A JSON document for a person or a file, indented (`unified schema`); `--json` outputs use `_json_line`."""
    try:
        sys.stdout.write(redact(json.dumps(data, indent=2, default=str)) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise _ReaderLeft from None
    except OSError as exc:
        raise _OutputFailed(exc) from None


def _validation_line(exc: ValidationError) -> str:
    """A pydantic error as one line: `field: problem; field: problem`."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return redact_key_shapes(
        "; ".join(dict.fromkeys(parts))
    )  # once each: two unknown fields read as one (`...`)  # a message or a field name may quote the input (a key)


def _output_failed(exc: _OutputFailed, *, running: bool = False) -> int:
    """stdout failed: say so on stderr, send what is left to /dev/null (so exiting prints nothing), exit 74."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    stopped = "; the run was cancelled" if running else ""
    _say(
        f"error: cannot write the output to stdout: {exc}{stopped} (free space where it goes, or send it elsewhere)",
        style="bold red",
        stderr=True,
    )
    return EXIT_OUTPUT_FAILED


def _reader_left() -> int:
    """stdout's reader is gone (`| head`): send what is left to /dev/null so exiting prints nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _write_line(line: str, *, redacted: bool = True) -> None:
    """One line of JSON Lines output, flushed at once so a pipe sees each event as it happens."""
    try:
        sys.stdout.write((redact(line) if redacted else line) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise _ReaderLeft from None
    except OSError as exc:
        raise _OutputFailed(exc) from None


# --------------------------------------------------------------------------------------------- run


def _run_directory(given: Path | None) -> Path:
    """`--cwd` (or the current directory) as an absolute path, a `~` in it read as a shell reads it: `--cwd '~/proj'`
    (quoted, or `--cwd=~/proj`, which no shell expands) was resolved as `./~/proj`. A current directory that no longer
    exists is a `ConfigurationError` (`current_directory`), not a FileNotFoundError out of `resolve()`."""
    from unified._files import current_directory

    path = given or Path()
    if path.parts[:1] and path.parts[0].startswith("~"):
        return path  # `ExecuteParams` expands it, or says whose home is not known here
    return (path if path.is_absolute() else current_directory() / path).resolve()


def _checked_params(
    prompt: str, backend: str, approval_mode: str, cwd: Path | None, approve: bool | None, **fields: Any
) -> ExecuteParams:
    """The run's parameters from the command line, checked as `execute()` would, or exit 2 with one line.

    Loads the run machinery (`unified._execute`), which `unified --help` and the other commands never need.
    """
    from pydantic import ValidationError

    from unified._cli.interactive import make_user_input_handler
    from unified._execute import check_params
    from unified.types import ExecuteParams

    try:
        params = ExecuteParams(
            prompt=prompt,
            backend=backend,
            approval_mode=cast("ApprovalMode", approval_mode),
            cwd=_run_directory(cwd),
            on_user_input=make_user_input_handler(
                approve, interactive=sys.stdin.isatty(), console=_console(stderr=True)
            ),
            **fields,
        )
        check_params(params)
    except ValidationError as exc:
        raise _fail(_validation_line(exc), EXIT_BAD_INPUT) from None
    except ConfigurationError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    return params


@app.command()
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="What the agent should do (- reads it from stdin; none with --retry).")
    ] = None,
    backend: Annotated[
        str,
        typer.Option(
            callback=_known_backend, help="auto, or a backend: gemini-cli, generate-content, interactions, ..."
        ),
    ] = "auto",
    model: Annotated[str | None, typer.Option(help="Model name (default: the backend's).")] = None,
    resume: Annotated[str | None, typer.Option(help="Continue a session: short id, unique prefix or full id.")] = None,
    history: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            parser=_file,
            help="Continue a conversation (JSON, as `unified sessions export REF` prints it; - reads stdin) "
            "as a new session of the backend.",
        ),
    ] = None,
    retry: Annotated[
        bool,
        typer.Option(
            "--retry", help="Answer the last user turn of --resume (or --history) again, without a new prompt."
        ),
    ] = False,
    fallback: Annotated[
        str | None,
        typer.Option(
            metavar="B[,C]",
            callback=_known_fallbacks,
            help="Backends to fail over to, in order, when the backend gives out (rate limit, auth, unavailable).",
        ),
    ] = None,
    approval_mode: Annotated[
        str, typer.Option(callback=_choice(APPROVAL_CHOICES), help=f"One of: {', '.join(APPROVAL_CHOICES)}.")
    ] = "default",
    cwd: Annotated[
        Path | None, typer.Option(parser=_directory, help="The agent's working directory (default: here).")
    ] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Stop after this many model turns.")] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            callback=_finite_seconds, help="Total time limit in seconds (finite, 0.001 or more; leave out for none)."
        ),
    ] = None,
    approve: Annotated[
        bool | None,
        typer.Option(
            "--approve/--deny",
            help="Answer every permission request: allow once, or deny. Without either, a terminal asks.",
        ),
    ] = None,
) -> None:
    """Run PROMPT and show its events as they happen. Ctrl-C (or SIGTERM) cancels the run cleanly (exit 130, 143)."""
    if prompt is None and not retry:
        raise _fail("Missing argument 'PROMPT' (say what the agent should do, or pass --retry)", EXIT_BAD_INPUT)
    if prompt == "-":
        if history is not None and str(history) == "-":
            raise _fail("PROMPT and --history cannot both be read from stdin: give one as a file", EXIT_BAD_INPUT)
        prompt = _read_prompt()
    params = _checked_params(
        prompt or "",
        backend,
        approval_mode,
        cwd,
        approve,
        model=model,
        resume=resume,
        history=_read_history(history) if history is not None else None,
        retry=retry,
        fallback=tuple(fallback.split(",")) if fallback else (),
        max_turns=max_turns,
        total_timeout_s=timeout,
    )
    if params.backend == "auto" and not json_lines:
        with contextlib.suppress(UnifiedError):  # the run itself reports why nothing qualifies
            _say(f"auto → {_routing_reason(params)}", style="dim", stderr=True)
    try:
        code = anyio.run(_run, params, json_lines)
    except KeyboardInterrupt:  # where no signal receiver could be installed
        code = EXIT_CODES["interrupted"]
    raise typer.Exit(code)


def _routing_reason(params: ExecuteParams) -> str:
    """What `auto` runs: on a resume the session's own backend (the one that runs it), else routing's choice."""
    from unified import sessions
    from unified._routing import select_backend_for

    if not params.resume:
        return select_backend_for(params).reason
    ref = params.resume
    info = anyio.run(lambda: sessions.resolve(ref, store=params.session_store))
    reason = select_backend_for(params, only=info.backend).reason
    return f"{reason} (session {info.short_id} is {info.backend}'s)"


def _show(event: UnifiedEvent, json_lines: bool, renderer: Renderer, console: Console) -> None:
    """One event on stdout: a JSON line, or the renderer's text (`_ReaderLeft` once stdout's reader is gone)."""
    from unified.events import dump_event

    if json_lines:
        _write_line(dump_event(event))
        return
    shown = renderer.render(event)
    if shown is not None:
        console.print(shown, end="")


async def _run(params: ExecuteParams, json_lines: bool) -> int:
    from unified._cli.render import Renderer
    from unified.events import ErrorEvent, Result

    renderer = Renderer()
    console = _console()
    status: ResultStatus = "interrupted"  # unless a result arrives
    no_node = False
    signals: list[signal.Signals] = []  # the ones that came
    from unified._execute import execute  # loaded by `_checked_params`, before the event loop started

    async with execute(params) as stream, anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_interrupt, stream, tg.cancel_scope, signals)
        async for event in stream:
            try:
                _show(event, json_lines, renderer, console)
            except _ReaderLeft:  # stop the run, say nothing more
                stream.cancel()
                tg.cancel_scope.cancel()
                return _reader_left()
            except _OutputFailed as exc:  # nowhere to show the run: stop it, say why
                stream.cancel()
                tg.cancel_scope.cancel()
                return _output_failed(exc, running=True)
            if isinstance(event, ErrorEvent) and event.code == "backend_unavailable":
                no_node = no_node or event.details.get("missing") == "node"  # nothing ran: bad input (docs/cli.md)
            if isinstance(event, Result):
                status = event.status
        tg.cancel_scope.cancel()
    if status == "interrupted" and signal.SIGTERM in signals:
        return EXIT_TERMINATED
    return EXIT_BAD_INPUT if no_node and status == "error" else EXIT_CODES[status]


_T = TypeVar("_T")
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""What interrupts `run` and `demo`: Ctrl-C, or SIGTERM (a supervisor's stop, `kill`). Without SIGTERM among
them its default action ended the command at once: no `result`, an agent binary (claude) and the tool command
it ran went on with no parent, and the demo's temporary directory stayed."""


def _say_interrupting(number: int) -> None:
    again = "Ctrl-C" if number == signal.SIGINT else "SIGTERM"
    _say(f"interrupting… ({again} again to stop waiting)", style="yellow", stderr=True)


async def _cancel_on_interrupt(stream: EventStream, scope: CancelScope, came: list[signal.Signals]) -> None:
    """The first stop signal cancels the run, whose `result` still arrives, and its processes end as on any
    cancel; a second one stops waiting for it. Each signal is added to `came`."""
    try:
        with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
            async for number in signals:
                came.append(number)
                if len(came) > 1:
                    scope.cancel()
                    return
                _say_interrupting(number)
                stream.cancel(interrupted=True)
    except NotImplementedError:  # no signal receivers on Windows: KeyboardInterrupt ends the run
        return


async def _stoppable(work: Callable[[], Awaitable[_T]]) -> tuple[_T | None, signal.Signals | None]:
    """`work`'s value, or the stop signal (Ctrl-C, SIGTERM) that cancelled it: as any cancel, the processes it
    started end and what it wrote for itself goes (`record` leaves no half cassette). For the commands whose run
    has no `result` to wait for after a stop (`record`, `replay`): before, SIGTERM's default action ended them
    at once, leaving the agent binary and its command running with no parent and the recording's scratch file."""
    came: list[signal.Signals] = []
    done: list[_T] = []

    async def watch(scope: CancelScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
                task_status.started()  # listened for before the work starts: no signal meets the default action
                async for number in signals:
                    came.append(number)
                    scope.cancel()
                    return
        except NotImplementedError:  # no signal receivers on Windows: KeyboardInterrupt ends the command
            task_status.started()

    failed: list[Exception] = []
    async with anyio.create_task_group() as tg:
        await tg.start(watch, tg.cancel_scope)
        try:
            done.append(await work())
        except Exception as exc:  # raised as it is below, not wrapped in the task group's ExceptionGroup
            failed.append(exc)
        tg.cancel_scope.cancel()
    if failed:
        raise failed[0]
    return (done[0] if done else None), (came[0] if came else None)


def _stopped_code(number: signal.Signals) -> int:
    return EXIT_TERMINATED if number == signal.SIGTERM else EXIT_CODES["interrupted"]


# ----------------------------------------------------------------------------- demo, replay


@app.command()
def demo(
    backend: Annotated[
        str,
        typer.Option(callback=_choice(("all", *DEMO_BACKENDS)), help=f"all, or one of: {', '.join(DEMO_BACKENDS)}."),
    ] = "all",
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
) -> None:
    """Run a built-in task on every backend that can run here, offline: real adapters, a scripted model.

    A backend that cannot run here (the gemini CLI without Node.js) is skipped, saying how to get it.
    Nothing is written outside a temporary directory. Ctrl-C interrupts it as it does `unified run`.
    """
    from rich.text import Text

    from unified._cli.demo import SCRIPTED, DemoControl, differences, skipped, summary_table
    from unified._cli.render import Renderer
    from unified.events import dump_event

    chosen = DEMO_BACKENDS if backend == "all" else (backend,)
    control = DemoControl()
    skips = skipped(chosen, os.environ, control)
    runnable = tuple(name for name in chosen if name not in {skip.backend for skip in skips})
    if not runnable:
        raise _fail(skips[0].line())
    for skip in skips:
        _say(skip.line(), style="yellow", stderr=True)
    renderer: dict[str, Renderer] = {}
    console = _console()
    (_console(stderr=True) if json_lines else console).print(Text(SCRIPTED, style="dim"), soft_wrap=False)

    def show(name: str, event: UnifiedEvent) -> None:
        if json_lines:
            _write_line(dump_event(event))
            return
        if name not in renderer:
            renderer[name] = Renderer()
            console.print(Text(f"\n━━ {name} ━━", style="bold"))
        shown = renderer[name].render(event)
        if shown is not None:
            console.print(shown, end="")

    with tempfile.TemporaryDirectory(prefix="unified-demo-") as root:
        try:
            anyio.run(_demo, runnable, show, control, Path(root))
        except KeyboardInterrupt:  # where no signal receiver could be installed
            control.interrupted = True
    runs = control.runs
    if not json_lines and runs:
        console.print()
        console.print(summary_table(runs))
        for note in differences(runs):
            console.print(Text(note, style="dim"), soft_wrap=False)  # wrapped at the terminal's width
    not_run = [name for name in runnable if name not in {one.backend for one in runs}]
    if control.interrupted:
        if not_run:
            _say(f"interrupted: {', '.join(not_run)} did not run", style="yellow", stderr=True)
        raise typer.Exit(EXIT_TERMINATED if control.terminated else EXIT_CODES["interrupted"])
    failed = [one.backend for one in runs if one.result is None or one.result.status != "success"]
    raise typer.Exit(1 if failed else 0)


async def _demo(backends: tuple[str, ...], show: Callable[[str, UnifiedEvent], None], control: Any, root: Path) -> None:
    from unified._cli.demo import run_demo

    reader_left = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(_interrupt_demo, control, tg.cancel_scope)
        try:
            await run_demo(backends, show, control, root)
        except _ReaderLeft:  # raised here, not out of the task group (which would wrap it in an ExceptionGroup)
            reader_left = True
        tg.cancel_scope.cancel()
    if reader_left:
        raise _ReaderLeft


async def _interrupt_demo(control: Any, scope: CancelScope) -> None:
    """As `unified run`: a first Ctrl-C (or SIGTERM) interrupts the backend running and starts no other; a second
    stops waiting."""
    try:
        with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
            async for number in signals:
                if control.interrupted:
                    scope.cancel()
                    return
                control.interrupted = True
                control.terminated = number == signal.SIGTERM
                _say_interrupting(number)
                if control.stream is not None:
                    control.stream.cancel(interrupted=True)
    except NotImplementedError:  # no signal receivers on Windows: KeyboardInterrupt ends the demo
        return


@app.command()
def serve(
    script: Annotated[
        Path | None,
        typer.Argument(parser=_file, help="What the fake plays: a script or a recording (default: the demo's task)."),
    ] = None,
    fake: Annotated[
        str, typer.Option(callback=_choice(tuple(FAKE_SERVERS)), help=f"Which fake: {', '.join(FAKE_SERVERS)}.")
    ] = "gemini",
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port on 127.0.0.1 (default: any free one).")] = 0,
) -> None:
    """Serve a fake model on 127.0.0.1 and print the exports that point every backend at it; Ctrl-C stops it.

    In another shell, run the printed lines, then `unified run "..." --backend NAME`: no code, no credentials.
    """
    from unified._cli.serve import ServeError, export_lines, start_fake

    entry = FAKE_SERVERS[fake]
    with tempfile.TemporaryDirectory(prefix="unified-serve-") as home:
        try:
            served = start_fake(fake, script.expanduser() if script else None, port, Path(home))
        except ServeError as exc:
            raise _fail(str(exc), EXIT_BAD_INPUT) from None
        try:
            anyio.run(_serve_until_interrupted, entry, served, export_lines(entry, served))
        except KeyboardInterrupt:  # Ctrl-C before the signal receiver was listening (or where there is none)
            pass
        finally:
            served.close()
    _say("stopped", style="dim", stderr=True)


async def _serve_until_interrupted(entry: FakeServer, served: ServedFake, exports: list[str]) -> None:
    """Print the exports once Ctrl-C (or SIGTERM) is listened for, then say each request served until one comes."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals, anyio.CancelScope() as scope:
        _say(f"# {entry.title}, playing {served.plays}; it starts over when it runs out.", stderr=True)
        names = ", ".join(entry.backends)
        _say(f'# Run these in another shell, then `unified run "..." --backend NAME` ({names}):', stderr=True)
        for line in exports:
            _write_line(line, redacted=False)  # our own values, none a secret (a fake key may look like one)
        _say("# Ctrl-C stops the server (and removes what the runs wrote under the folders above).", stderr=True)

        async def stop() -> None:
            async for _ in signals:
                scope.cancel()
                return

        shown = 0
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop)
            while True:
                lines = served.served()
                for line in lines[shown:]:
                    _say(line, style="dim", stderr=True)
                shown = len(lines)
                await anyio.sleep(0.2)  # the fake has no event to wait on; this only paces the log


@app.command()
def replay(
    cassette: Annotated[
        Path,
        typer.Argument(
            parser=_file, help="A recorded cassette: a .yaml file or a gemini-cli, claude-code or codex .jsonl file."
        ),
    ],
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    native: Annotated[bool, typer.Option(help="Keep each raw backend event in `native`.")] = False,
    cwd: Annotated[
        Path | None,
        typer.Option(
            parser=_directory,
            help="Where the replayed tools run, e.g. a copy of the recorded workspace (default: empty).",
        ),
    ] = None,
    approve: Annotated[
        bool | None,
        typer.Option(
            "--approve/--deny",
            help="Answer every permission request so, instead of as the recording did (another answer differs).",
        ),
    ] = None,
) -> None:
    """Play a recorded cassette through the real adapter code, offline, and show the unified events.

    Exit 1 when the replay does not do what the recording did (the line says what differs).
    """
    from unified._cli.interactive import make_user_input_handler
    from unified._cli.render import Renderer
    from unified.events import Result
    from unified.testing._replay import ReplayDiverged, ReplayError, describe, replay_events

    workdir = cwd.expanduser().resolve() if cwd is not None else None
    try:
        describe(cassette)  # a bad file is reported before anything runs
        if workdir is not None and not workdir.is_dir():
            raise ConfigurationError(
                f"--cwd {workdir} {'is not a directory' if workdir.exists() else 'does not exist'}",
                hint="pass the directory the replayed tools should run in",
            )
    except (ReplayError, ConfigurationError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None

    async def play() -> int:
        renderer, console = Renderer(), _console()
        status: ResultStatus = "error"
        with tempfile.TemporaryDirectory(prefix="unified-replay-") as data:
            os.environ["UNIFIED_DATA_DIR"] = data  # a replayed session is not a session of the user's
            answer = make_user_input_handler(approve, interactive=False, console=_console(stderr=True))
            replayed = replay_events(cassette, include_native=native, cwd=workdir, on_user_input=answer)
            async with contextlib.aclosing(replayed) as events:
                async for event in events:
                    try:
                        _show(event, json_lines, renderer, console)
                    except _ReaderLeft:
                        return _reader_left()
                    if isinstance(event, Result):
                        status = event.status
        return EXIT_CODES[status]

    try:
        code, stopped = anyio.run(_stoppable, play)
    except ReplayDiverged as exc:
        raise _fail(str(exc)) from None
    except ReplayError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    if stopped is not None or code is None:
        _say("replay interrupted", style="yellow", stderr=True)
        raise typer.Exit(_stopped_code(stopped or signal.SIGINT))
    raise typer.Exit(code)


@app.command()
def record(
    cassette: Annotated[
        Path,
        typer.Argument(
            parser=_file, help="The file to write: .yaml (API backends) or .jsonl (gemini-cli, claude-code, codex)."
        ),
    ],
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    backend: Annotated[
        str, typer.Option(callback=_choice(DEMO_BACKENDS), help=f"One of: {', '.join(DEMO_BACKENDS)}.")
    ] = "generate-content",
    model: Annotated[str | None, typer.Option(help="Model name (default: the backend's).")] = None,
    approval_mode: Annotated[
        str, typer.Option(callback=_choice(APPROVAL_CHOICES), help=f"One of: {', '.join(APPROVAL_CHOICES)}.")
    ] = "default",
    cwd: Annotated[
        Path | None, typer.Option(parser=_directory, help="The agent's working directory (default: here).")
    ] = None,
    source: Annotated[
        str | None, typer.Option(help="What answered, written into the cassette (default: says it was a live run).")
    ] = None,
    approve: Annotated[
        bool | None,
        typer.Option("--approve/--deny", help="Answer every permission request: allow once, or deny."),
    ] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    keep_failed: Annotated[
        bool, typer.Option("--keep-failed", help="Write the cassette even when the run does not succeed.")
    ] = False,
) -> None:
    """Run PROMPT for real and record it as CASSETTE, for `unified replay` (credentials as for `run`).

    A run that does not succeed writes nothing (exit 1, as `unified run`), unless --keep-failed.
    """
    from unified._cli.render import Renderer
    from unified.events import Result
    from unified.testing._record import RecordError, record_run

    params = _checked_params(prompt, backend, approval_mode, cwd, approve, model=model)
    what = source or f"a live {backend} run recorded with `unified record`"
    renderer, console = Renderer(), _console()

    def show(event: UnifiedEvent) -> None:
        _show(event, json_lines, renderer, console)

    try:
        events, stopped = anyio.run(
            _stoppable,
            functools.partial(record_run, params, cassette, source=what, on_event=show, keep_failed=keep_failed),
        )
    except RecordError as exc:
        if exc.events:  # the run happened and failed: its events were shown
            raise _fail(f"{cassette} not written: {exc}") from None
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    if stopped is not None or events is None:
        _say(f"interrupted: {cassette} not written", style="yellow", stderr=True)
        raise typer.Exit(_stopped_code(stopped or signal.SIGINT))
    result = events[-1] if events and isinstance(events[-1], Result) else None
    _say(f"recorded {cassette}", style="dim", stderr=True)
    raise typer.Exit(EXIT_CODES[result.status] if result else 1)


# ----------------------------------------------------------------------------- capabilities, schema


@app.command()
def capabilities(
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole matrix as one JSON line.")] = False,
    backend: Annotated[
        str | None, typer.Option(callback=_choice(_matrix_backends), help="Show one backend's levels with notes.")
    ] = None,
) -> None:
    """Print the capability matrix: what each backend can do."""
    from rich.table import Table
    from rich.text import Text

    from unified import capabilities as matrix

    if as_json:
        _json_line(matrix.to_json() if backend is None else matrix.to_json()["backends"][backend])
        return
    console = _console()
    if backend is not None:
        column = matrix.column(backend)
        table = Table("capability", "level", "note", title=f"{backend}: {column.title}", expand=False)
        table.columns[0].no_wrap = True
        for name, cell in column.cells.items():
            table.add_row(name, Text(cell.level, style=LEVEL_STYLES[cell.level]), cell.note)
        console.print(table)
        return
    for group in _fitting_groups(console, matrix.BACKENDS, _capability_table):
        console.print(_capability_table(group))


def _capability_table(backends: tuple[str, ...]) -> Table:
    from rich.table import Table
    from rich.text import Text

    from unified import capabilities as matrix

    table = Table(title="Capability matrix (--backend NAME shows the notes)")
    table.add_column("capability", no_wrap=True)
    for name in backends:
        table.add_column(name, no_wrap=True)
    for name in matrix.CAPABILITIES:
        levels = [matrix.level(b, name) for b in backends]
        table.add_row(name, *[Text(level, style=LEVEL_STYLES[level]) for level in levels])
    return table


def _fitting_groups(
    console: Console, names: tuple[str, ...], table_of: Callable[[tuple[str, ...]], Table]
) -> list[tuple[str, ...]]:
    """`names` in consecutive groups whose tables fit the terminal's width: more backends than fit
    side by side make a second table, never a column too narrow for a name."""
    groups: list[tuple[str, ...]] = []
    for name in names:
        wide = console.options.update(max_width=10_000)  # the width the table wants, not what it gets
        if groups and console.measure(table_of((*groups[-1], name)), options=wide).maximum <= console.width:
            groups[-1] = (*groups[-1], name)
        else:
            groups.append((name,))
    return groups


@app.command()
def schema() -> None:
    """Print the JSON Schema of UnifiedEvent, for consumers in other languages."""
    from unified.events import event_json_schema

    _print_json(event_json_schema())


# ------------------------------------------------------------------------------------------- doctor


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as one JSON line.")] = False,
) -> None:
    """Report the credentials found (never their values), the agent binaries and what each backend can do here."""
    from unified._cli.doctor import doctor_report

    report = doctor_report()
    ready = any(b["ready"] for b in report["backends"] if b["backend"] != "scripted")
    if as_json:
        _json_line(report)
        raise typer.Exit(0 if ready else 1)
    auth = report["auth"]
    _say("Credentials", style="bold")
    if not auth["modes"]:
        _say(
            "  none found: set GEMINI_API_KEY, ANTHROPIC_API_KEY or OPENAI_API_KEY, configure Vertex AI or Bedrock, "
            "or log in with `gemini` or `codex login`",
            style="yellow",
        )
    for mode in auth["modes"]:
        mark, style = ("✓", "green") if mode["usable"] else ("✗", "red")
        detail = f" ({mode['detail']})" if mode["detail"] else ""
        _say(f"  {mark} {mode['mode']} from {mode['source']}{detail}", style=style)
        for problem in mode["problems"]:
            _say(f"      problem: {problem}", style="red")
        for item in mode["notes"]:
            _say(f"      note: {item}", style="dim")
    for item in auth["notes"]:
        _say(f"  note: {item}", style="dim")

    for key in ("gemini", "claude", "codex"):  # found as each backend finds it (`unified._binary.install`)
        binary = report[key]
        _say(f"{key} binary", style="bold")
        if binary["path"] is None:
            _say(f"  ✗ {binary['problem']}", style="red")
        else:
            style = "red" if binary["problem"] else "green"
            _say(
                f"  {binary['path']} (from {binary['found_by']}): {binary['problem'] or binary['version']}", style=style
            )

    _say("Backends", style="bold")
    for status in report["backends"]:
        mark, style = ("✓ ready", "green") if status["ready"] else ("✗ not ready", "red")
        _say(f"  {status['backend']}: {mark}", style=style)
        for problem in status["problems"]:
            _say(f"      {problem}", style="red")
        levels = status["capabilities"]
        _say(f"      full: {', '.join(levels['full']) or '-'}", style="dim")
        for level in ("partial", "emulated", "none"):
            if levels[level]:
                _say(f"      {level}: {', '.join(levels[level])}", style="dim")

    auto = report["auto"]
    _say('backend="auto"', style="bold")
    if auto["backend"]:
        _say(f"  → {auto['reason']}", style="green")
    else:
        _say(f"  ✗ {auto['reason']}", style="red")
    raise typer.Exit(0 if ready else 1)


PrefixOption = Annotated[
    Path | None,
    typer.Option(parser=_install_folder, help="Where to install (default: the user data dir, where unified looks)."),
]
"""`--prefix` of every install command (`install`, `install-gemini`, `install-claude-code`)."""


@app.command("install")
def install_command(
    backend: Annotated[
        str, typer.Argument(help="The backend whose pinned binary to install: gemini-cli, claude-code or codex.")
    ],
    prefix: PrefixOption = None,
) -> None:
    """Install a backend's pinned agent binary with npm, where unified finds it. Never global."""
    from unified._cli.install import INSTALLABLE

    name = {"gemini": "gemini-cli"}.get(backend, backend)
    if name not in INSTALLABLE:
        raise _fail(
            f"nothing to install for {backend!r}: choose one of {', '.join(sorted(INSTALLABLE))}", EXIT_BAD_INPUT
        )
    _install(name, prefix)


@app.command("install-gemini")
def install_gemini_command(
    prefix: PrefixOption = None,
) -> None:
    """Install the pinned gemini CLI (needs Node.js 20+) with npm, where unified finds it. Never global."""
    _install("gemini-cli", prefix)


@app.command("install-claude-code")
def install_claude_code_command(
    prefix: PrefixOption = None,
) -> None:
    """Install the pinned Claude Code CLI (npm needs Node.js 18+; ~400 MB) where unified finds it. Never global."""
    _install("claude-code", prefix)


def _install(backend: str, prefix: Path | None) -> None:
    from unified._binary.install import NodeUnavailable
    from unified._cli.install import install_binary

    try:
        done = install_binary(backend, prefix, os.environ)
    except (NodeUnavailable, ConfigurationError) as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    spec = done.spec
    _say(f"{spec.name} {spec.version} {'installed' if done.ran else 'already installed'}: {done.binary}", style="green")
    if not done.default_place:
        _say(f"unified looks elsewhere by default: export {spec.env_var}={done.binary}", style="yellow")


# ----------------------------------------------------------------------------------------- sessions


def _resolve(ref: str, backend: str | None, cwd: str | None, *, unreadable: bool = False) -> SessionInfo:
    """The one session `ref` names, searching every backend unless one is given (`unreadable`: also one whose
    record cannot be read, for `delete`)."""
    from unified import sessions

    if not ref.strip():
        raise _fail("the session reference is empty (pass a short id, a unique prefix or a full id)", EXIT_BAD_INPUT)
    try:
        return anyio.run(lambda: sessions.resolve(ref, backend=backend, cwd=cwd, unreadable=unreadable))
    except SessionNotFound as exc:
        searched = exc.details.get("searched")
        shown = clip(ref, 80, more="…")
        if backend is None and isinstance(searched, list):  # the library's message lists each backend on a line
            unavailable = exc.details.get("unavailable") or []
            skipped = f"; not searched: {', '.join(map(str, unavailable))}" if unavailable else ""
            where = ", ".join(map(str, searched)) or "no backend"
            raise _fail(f"no session matches {shown!r} (searched {where}{skipped}; {exc.hint})") from None
        raise _fail(str(exc)) from None
    except UnifiedError as exc:
        raise _fail(str(exc)) from None


SessionBackendOption = Annotated[
    str | None,
    typer.Option(callback=_choice(_session_backends), help="Only this backend (one that keeps sessions)."),
]
CwdOption = Annotated[
    Path | None,
    typer.Option(parser=_directory, help="The project whose sessions to use (default: the backend's)."),
]


def _cwd(cwd: Path | None) -> str | None:
    return str(cwd.resolve()) if cwd else None


@sessions_app.command("list")
def sessions_list(
    backend: SessionBackendOption = None,
    cwd: CwdOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON line per session (unreadable ones with their `problem`).")
    ] = False,
) -> None:
    """List stored sessions, most recent first; unreadable ones in a section of their own."""
    from unified import sessions

    try:
        listing = anyio.run(lambda: sessions.list_sessions(backend=backend, cwd=_cwd(cwd)))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    searched_none = bool(listing.unavailable) and set(listing.unavailable) >= set(sessions.session_backends())
    if as_json:
        for info in [*listing.sessions, *listing.unreadable]:
            _json_line(info.model_dump(mode="json"))
    elif not listing.sessions and not listing.unreadable and listing.unavailable:
        if not searched_none:  # "no sessions yet" was said when no store could be read at all
            _say(f"no sessions in the backends searched ({', '.join(_searched(listing))})", style="dim")
    elif not listing.sessions and not listing.unreadable and cwd is not None:
        # "no sessions yet: `unified run` starts one" was said of a --cwd with a typo, sessions or not elsewhere
        missing = (  # a file was said to be no such directory
            ""
            if cwd.is_dir()
            else " (a file, not a directory: check --cwd)"
            if cwd.exists()
            else " (no such directory here: check --cwd)"
        )
        _say(f"no {backend + ' ' if backend else ''}sessions in the project at {cwd.resolve()}{missing}", style="dim")
    elif not listing.sessions and not listing.unreadable:
        _say(f"no {backend + ' ' if backend else ''}sessions yet: `unified run` starts one", style="dim")
    elif not listing.sessions:
        _say(f"no readable {backend + ' ' if backend else ''}sessions", style="dim")
    else:
        from rich.table import Table
        from rich.text import Text

        from unified._cli.render import visible

        table = Table("short id", "backend", "updated", "summary")
        seen = Counter((s.backend, s.short_id) for s in listing.sessions)
        for s in listing.sessions:
            when = str(s.updated_at or s.started_at or "")[:19]
            summary = clip(s.summary or s.first_prompt or "", 80)
            if seen[(s.backend, s.short_id)] > 1 and s.cwd:  # one id in two projects: `--cwd` tells them apart
                summary = f"{summary} (in {clip(s.cwd, 120)}: --cwd)"
            # Text, not str: rich reads a str cell as markup, so a prompt holding `[/b]` stopped the listing
            # (MarkupError) and `[link=URL]` made a hyperlink of a stored text (round 33)
            table.add_row(*(Text(visible(cell)) for cell in (s.short_id, s.backend, when, summary)))
        _console().print(table)
    if listing.unreadable and not as_json:
        _say(f"{len(listing.unreadable)} unreadable session(s), left unchanged:", style="bold yellow")
        for s in listing.unreadable:
            assert s.problem is not None
            _say(f"  {s.backend} {s.short_id}: {s.problem.message} ({s.problem.hint})", style="yellow")
    reasons: dict[str, list[str]] = {}  # one misconfigured store made every backend say the same thing
    for name, why in listing.unavailable.items():
        reasons.setdefault(one_line(why), []).append(name)
    for why, names in reasons.items():
        _say(f"sessions of {', '.join(names)} are not available: {why}", style="yellow", stderr=True)
    if searched_none:
        raise _fail("no backend's sessions could be listed (above: why)")


def _searched(listing: SessionListing) -> list[str]:
    from unified import sessions

    return [name for name in sessions.session_backends() if name not in listing.unavailable]


@sessions_app.command("show")
def sessions_show(
    ref: str,
    backend: SessionBackendOption = None,
    cwd: CwdOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print it as one JSON line.")] = False,
) -> None:
    """Print one session's conversation as JSON. REF: a short id, a unique prefix or a full session id."""
    from unified import sessions

    info = _resolve(ref, backend, _cwd(cwd))
    try:
        shown = anyio.run(lambda: sessions.show(info.session_id, backend=info.backend, cwd=_cwd(cwd)))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _json_line(shown)
    else:
        _print_json(shown)


@sessions_app.command("export")
def sessions_export(ref: str, backend: SessionBackendOption = None, cwd: CwdOption = None) -> None:
    """Print one session's history as a portable conversation (JSON, docs/conversations.md)."""
    from unified import sessions

    info = _resolve(ref, backend, _cwd(cwd))
    try:
        conversation = anyio.run(lambda: sessions.export(info.session_id, backend=info.backend, cwd=_cwd(cwd)))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    _write_line(conversation.to_json())


@sessions_app.command("delete")
def sessions_delete(
    ref: str,
    backend: SessionBackendOption = None,
    cwd: CwdOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete one session (asks first unless --yes). REF: a short id, a unique prefix or a full session id."""
    from unified import sessions

    info = _resolve(ref, backend, _cwd(cwd), unreadable=True)
    # An unreadable record is named by its whole path (what was deleted must be findable, and the
    # problem's message, which leads with it, lost its end to the clip); a readable one by its summary.
    about = f"unreadable record {info.path}" if info.problem else clip(info.summary or info.first_prompt or "", 60)
    label = f"{info.backend} session {info.short_id} ({about})"
    if not yes:
        if not sys.stdin.isatty():
            raise _fail(f"refusing to delete {label} without --yes", 2)
        from unified._cli.render import visible

        typer.confirm(visible(redact(f"Delete {label}?")), abort=True)
    try:
        anyio.run(lambda: sessions.delete(info.session_id, backend=info.backend, cwd=_cwd(cwd)))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    _say(f"deleted {label}", style="green")


# ------------------------------------------------------------------------------------ entry point


for _info in (*app.registered_commands, *sessions_app.registered_commands):
    _info.cls = _Command


def _usage_error(exc: Exception) -> int | None:
    """The exit code of a command-line usage error (typer's own click or a vendored one), else None."""
    code = getattr(exc, "exit_code", None)
    if not isinstance(code, int) or not callable(getattr(exc, "format_message", None)):
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":  # `unified` or `unified sessions` alone: the help
        text = exc.ctx.get_help()  # type: ignore[attr-defined]  # typer's rich help prints itself
        if text.strip():
            _console().print(text)
        return EXIT_BAD_INPUT
    ctx = getattr(exc, "ctx", None)
    where = f" (see `{ctx.command_path} --help`)" if ctx is not None and code == EXIT_BAD_INPUT else ""
    _error_line(f"{exc.format_message()}{where}")  # type: ignore[attr-defined]
    return code


def _stdin_from_devnull() -> None:
    """Python leaves `sys.stdin` None when descriptor 0 was closed at start (`<&-`, some supervisors): `run` asked it
    `isatty()` and `--history -` read its `buffer`, both an AttributeError ("unexpected ... a bug in unified", exit
    70). /dev/null takes its place: no input, not a terminal. It goes to descriptor 0 only while that is free (the
    lowest free descriptor is the one `open` returns), so nothing opened since start is ever replaced."""
    fd = os.open(os.devnull, os.O_RDONLY | (os.O_CLOEXEC if hasattr(os, "O_CLOEXEC") else 0))
    if fd == 0:
        os.set_inheritable(0, True)  # as a stdin is: a child given no stdin of its own reads /dev/null too
    sys.stdin = open(fd, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115  # it is stdin: kept open


def main(argv: list[str] | None = None) -> int:
    """The `unified` console script: every failure ends as one `error:` line and an exit code.

    Usage errors exit 2, a reader of stdout that left (`| head`) 141, a stdout that cannot be written 74, an
    unexpected exception 70
    (its traceback only with UNIFIED_DEBUG=1); docs/cli.md lists them all.
    """
    if sys.stdin is None:  # started with its descriptor closed (`<&-`): read as an empty input, /dev/null's
        _stdin_from_devnull()
    if sys.stdout is None:  # started with its descriptor closed (`>&-`): nowhere to put any output
        if sys.stderr is not None:
            _say("error: stdout is closed: unified writes its output there (give it a file, or /dev/null)", stderr=True)
        return EXIT_OUTPUT_FAILED
    json_errors = _JSON_ERRORS.set(_wants_json_errors(sys.argv[1:] if argv is None else argv))
    try:
        return _main(argv)
    finally:
        _JSON_ERRORS.reset(json_errors)


def _main(argv: list[str] | None) -> int:
    """`main` once stdin and stdout are there: the command, each failure turned into its line and exit code."""
    try:
        code = app(args=argv, prog_name="unified", standalone_mode=False)
        _Stdout().flush()  # here, not at exit, so a reader that left is reported like any other
    except typer.Abort:
        _say("aborted", style="yellow", stderr=True)
        return EXIT_CODES["interrupted"]
    except (_ReaderLeft, BrokenPipeError):
        return _reader_left()
    except _OutputFailed as exc:
        return _output_failed(exc)
    except UnifiedError as exc:
        _error_line(str(exc), exc.code)
        return EXIT_BAD_INPUT if isinstance(exc, ConfigurationError) else 1
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is not None:
            return usage
        if os.environ.get("UNIFIED_DEBUG") == "1":
            raise
        _error_line(
            f"unexpected {type(exc).__name__}: {one_line(str(exc))} (a bug in unified; rerun with "
            "UNIFIED_DEBUG=1 for the traceback and report it)",
            "internal_error",
        )
        return EXIT_INTERNAL
    return code if isinstance(code, int) else 0
