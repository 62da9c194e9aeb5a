"""The `unified` command: `run`, `demo`, `replay`, `record`, `capabilities`, `schema`, `doctor`, `sessions`.

Only this package imports typer and rich, so `import unified` stays light. Everything printed
passes through `redact()`: no secret from the environment reaches the terminal or a log, whatever
a backend or a model says.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast, get_args

import anyio
import typer
import typer.core
from anyio import CancelScope
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from unified import ConfigurationError, UnifiedError, sessions
from unified import capabilities as matrix
from unified._cli.doctor import doctor_report
from unified._cli.interactive import make_user_input_handler
from unified._cli.render import Renderer, format_usage
from unified._redaction import redact
from unified._routing import select_backend_for
from unified.events import Result, ResultStatus, UnifiedEvent, dump_event, event_json_schema
from unified.sessions import SessionInfo
from unified.types import ApprovalMode, BackendName, ExecuteParams

if TYPE_CHECKING:
    from unified._execute import EventStream

__all__ = [
    "APPROVAL_CHOICES",
    "DEMO_BACKENDS",
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_CODES",
    "EXIT_INTERNAL",
    "LEVEL_STYLES",
    "CwdOption",
    "SessionBackendOption",
    "app",
    "capabilities",
    "demo",
    "doctor",
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
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold secrets
    help="Drive Google agent backends (Gemini CLI, generateContent, Interactions) through one event stream.",
)
sessions_app = typer.Typer(cls=_Group, no_args_is_help=True, help="List, show and delete stored sessions.")
app.add_typer(sessions_app, name="sessions")

EXIT_CODES: dict[ResultStatus, int] = {"success": 0, "error": 1, "max_turns": 1, "cancelled": 130, "interrupted": 130}
"""A run's exit code from its result (docs/cli.md lists every exit code)."""
EXIT_BAD_INPUT = 2
"""A bad argument, option, file or setting: nothing ran."""
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a process ended by SIGPIPE: the reader of stdout left (`| head`)."""
EXIT_INTERNAL = 70
"""An exception `unified` did not expect: a bug (EX_SOFTWARE)."""
APPROVAL_CHOICES: tuple[str, ...] = get_args(ApprovalMode)
DEMO_BACKENDS = ("gemini-cli", "generate-content", "interactions", "codex")
LEVEL_STYLES = {"full": "green", "partial": "yellow", "emulated": "cyan", "none": "dim red"}


class _ReaderLeft(Exception):
    """stdout's reader left (`| head`): the command stops and exits 141, saying nothing more.

    Not an OSError on purpose: typer turns a BrokenPipeError into exit code 1.
    """


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Rich would exit 1 here."""
        self.quiet = True
        raise _ReaderLeft


def _console(*, stderr: bool = False) -> Console:
    return _Console(stderr=stderr, highlight=False, soft_wrap=True)


def _say(text: str, *, style: str = "", stderr: bool = False) -> None:
    _console(stderr=stderr).print(Text(redact(text), style=style))


def _fail(message: str, code: int = 1) -> typer.Exit:
    _say(f"error: {message}", style="bold red", stderr=True)
    return typer.Exit(code)


def _choice(values: tuple[str, ...]) -> Callable[[str | None], str | None]:
    def check(value: str | None) -> str | None:
        if value is not None and value not in values:
            raise typer.BadParameter(f"{value!r} is not one of: {', '.join(values)}")
        return value

    return check


def _known_backend(value: str) -> str:
    """`auto` or a backend the registry knows (built in, registered, or an installed entry point)."""
    from unified.backends import known_backends

    choices = ("auto", *known_backends())
    if value not in choices:
        raise typer.BadParameter(f"{value!r} is not one of: {', '.join(choices)}")
    return value


def _print_json(data: Any) -> None:
    try:
        sys.stdout.write(redact(json.dumps(data, indent=2, default=str)) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise _ReaderLeft from None


def _one_line(exc: ValidationError) -> str:
    """A pydantic error as one line: `field: problem; field: problem`."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _reader_left() -> int:
    """stdout's reader is gone (`| head`): send what is left to /dev/null so exiting prints nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _write_line(line: str) -> None:
    """One line of JSON Lines output, flushed at once so a pipe sees each event as it happens."""
    try:
        sys.stdout.write(redact(line) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise _ReaderLeft from None


# --------------------------------------------------------------------------------------------- run


def _checked_params(
    prompt: str, backend: str, approval_mode: str, cwd: Path | None, approve: bool | None, **fields: Any
) -> ExecuteParams:
    """The run's parameters from the command line, checked as `execute()` would, or exit 2 with one line.

    Loads the run machinery (`unified._execute`), which `unified --help` and the other commands never need.
    """
    from unified._execute import check_params

    try:
        params = ExecuteParams(
            prompt=prompt,
            backend=backend,
            approval_mode=cast("ApprovalMode", approval_mode),
            cwd=(cwd or Path.cwd()).resolve(),
            on_user_input=make_user_input_handler(
                approve, interactive=sys.stdin.isatty(), console=_console(stderr=True)
            ),
            **fields,
        )
        check_params(params)
    except ValidationError as exc:
        raise _fail(_one_line(exc), EXIT_BAD_INPUT) from None
    except ConfigurationError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    return params


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    backend: Annotated[
        str,
        typer.Option(
            callback=_known_backend, help="auto, or a backend: gemini-cli, generate-content, interactions, ..."
        ),
    ] = "auto",
    model: Annotated[str | None, typer.Option(help="Model name (default: the backend's).")] = None,
    resume: Annotated[str | None, typer.Option(help="Continue a session: short id, unique prefix or full id.")] = None,
    approval_mode: Annotated[
        str, typer.Option(callback=_choice(APPROVAL_CHOICES), help=f"One of: {', '.join(APPROVAL_CHOICES)}.")
    ] = "default",
    cwd: Annotated[Path | None, typer.Option(help="The agent's working directory (default: here).")] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Stop after this many model turns.")] = None,
    timeout: Annotated[float | None, typer.Option(min=0.001, help="Total time limit in seconds.")] = None,
    approve: Annotated[
        bool | None,
        typer.Option(
            "--approve/--deny",
            help="Answer every permission request: allow once, or deny. Without either, a terminal asks.",
        ),
    ] = None,
) -> None:
    """Run PROMPT and show its events as they happen. Ctrl-C cancels the run cleanly (exit 130)."""
    params = _checked_params(
        prompt,
        backend,
        approval_mode,
        cwd,
        approve,
        model=model,
        resume=resume,
        max_turns=max_turns,
        total_timeout_s=timeout,
    )
    if params.backend == "auto" and not json_lines:
        with contextlib.suppress(UnifiedError):  # the run itself reports why nothing qualifies
            _say(f"auto → {select_backend_for(params).reason}", style="dim", stderr=True)
    try:
        code = anyio.run(_run, params, json_lines)
    except KeyboardInterrupt:  # where no signal receiver could be installed
        code = EXIT_CODES["interrupted"]
    raise typer.Exit(code)


def _show(event: UnifiedEvent, json_lines: bool, renderer: Renderer, console: Console) -> None:
    """One event on stdout: a JSON line, or the renderer's text (`_ReaderLeft` once stdout's reader is gone)."""
    if json_lines:
        _write_line(dump_event(event))
        return
    shown = renderer.render(event)
    if shown is not None:
        console.print(shown, end="")


async def _run(params: ExecuteParams, json_lines: bool) -> int:
    renderer = Renderer()
    console = _console()
    status: ResultStatus = "interrupted"  # unless a result arrives
    from unified._execute import execute  # loaded by `_checked_params`, before the event loop started

    async with execute(params) as stream, anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_interrupt, stream, tg.cancel_scope)
        async for event in stream:
            try:
                _show(event, json_lines, renderer, console)
            except _ReaderLeft:  # stop the run, say nothing more
                stream.cancel()
                tg.cancel_scope.cancel()
                return _reader_left()
            if isinstance(event, Result):
                status = event.status
        tg.cancel_scope.cancel()
    return EXIT_CODES[status]


async def _cancel_on_interrupt(stream: EventStream, scope: CancelScope) -> None:
    """First Ctrl-C cancels the run, whose `result` still arrives; a second one stops waiting for it."""
    try:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            interrupted = False
            async for _ in signals:
                if interrupted:
                    scope.cancel()
                    return
                interrupted = True
                _say("interrupting… (Ctrl-C again to stop waiting)", style="yellow", stderr=True)
                stream.cancel(interrupted=True)
    except NotImplementedError:  # no signal receivers on Windows: KeyboardInterrupt ends the run
        return


# ----------------------------------------------------------------------------- demo, replay


@app.command()
def demo(
    backend: Annotated[
        str, typer.Option(callback=_choice(("all", *DEMO_BACKENDS)), help="all, or one of the backends.")
    ] = "all",
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
) -> None:
    """Run a built-in task on every backend, offline: real adapters, a scripted model on 127.0.0.1."""
    from unified._cli.demo import run_demo

    chosen = cast("tuple[BackendName, ...]", DEMO_BACKENDS if backend == "all" else (backend,))
    renderer: dict[str, Renderer] = {}
    console = _console()

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

    runs = anyio.run(run_demo, chosen, show)
    if not json_lines:
        table = Table(title=f"the same task, {len(runs)} backend{'s' if len(runs) != 1 else ''}")
        for column in ("backend", "result", "events", "tool calls", "tokens"):
            table.add_column(column)
        for one in runs:
            result = one.result
            table.add_row(
                one.backend,
                result.status if result else "no result",
                str(len(one.events)),
                ", ".join(one.tools),
                format_usage(result.usage).removeprefix("usage: ") if result else "",
            )
        console.print(table)
    failed = [one.backend for one in runs if one.result is None or one.result.status != "success"]
    raise typer.Exit(1 if failed else 0)


@app.command()
def replay(
    cassette: Annotated[Path, typer.Argument(help="A recorded cassette: a .yaml file or a gemini-cli .jsonl file.")],
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    native: Annotated[bool, typer.Option(help="Keep each raw backend event in `native`.")] = False,
    cwd: Annotated[
        Path | None,
        typer.Option(help="Where the replayed tools run, e.g. a copy of the recorded workspace (default: empty)."),
    ] = None,
) -> None:
    """Play a recorded cassette through the real adapter code, offline, and show the unified events."""
    from unified.testing._replay import ReplayError, describe, replay_events

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
            async with contextlib.aclosing(replay_events(cassette, include_native=native, cwd=workdir)) as events:
                async for event in events:
                    try:
                        _show(event, json_lines, renderer, console)
                    except _ReaderLeft:
                        return _reader_left()
                    if isinstance(event, Result):
                        status = event.status
        return EXIT_CODES[status]

    try:
        code = anyio.run(play)
    except ReplayError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    raise typer.Exit(code)


@app.command()
def record(
    cassette: Annotated[Path, typer.Argument(help="The file to write: .yaml (API backends) or .jsonl (gemini-cli).")],
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    backend: Annotated[
        str, typer.Option(callback=_choice(DEMO_BACKENDS), help=f"One of: {', '.join(DEMO_BACKENDS)}.")
    ] = "generate-content",
    model: Annotated[str | None, typer.Option(help="Model name (default: the backend's).")] = None,
    approval_mode: Annotated[
        str, typer.Option(callback=_choice(APPROVAL_CHOICES), help=f"One of: {', '.join(APPROVAL_CHOICES)}.")
    ] = "default",
    cwd: Annotated[Path | None, typer.Option(help="The agent's working directory (default: here).")] = None,
    source: Annotated[
        str | None, typer.Option(help="What answered, written into the cassette (default: says it was a live run).")
    ] = None,
    approve: Annotated[
        bool | None,
        typer.Option("--approve/--deny", help="Answer every permission request: allow once, or deny."),
    ] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
) -> None:
    """Run PROMPT for real and record it as CASSETTE, for `unified replay` (credentials as for `run`)."""
    from unified.testing._record import RecordError, record_run

    params = _checked_params(prompt, backend, approval_mode, cwd, approve, model=model)
    what = source or f"a live {backend} run recorded with `unified record`"
    try:
        events = anyio.run(functools.partial(record_run, params, cassette, source=what))
    except RecordError as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    renderer, console = Renderer(), _console()
    for event in events:
        if json_lines:
            _write_line(dump_event(event))
        elif (shown := renderer.render(event)) is not None:
            console.print(shown, end="")
    result = events[-1] if events and isinstance(events[-1], Result) else None
    _say(f"recorded {cassette}", style="dim", stderr=True)
    raise typer.Exit(EXIT_CODES[result.status] if result else 1)


# ----------------------------------------------------------------------------- capabilities, schema


@app.command()
def capabilities(
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole matrix as JSON.")] = False,
    backend: Annotated[
        str | None, typer.Option(callback=_choice(matrix.BACKENDS), help="Show one backend's levels with notes.")
    ] = None,
) -> None:
    """Print the capability matrix: what each backend can do."""
    if as_json:
        _print_json(matrix.to_json())
        return
    console = _console()
    if backend is not None:
        column = matrix.column(backend)
        table = Table("capability", "level", "note", title=f"{backend}: {column.title}", expand=False)
        for name, cell in column.cells.items():
            table.add_row(name, Text(cell.level, style=LEVEL_STYLES[cell.level]), cell.note)
        console.print(table)
        return
    table = Table(title="Capability matrix (--backend NAME shows the notes)")
    table.add_column("capability", no_wrap=True)
    for name in matrix.BACKENDS:
        table.add_column(name, overflow="fold")  # narrow terminals wrap long backend names, never cut them
    for name in matrix.CAPABILITIES:
        levels = [matrix.level(b, name) for b in matrix.BACKENDS]
        table.add_row(name, *[Text(level, style=LEVEL_STYLES[level]) for level in levels])
    console.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of UnifiedEvent, for consumers in other languages."""
    _print_json(event_json_schema())


# ------------------------------------------------------------------------------------------- doctor


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False) -> None:
    """Report the credentials found (never their values), the gemini binary and what each backend can do here."""
    report = doctor_report()
    ready = any(b["ready"] for b in report["backends"] if b["backend"] != "scripted")
    if as_json:
        _print_json(report)
        raise typer.Exit(0 if ready else 1)
    auth = report["auth"]
    _say("Credentials", style="bold")
    if not auth["modes"]:
        _say(
            "  none found: set GEMINI_API_KEY, configure Vertex AI, log in with `gemini`, set OPENAI_API_KEY "
            "or log in with `codex login`",
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

    gemini = report["gemini"]
    _say("gemini binary", style="bold")
    if gemini["path"] is None:
        _say(f"  ✗ {gemini['found_by']}", style="red")
    else:
        version, style = (gemini["version"], "green") if gemini["version"] else (gemini["problem"], "red")
        _say(f"  {gemini['path']} (from {gemini['found_by']}): {version}", style=style)

    codex = report["codex"]
    _say("codex binary", style="bold")
    if codex["path"] is None:
        _say(f"  ✗ {codex['found_by']}", style="red")
    else:
        version, style = (codex["version"], "green") if not codex["problem"] else (codex["problem"], "red")
        _say(f"  {codex['path']} (from {codex['found_by']}): {version}", style=style)

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


@app.command("install")
def install_command(
    backend: Annotated[str, typer.Argument(help="The backend whose pinned binary to install: gemini-cli or codex.")],
    prefix: Annotated[
        Path | None, typer.Option(help="Where to install (default: the user data dir, where unified looks).")
    ] = None,
) -> None:
    """Install a backend's pinned agent binary with npm, where unified finds it. Never global."""
    from unified._binary.install import NodeUnavailable
    from unified._cli.install import INSTALLABLE, install_binary

    name = {"gemini": "gemini-cli"}.get(backend, backend)
    if name not in INSTALLABLE:
        raise _fail(
            f"nothing to install for {backend!r}: choose one of {', '.join(sorted(INSTALLABLE))}", EXIT_BAD_INPUT
        )
    try:
        done = install_binary(name, prefix, os.environ)
    except NodeUnavailable as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    spec = done.spec
    _say(f"{spec.name} {spec.version} {'installed' if done.ran else 'already installed'}: {done.binary}", style="green")
    if not done.default_place:
        _say(f"unified looks elsewhere by default: export {spec.env_var}={done.binary}", style="yellow")


@app.command("install-gemini")
def install_gemini_command(
    prefix: Annotated[
        Path | None, typer.Option(help="Where to install (default: the user data dir, where unified looks).")
    ] = None,
) -> None:
    """Install the pinned gemini CLI (needs Node.js 20+) with npm, where unified finds it. Never global."""
    from unified._binary.install import NodeUnavailable
    from unified._cli.install import install_binary

    try:
        done = install_binary("gemini-cli", prefix, os.environ)
    except NodeUnavailable as exc:
        raise _fail(str(exc), EXIT_BAD_INPUT) from None
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    spec = done.spec
    _say(f"{spec.name} {spec.version} {'installed' if done.ran else 'already installed'}: {done.binary}", style="green")
    if not done.default_place:
        _say(f"unified looks elsewhere by default: export {spec.env_var}={done.binary}", style="yellow")


# ----------------------------------------------------------------------------------------- sessions

_SESSION_BACKENDS: tuple[str, ...] = sessions.session_backends()


def _resolve(ref: str, backend: str | None, cwd: str | None) -> SessionInfo:
    """The one session `ref` names, searching every backend unless one is given."""
    try:
        return anyio.run(lambda: sessions.resolve(ref, backend=backend, cwd=cwd))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None


SessionBackendOption = Annotated[
    str | None,
    typer.Option(callback=_choice(_SESSION_BACKENDS), help=f"Only this backend: {', '.join(_SESSION_BACKENDS)}."),
]
CwdOption = Annotated[Path | None, typer.Option(help="The project whose sessions to use (default: the backend's).")]


def _cwd(cwd: Path | None) -> str | None:
    return str(cwd.resolve()) if cwd else None


@sessions_app.command("list")
def sessions_list(
    backend: SessionBackendOption = None,
    cwd: CwdOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the sessions as JSON.")] = False,
) -> None:
    """List stored sessions, most recent first; unreadable ones in a section of their own."""
    try:
        listing = anyio.run(lambda: sessions.list_sessions(backend=backend, cwd=_cwd(cwd)))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _print_json([s.model_dump(mode="json") for s in [*listing.sessions, *listing.unreadable]])
    elif not listing.sessions and not listing.unreadable:
        _say(f"no {backend + ' ' if backend else ''}sessions yet: `unified run` starts one", style="dim")
    elif not listing.sessions:
        _say(f"no readable {backend + ' ' if backend else ''}sessions", style="dim")
    else:
        table = Table("short id", "backend", "updated", "summary")
        for s in listing.sessions:
            when = str(s.updated_at or s.started_at or "")[:19]
            table.add_row(s.short_id, s.backend, when, redact((s.summary or s.first_prompt or "")[:80]))
        _console().print(table)
    if listing.unreadable and not as_json:
        _say(f"{len(listing.unreadable)} unreadable session(s), left unchanged:", style="bold yellow")
        for s in listing.unreadable:
            assert s.problem is not None
            _say(f"  {s.backend} {s.short_id}: {s.problem.message} ({s.problem.hint})", style="yellow")
    for name, why in listing.unavailable.items():
        _say(f"sessions of {name} are not available: {why}", style="yellow", stderr=True)


@sessions_app.command("show")
def sessions_show(ref: str, backend: SessionBackendOption = None, cwd: CwdOption = None) -> None:
    """Print one session's conversation as JSON. REF: a short id, a unique prefix or a full session id."""
    info = _resolve(ref, backend, _cwd(cwd))
    try:
        _print_json(anyio.run(lambda: sessions.show(info.session_id, backend=info.backend, cwd=_cwd(cwd))))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None


@sessions_app.command("export")
def sessions_export(ref: str, backend: SessionBackendOption = None, cwd: CwdOption = None) -> None:
    """Print one session's history as a portable conversation (JSON, docs/conversations.md)."""
    info = _resolve(ref, backend, _cwd(cwd))
    try:
        conversation = anyio.run(lambda: sessions.export(info.session_id, backend=info.backend, cwd=_cwd(cwd)))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None
    typer.echo(conversation.to_json())


@sessions_app.command("delete")
def sessions_delete(
    ref: str,
    backend: SessionBackendOption = None,
    cwd: CwdOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete one session (asks first unless --yes). REF: a short id, a unique prefix or a full session id."""
    info = _resolve(ref, backend, _cwd(cwd))
    label = f"{info.backend} session {info.short_id} ({(info.summary or info.first_prompt or '')[:60]})"
    if not yes:
        if not sys.stdin.isatty():
            raise _fail(f"refusing to delete {label} without --yes", 2)
        typer.confirm(redact(f"Delete {label}?"), abort=True)
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
    _say(f"error: {exc.format_message()}{where}", style="bold red", stderr=True)  # type: ignore[attr-defined]
    return code


def main(argv: list[str] | None = None) -> int:
    """The `unified` console script: every failure ends as one `error:` line and an exit code.

    Usage errors exit 2, a reader of stdout that left (`| head`) 141, an unexpected exception 70
    (its traceback only with UNIFIED_DEBUG=1); docs/cli.md lists them all.
    """
    try:
        code = app(args=argv, prog_name="unified", standalone_mode=False)
        sys.stdout.flush()  # here, not at exit, so a reader that left is reported like any other
    except typer.Abort:
        _say("aborted", style="yellow", stderr=True)
        return EXIT_CODES["interrupted"]
    except (_ReaderLeft, BrokenPipeError):
        return _reader_left()
    except UnifiedError as exc:
        _say(f"error: {exc}", style="bold red", stderr=True)
        return EXIT_BAD_INPUT if isinstance(exc, ConfigurationError) else 1
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is not None:
            return usage
        if os.environ.get("UNIFIED_DEBUG") == "1":
            raise
        _say(
            f"error: unexpected {type(exc).__name__}: {exc} (a bug in unified; rerun with UNIFIED_DEBUG=1 "
            "for the traceback and report it)",
            style="bold red",
            stderr=True,
        )
        return EXIT_INTERNAL
    return code if isinstance(code, int) else 0
