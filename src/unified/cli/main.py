"""The `unified` command: `run`, `demo`, `replay`, `capabilities`, `schema`, `doctor` and `sessions`.

Only this package imports typer and rich, so `import unified` stays light. Everything printed
passes through `redact()`: no secret from the environment reaches the terminal or a log, whatever
a backend or a model says.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, cast, get_args

import anyio
import typer
from anyio import CancelScope
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from unified import capabilities as matrix
from unified import sessions
from unified._errors import UnifiedError
from unified._internal.redact import redact
from unified.cli.doctor import doctor_report
from unified.cli.interactive import make_user_input_handler
from unified.cli.render import Renderer, format_usage
from unified.events import Result, ResultStatus, UnifiedEvent, dump_event, event_json_schema
from unified.query import EventStream, execute
from unified.routing import select_backend_for
from unified.sessions import SessionInfo
from unified.types import ApprovalMode, BackendChoice, BackendName, ExecuteParams

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold secrets
    help="Drive Google agent backends (Gemini CLI, generateContent, Interactions) through one event stream.",
)
sessions_app = typer.Typer(no_args_is_help=True, help="List, show and delete stored sessions.")
app.add_typer(sessions_app, name="sessions")

EXIT_CODES: dict[ResultStatus, int] = {"success": 0, "error": 1, "max_turns": 1, "cancelled": 130, "interrupted": 130}
BACKEND_CHOICES: tuple[str, ...] = tuple(value for arg in get_args(BackendChoice) for value in get_args(arg))
APPROVAL_CHOICES: tuple[str, ...] = get_args(ApprovalMode)
EXIT_BROKEN_PIPE = 141
DEMO_BACKENDS = ("gemini-cli", "generate-content", "interactions")
"""What a shell reports for a process ended by SIGPIPE."""
LEVEL_STYLES = {"full": "green", "partial": "yellow", "emulated": "cyan", "none": "dim red"}


def _console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


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


def _print_json(data: Any) -> None:
    sys.stdout.write(redact(json.dumps(data, indent=2, default=str)) + "\n")


# --------------------------------------------------------------------------------------------- run


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What the agent should do.")],
    backend: Annotated[
        str, typer.Option(callback=_choice(BACKEND_CHOICES), help=f"One of: {', '.join(BACKEND_CHOICES)}.")
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
    try:
        params = ExecuteParams(
            prompt=prompt,
            backend=cast("BackendChoice", backend),
            model=model,
            resume=resume,
            approval_mode=cast("ApprovalMode", approval_mode),
            cwd=(cwd or Path.cwd()).resolve(),
            max_turns=max_turns,
            total_timeout_s=timeout,
            on_user_input=make_user_input_handler(
                approve, interactive=sys.stdin.isatty(), console=_console(stderr=True)
            ),
        )
    except ValidationError as exc:
        raise _fail(str(exc), 2) from None
    if params.backend == "auto" and not json_lines:
        with contextlib.suppress(UnifiedError):  # the run itself reports why nothing qualifies
            _say(f"auto → {select_backend_for(params).reason}", style="dim", stderr=True)
    try:
        code = anyio.run(_run, params, json_lines)
    except KeyboardInterrupt:  # where no signal receiver could be installed
        code = EXIT_CODES["interrupted"]
    raise typer.Exit(code)


async def _run(params: ExecuteParams, json_lines: bool) -> int:
    renderer = Renderer()
    console = _console()
    status: ResultStatus = "interrupted"  # unless a result arrives
    async with execute(params) as stream, anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_interrupt, stream, tg.cancel_scope)
        async for event in stream:
            try:
                if json_lines:
                    sys.stdout.write(redact(dump_event(event)) + "\n")
                    sys.stdout.flush()
                else:
                    shown = renderer.render(event)
                    if shown is not None:
                        console.print(shown, end="")
            except BrokenPipeError:  # the reader left (`| head`): stop the run, say nothing more
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                stream.cancel()
                tg.cancel_scope.cancel()
                return EXIT_BROKEN_PIPE
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
        str, typer.Option(callback=_choice(("all", *DEMO_BACKENDS)), help="all, or one of the three backends.")
    ] = "all",
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
) -> None:
    """Run a built-in task on every backend, offline: real adapters, a scripted model on 127.0.0.1."""
    from unified.cli.demo import run_demo

    chosen = cast("tuple[BackendName, ...]", DEMO_BACKENDS if backend == "all" else (backend,))
    renderer: dict[str, Renderer] = {}
    console = _console()

    def show(name: str, event: UnifiedEvent) -> None:
        if json_lines:
            sys.stdout.write(redact(dump_event(event)) + "\n")
            return
        if name not in renderer:
            renderer[name] = Renderer()
            console.print(Text(f"\n━━ {name} ━━", style="bold"))
        shown = renderer[name].render(event)
        if shown is not None:
            console.print(shown, end="")

    runs = anyio.run(run_demo, chosen, show)
    if not json_lines:
        table = Table(title="the same task, three backends")
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
    cassette: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A file under cassettes/.")],
    json_lines: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    native: Annotated[bool, typer.Option(help="Keep each raw backend event in `native`.")] = False,
) -> None:
    """Play a recorded cassette through the real adapter code, offline, and show the unified events."""
    from unified.testing.replay import ReplayError, replay_events

    async def play() -> int:
        renderer, console = Renderer(), _console()
        status: ResultStatus = "error"
        with tempfile.TemporaryDirectory(prefix="unified-replay-") as data:
            os.environ["UNIFIED_DATA_DIR"] = data  # a replayed session is not a session of the user's
            async for event in replay_events(cassette, include_native=native):
                if json_lines:
                    sys.stdout.write(redact(dump_event(event)) + "\n")
                else:
                    shown = renderer.render(event)
                    if shown is not None:
                        console.print(shown, end="")
                if isinstance(event, Result):
                    status = event.status
        return EXIT_CODES[status]

    try:
        code = anyio.run(play)
    except ReplayError as exc:
        raise _fail(str(exc), 2) from None
    raise typer.Exit(code)


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
        _say("  none found: set GEMINI_API_KEY, configure Vertex AI, or log in with `gemini`", style="yellow")
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
    """Print one session's conversation as JSON."""
    info = _resolve(ref, backend, _cwd(cwd))
    try:
        _print_json(anyio.run(lambda: sessions.show(info.session_id, backend=info.backend, cwd=_cwd(cwd))))
    except UnifiedError as exc:
        raise _fail(str(exc)) from None


@sessions_app.command("delete")
def sessions_delete(
    ref: str,
    backend: SessionBackendOption = None,
    cwd: CwdOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete one session (asks first unless --yes)."""
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
