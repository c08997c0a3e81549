"""Program handlers in Python: a service rpcd runs as a program and talks to over its standard input and
output (docs/HANDLER-PROTOCOL.md, protocol 1). Declare the service once; each method is a plain or async
function whose type hints become its parameters' schemas; `run()` speaks the protocol.

    from rpcd.handler import Service, RPCError
    notes = Service("notes", "1.0.0", "Short notes.", config={"MaxNotes": 100}, events={"added": dict})

    @notes.method(read_only=True)
    def count() -> int:
        return len(store)

    notes.run()

Threading: everything runs on one asyncio event loop in the main thread. A plain function runs on it, to
its end, before the next line is read (declare `blocking=True` for one that waits on I/O: it then runs in a
thread); an async function runs as a task, so calls of async methods overlap. `emit` and logging may be
used from any thread. Failures: RPCError raised by a method is its answer; any other exception answers
-32603 and is logged with its traceback.

Standard output belongs to the protocol: `run()` moves it aside and points descriptor 1 (and sys.stdout)
at standard error, so a stray print(), or a child process's output, becomes a log line instead of garbage
on the protocol.
"""

import asyncio
import contextvars
import inspect
import json
import logging
import os
import sys
import threading
import time
import types
import typing

from .errors import RPCError

__all__ = ["Service", "RPCError", "Call", "current_call", "JournalFormatter"]

PROTOCOL = 1
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class Call:
    """The call being answered: rpcd's `id`, the `caller` ({"local", "uid", "user", "address", "client"},
    as docs/HANDLER-PROTOCOL.md §4 lists) and the `deadline` (time.monotonic() seconds, or None)."""
    __slots__ = ("id", "method", "caller", "deadline")

    def __init__(self, id, method, caller, deadline):
        self.id, self.method, self.caller, self.deadline = id, method, caller, deadline


_current = contextvars.ContextVar("rpcd_call", default=None)


def current_call():
    """The Call a method runs for (None outside one)."""
    return _current.get()


# Schemas from type hints ---------------------------------------------------------------------------

_SIMPLE = {int: "integer", float: "number", str: "string", bool: "boolean", list: "array", tuple: "array",
           dict: "object", type(None): "null"}


def schema_of(hint):
    """The JSON Schema of a type hint: int, float, str, bool, list[X], dict[str, X], Optional[X], X | None,
    Literal[...], Any (or no hint: any value)."""
    if hint is inspect.Parameter.empty or hint is typing.Any or hint is object:
        return {}
    if isinstance(hint, dict):
        return hint  # a schema written out
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        kinds = {_SIMPLE.get(type(value)) for value in args}
        schema = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), **schema}
        return schema
    if origin is typing.Union or origin is types.UnionType:
        others = [arg for arg in args if arg is not type(None)]
        if len(others) == 1:
            return schema_of(others[0])  # Optional[X]: absent rather than null (rpcd drops a null)
        schemas = [schema_of(arg) for arg in others]
        if all(set(s) == {"type"} for s in schemas):
            return {"type": [s["type"] for s in schemas]}
        return {"anyOf": schemas}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        schema = {"type": "array"}
        if args and origin is not tuple:
            schema["items"] = schema_of(args[0])
        return schema
    if origin is dict or hint is dict:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = schema_of(args[1])
        return schema
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if isinstance(hint, type) and typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        return {"type": "object", "properties": {name: schema_of(h) for name, h in hints.items()},
                "required": sorted(getattr(hint, "__required_keys__", hints))}
    raise TypeError(f"no JSON Schema for the type hint {hint!r}: use int, float, str, bool, list, dict, "
                    "Optional, Literal or a TypedDict, or give a schema as a dict")


def _is_optional(hint):
    return (typing.get_origin(hint) in (typing.Union, types.UnionType)
            and type(None) in typing.get_args(hint))


# Configuration ------------------------------------------------------------------------------------------

_TRUE = {"1", "yes", "y", "true", "t", "on"}
_FALSE = {"0", "no", "n", "false", "f", "off"}


def _config_value(key, text, kind):
    """TEXT of [Config] KEY as KIND (str, int, float, bool), or an RPCError naming the key."""
    try:
        if kind is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError
        return kind(text)
    except ValueError:
        phrase = {int: "an integer", float: "a number", bool: "a boolean (yes or no)"}.get(kind, kind.__name__)
        raise RPCError(-32602, f"[Config] {key}={text} is not {phrase}", {"key": key}) from None


class _Method:
    def __init__(self, function, name, summary, read_only, concurrent, blocking, errors):
        self.function = function
        self.name = name
        self.is_async = inspect.iscoroutinefunction(function)
        if blocking and self.is_async:
            raise TypeError(f"method {name}: an async function cannot be blocking=True")
        self.blocking = blocking
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function)
        self.params = []
        self.required = set()
        self.names = set()
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"method {name}: *args and **kwargs have no declared names")
            hint = hints.get(param.name, inspect.Parameter.empty)
            required = param.default is inspect.Parameter.empty and not _is_optional(hint)
            entry = {"name": param.name, "schema": schema_of(hint), "required": required}
            self.params.append(entry)
            self.names.add(param.name)
            if required:
                self.required.add(param.name)
        self.declaration = {"name": name, "params": self.params, "readOnly": read_only, "concurrent": concurrent}
        if summary:
            self.declaration["summary"] = summary
        if "return" in hints:
            self.declaration["result"] = {"name": "result", "schema": schema_of(hints["return"])}
        if errors:
            self.declaration["errors"] = [
                error.to_json() if isinstance(error, RPCError) else {"code": error[0], "message": error[1]}
                for error in errors]

    def bind(self, params):
        """The keyword arguments for PARAMS, or -32602 (rpcd has checked them; this guards a program run by
        hand or by a test)."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RPCError(-32602, "Invalid params", {"detail": "params must be an object (by name)"})
        unknown = params.keys() - self.names
        if unknown:
            raise RPCError(-32602, "Invalid params", {"detail": f"unknown parameter '{sorted(unknown)[0]}'"})
        missing = self.required - params.keys()
        if missing:
            raise RPCError(-32602, "Invalid params", {"detail": f"missing parameter '{sorted(missing)[0]}'"})
        return params


class JournalFormatter(logging.Formatter):
    """Log records as sd-daemon(3) lines: `<N>` (the syslog level) before each line of the message."""
    LEVELS = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4), (logging.INFO, 6))

    def format(self, record):
        level = next((n for threshold, n in self.LEVELS if record.levelno >= threshold), 7)
        text = super().format(record)
        return "\n".join(f"<{level}>{line}" for line in text.split("\n"))


class Service:
    """One service a program serves: NAME (1-15 lower-case letters, digits and hyphens), VERSION, SUMMARY.
    CONFIG declares the [Config] keys it reads: {"File": str} (required, of that type) or {"MaxNotes": 100}
    (optional, with that default and its type); rpcd hands the values over at start and run() checks them,
    refusing the handler with the key named. After start they are in `config`. EVENTS declares the events
    it emits: {"added": dict} (a type hint or a schema)."""

    def __init__(self, name, version, summary="", *, config=None, events=None):
        self.name = name
        self.version = version
        self.summary = summary
        self._config_declared = {}
        for key, spec in (config or {}).items():
            if isinstance(spec, type):
                self._config_declared[key] = (spec, True, None)
            else:
                self._config_declared[key] = (type(spec), False, spec)
        self._events = {event: schema_of(hint) for event, hint in (events or {}).items()}
        self._methods = {}
        self._on_start = []
        self.config = {}
        self.state_directory = None
        self.handler = None
        self.log = logging.getLogger(f"rpcd.handler.{name}")
        self._out = None
        self._write_lock = threading.Lock()
        self._loop = None
        self._loop_thread = None
        self._lines = []

    # Declaring --------------------------------------------------------------------------------------

    def method(self, function=None, *, name=None, summary=None, read_only=False, concurrent=True,
               blocking=False, errors=()):
        """Declares FUNCTION as a method (its name by default; summary: the docstring's first line).
        READ_ONLY: it changes nothing (AllowRead= peers may call it). CONCURRENT: rpcd may send its calls
        while others are in flight (False: one call at a time, alone). BLOCKING: a plain function that may
        wait; it runs in a thread. ERRORS: the errors it answers with, [(code, message)] or RPCErrors.
        Usable as @service.method and @service.method(...)."""
        def declare(function):
            method_name = name or function.__name__
            text = summary if summary is not None else (inspect.getdoc(function) or "").split("\n")[0]
            self._methods[method_name] = _Method(function, method_name, text, read_only, concurrent, blocking, errors)
            return function
        return declare(function) if function is not None else declare

    def on_start(self, function):
        """Runs FUNCTION() (plain or async) once the configuration is checked, before the declaration is
        sent: open files there. Raising refuses the handler, the exception's text as the reason."""
        self._on_start.append(function)
        return function

    def declaration(self):
        service = {"name": self.name, "version": self.version,
                   "methods": [method.declaration for method in self._methods.values()]}
        if self.summary:
            service["summary"] = self.summary
        if self._config_declared:
            service["config"] = [{"name": key, "schema": {"type": _SIMPLE[kind]}, "required": required}
                                 for key, (kind, required, _) in self._config_declared.items()]
        if self._events:
            service["events"] = [{"name": event, "schema": schema} if schema else {"name": event}
                                 for event, schema in self._events.items()]
        return {"protocol": PROTOCOL, "services": [service]}

    # Talking -------------------------------------------------------------------------------------------

    def emit(self, event, data=None):
        """Emits EVENT (its short name, "added") with payload DATA. Never waits for subscribers. Any thread."""
        if event not in self._events:
            raise ValueError(f"event {event!r} is not declared (Service(events=...))")
        self._write({"jsonrpc": "2.0", "method": "rpc.event",
                     "params": {"event": f"{self.name}.{event}", "data": data}})

    def _write(self, message):
        """Writes MESSAGE as a line. On the event loop's thread lines are gathered and written once per turn of
        the loop (the answers to one read of calls go out in one write); from other threads at once."""
        line = _dumps(message).encode() + b"\n"
        if self._loop is not None and threading.get_ident() == self._loop_thread:
            self._lines.append(line)
            if len(self._lines) == 1:
                self._loop.call_soon(self._flush)
        else:
            self._write_now(line)

    def _flush(self):
        if self._lines:
            data = b"".join(self._lines)
            self._lines.clear()
            self._write_now(data)

    def _write_now(self, data):
        with self._write_lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self._out, view):]

    def _answer(self, id, result=None, error=None):
        if error is not None:
            message = {"jsonrpc": "2.0", "id": id, "error": error.to_json()}
        else:
            message = {"jsonrpc": "2.0", "id": id, "result": result}
        try:
            self._write(message)
        except ValueError as failure:  # NaN, an infinity: no JSON number
            self.log.error("method result is not JSON: %s", failure)
            self._write({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error"}})
        except TypeError as failure:
            self.log.error("method result is not JSON: %s", failure)
            self._write({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error"}})

    # Running -----------------------------------------------------------------------------------------------

    def run(self, stdin=None, stdout=None):
        """Speaks the protocol on standard input and output until rpcd closes standard input, then returns
        (the program should then exit 0). STDIN and STDOUT (descriptors) are for tests."""
        if stdout is None:
            self._out = os.dup(1)
            os.dup2(2, 1)
            sys.stdout = sys.stderr
        else:
            self._out = stdout
        self._setup_logging()
        asyncio.run(self._serve(sys.stdin.fileno() if stdin is None else stdin))

    def _setup_logging(self):
        root = logging.getLogger()
        if not any(isinstance(h.formatter, JournalFormatter) for h in root.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(JournalFormatter("%(message)s"))
            root.addHandler(handler)
            if root.level == logging.WARNING:
                root.setLevel(logging.INFO)

    async def _serve(self, fd):
        loop = self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        reader = asyncio.StreamReader(limit=1 << 16, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0))
        self._tasks = {}
        buffer = b""
        started = False
        while True:
            chunk = await reader.read(1 << 16)
            if not chunk:
                break
            buffer += chunk
            lines = buffer.split(b"\n")
            buffer = lines.pop()
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    self.log.warning("Ignoring a line that is not JSON: %.200r", line)
                    continue
                if not isinstance(message, dict):
                    self.log.warning("Ignoring a line that is not a message: %.200r", line)
                    continue
                method, id = message.get("method"), message.get("id")
                if method == "rpc.cancel":
                    task = self._tasks.get((message.get("params") or {}).get("id"))
                    if task is not None:
                        task.cancel()
                elif not started:
                    if method == "rpcd.start" and id is not None:
                        started = await self._start(id, message.get("params") or {})
                    else:
                        self.log.warning("Ignoring %s before rpcd.start", method)
                elif id is not None:
                    self._dispatch(id, method, message)
        if buffer.strip():
            self.log.warning("Standard input ended inside a line; ignored")
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._flush()

    async def _start(self, id, params):
        try:
            self.handler = params.get("handler")
            self.state_directory = params.get("stateDirectory")
            self.config = self._check_config(params.get("config") or {})
            for function in self._on_start:
                result = function()
                if inspect.isawaitable(result):
                    await result
        except RPCError as error:
            self._answer(id, error=error)
            return False
        except Exception as error:  # noqa: BLE001 - its text is the refusal's reason
            self._answer(id, error=RPCError(-32603, str(error) or type(error).__name__))
            return False
        self._answer(id, self.declaration())
        return True

    def _check_config(self, given):
        values = {}
        for key, text in given.items():
            if key not in self._config_declared:
                known = ", ".join(self._config_declared) or "none"
                raise RPCError(-32602, f"[Config] {key}= is not a key of {self.name} (known: {known})", {"key": key})
            values[key] = _config_value(key, str(text), self._config_declared[key][0])
        for key, (_, required, default) in self._config_declared.items():
            if key not in values:
                if required:
                    raise RPCError(-32602, f"[Config] {key}= is required", {"key": key})
                values[key] = default
        return values

    def _dispatch(self, id, name, message):
        service, _, short = (name or "").partition(".")
        method = self._methods.get(short) if service == self.name else None
        if method is None:
            self._answer(id, error=RPCError(-32601, "Method not found", {"method": name}))
            return
        try:
            kwargs = method.bind(message.get("params"))
        except RPCError as error:
            self._answer(id, error=error)
            return
        deadline = message.get("deadline")
        call = Call(id, name, message.get("caller") or {},
                    None if deadline is None else time.monotonic() + deadline / 1000)
        if method.is_async or method.blocking:
            task = self._loop.create_task(self._run_task(call, method, kwargs))
            self._tasks[id] = task
            task.add_done_callback(lambda done: self._ended(id, done))
            return
        token = _current.set(call)
        try:
            self._answer(id, method.function(**kwargs))
        except RPCError as error:
            self._answer(id, error=error)
        except Exception:  # noqa: BLE001
            self.log.exception("%s failed", name)
            self._answer(id, error=RPCError(-32603, "Internal error"))
        finally:
            _current.reset(token)

    def _ended(self, id, task):
        self._tasks.pop(id, None)
        if task.cancelled():  # cancelled before it began: its coroutine never ran to answer
            self._answer(id, error=RPCError(-32011, "Call cancelled"))

    async def _run_task(self, call, method, kwargs):
        _current.set(call)
        try:
            if method.blocking:
                result = await asyncio.to_thread(method.function, **kwargs)  # copies the context: current_call()
            else:
                result = await method.function(**kwargs)
            self._answer(call.id, result)
        except asyncio.CancelledError:
            self._answer(call.id, error=RPCError(-32011, "Call cancelled"))
        except RPCError as error:
            self._answer(call.id, error=error)
        except Exception:  # noqa: BLE001
            self.log.exception("%s failed", call.method)
            self._answer(call.id, error=RPCError(-32603, "Internal error"))
