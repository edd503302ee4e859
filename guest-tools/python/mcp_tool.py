"""Write mcp-wasm-host tools in Python: one decorated, type-annotated function
per tool (and per resource, resource template and prompt).

    from typing import Annotated
    from mcp_tool import Context, Tool, tool

    @tool(read_only=True)
    def greet(name: Annotated[str, "Who to greet"], excited: bool = False) -> str:
        "Greets someone by name."
        return f"Hello, {name}{'!' if excited else '.'}"

Build it with componentize-py 0.25.1 against the `mcp:tool` contract
(`mcp-wasm-host wit wit` writes it), from the folder holding `app.py` and
this file:

    componentize-py -d wit -w server-component componentize app -o tool.wasm

`app.py` must import the classes componentize-py exports: `Tool` (as
`mcp:tool/tool`) and, for a world with `server-component` (which exports
resources, prompts and completion too), `Resources`, `Prompts` and
`Completion`. They find every function decorated with `@tool`,
`@resource`, `@resource_template` and `@prompt`; with none of a kind, the
component offers none (an empty list).

What comes from where:

- the tool's name is the function's name, its description the docstring;
- the input JSON Schema comes from the parameters' annotations: `str`,
  `int`, `float`, `bool`, `list[T]`, `dict[str, T]`, `Optional[T]` /
  `T | None`, `Literal[...]`, `Enum`, dataclasses and TypedDicts, and
  `Annotated[T, "description"]` or `Annotated[T, {"minimum": 0}]` for a
  description or extra JSON Schema keywords. A parameter with a default is
  not required. The host validates every call against the schema before
  the tool runs.
- a parameter annotated `Context` receives the call's context instead:
  cancellation, progress, logging, questions to the user, approval.
- the return annotation, if it is a dataclass or a TypedDict, becomes the
  output schema, and the returned value the structured content (with its
  JSON as text, as MCP recommends). A `str` is a text result; a
  `ToolResult` says exactly what to send.
- raising `ToolError` fails the call with a message the model sees;
  `Cancelled` (raised by `Context.check_cancelled` and by a question the
  host withdrew) stops it as cancelled, and the host then runs `cleanup`.

Resources and prompts:

    @resource("notes://readme", mime_type="text/markdown")
    def readme() -> str:
        "The notes' README."
        return "# Notes"

    @resource_template("notes://{day}", mime_type="text/plain",
                       complete={"day": ["monday", "tuesday"]})
    def day_notes(day: str) -> str:
        if day not in NOTES:
            raise NotFound()
        return NOTES[day]

    @prompt(description="Asks for a summary of a day's notes")
    def summarize(day: Annotated[str, "Which day"], style: Literal["short", "long"] = "short") -> list:
        return [user(f"Summarize the notes of {day}, {style}.")]

- a resource function returns `str` (text), `bytes` (a blob) or anything
  JSON can hold (its JSON text); a template's takes its variables as
  keyword arguments (a `{name}` matches one or more characters other than
  `/`, as the host matches it) and raises `NotFound` for a URI that names
  nothing;
- a prompt's parameters are its arguments (strings; required unless they
  have a default; `Annotated[str, "description"]`); it returns a list of
  `user(...)` / `assistant(...)` messages (a string or a content block:
  `image()`, `audio()`, `embedded()`), or a string: one user message;
- `complete={"argument": [...] or fn}` suggests values while the user types
  (a list: those starting with the typed text; a function of the typed text
  and, optionally, a dict of the arguments already given); a `Literal[...]`
  argument or variable is suggested from its values;
- a parameter annotated `Context` gets the read's or request's context;
  `ToolError` fails it with a message, `InvalidArguments` refuses a prompt's
  arguments, `Cancelled` stops it.

A function decorated with `@on_cleanup` runs, in a fresh instance, for every
call that did not return normally, with the call id and the stop reason.

Every call runs in a fresh instance: module-level state does not survive
from one call to the next.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import sys
import types as pytypes
import typing
import weakref
from typing import Any, Callable, Literal, Optional, Union

try:
    from componentize_py_types import Err
    from wit_world import exports
    from wit_world.imports import client

    try:
        from wit_world.imports import types as wit
    except ImportError:
        # A world that also imports `wasi:filesystem/types` names ours this way.
        from wit_world.imports import mcp_tool_types as wit  # type: ignore[no-redef]
    _ToolBase: type = exports.Tool
except ImportError:
    # Outside a component (the schema code's unit tests): no bindings.
    Err = None  # type: ignore[assignment,misc]
    client = wit = None  # type: ignore[assignment]
    _ToolBase = object

try:
    # A world with `server-component` exports these too; one with only
    # `tool-component` does not, and its components offer tools alone.
    from wit_world.exports import completion as wit_completion
    from wit_world.exports import prompts as wit_prompts
    from wit_world.exports import resources as wit_resources

    _ResourcesBase: type = exports.Resources
    _PromptsBase: type = exports.Prompts
    _CompletionBase: type = exports.Completion
except ImportError:
    wit_completion = wit_prompts = wit_resources = None  # type: ignore[assignment]
    _ResourcesBase = _PromptsBase = _CompletionBase = object

try:
    # `server-component` since mcp:tool 0.2.3.
    from wit_world.exports import tasks as wit_tasks

    _TasksBase: type = exports.Tasks
except ImportError:
    wit_tasks = None  # type: ignore[assignment]
    _TasksBase = object

# Done once, at build time, for every call. The host hands each call its
# `cancelled` resource, and componentize-py ties every resource it wraps to a
# `weakref.finalize`, whose first use in a process imports `atexit` and
# registers with it. componentize-py snapshots the interpreter after this
# module is imported, so using one here spares every fresh instance that
# import on its call: about a third of a Python call's time in the guest
# (BENCHMARKS.md). The object dies at once, and its finalizer with it.
weakref.finalize(type("_Warm", (), {})(), lambda: None)

__all__ = [
    "Answer",
    "Cancelled",
    "Completion",
    "Context",
    "Form",
    "InvalidArguments",
    "Message",
    "NotApproved",
    "NotFound",
    "Prompts",
    "RequestFailed",
    "Resources",
    "Roots",
    "Sample",
    "Tasks",
    "Tool",
    "ToolError",
    "ToolResult",
    "Url",
    "assistant",
    "audio",
    "embedded",
    "image",
    "input_schema",
    "match_template",
    "on_cleanup",
    "output_schema",
    "prompt",
    "resource",
    "resource_template",
    "schema_of",
    "text",
    "tool",
    "user",
]


# ---- Errors ----------------------------------------------------------------


class ToolError(Exception):
    """The tool failed; the message is shown to the model (an `isError` result)."""


class InvalidArguments(ToolError):
    """The arguments passed the schema but make no sense to the tool."""


class Cancelled(Exception):
    """The call was cancelled: stop now. Raised by `Context.check_cancelled`,
    `Context.wait_for_cancel` and by questions the host withdrew. Let it
    propagate: the call ends as cancelled and the host runs `cleanup`."""


class RequestFailed(ToolError):
    """A question to the client got no answer. `kind` says why:
    `unsupported` (the client cannot be asked this), `timed-out` or `failed`."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class NotApproved(ToolError):
    """The user did not approve the operation (declined, no answer in time,
    or the client cannot ask). The tool must not go ahead."""


class NotFound(Exception):
    """There is no resource at that URI (raise it from a template's function
    for a URI that matches the template but names nothing); the client gets
    MCP's "resource not found"."""


# ---- Results -----------------------------------------------------------------


@dataclasses.dataclass
class ToolResult:
    """Exactly what a call sends back: content blocks (strings are text),
    optional structured content (a JSON object) and the `isError` flag."""

    content: list = dataclasses.field(default_factory=list)
    structured: Optional[dict] = None
    is_error: bool = False


def text(value: str) -> Any:
    """A text content block."""
    return wit.Content_Text(value)


def image(data: bytes, mime_type: str = "image/png") -> Any:
    """An image content block."""
    return wit.Content_Image(wit.Media(data=bytes(data), mime_type=mime_type))


def audio(data: bytes, mime_type: str = "audio/wav") -> Any:
    """An audio content block."""
    return wit.Content_Audio(wit.Media(data=bytes(data), mime_type=mime_type))


def embedded(uri: str, body: Union[str, bytes], mime_type: Optional[str] = None) -> Any:
    """A resource embedded with its contents (text or bytes)."""
    if isinstance(body, str):
        resource_body = wit.ResourceBody_Text(body)
    else:
        resource_body = wit.ResourceBody_Blob(bytes(body))
    return wit.Content_Embedded(wit.EmbeddedResource(uri=uri, mime_type=mime_type, body=resource_body))


# ---- Schemas from annotations ------------------------------------------------

_PRIMITIVES: dict = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_type(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _is_typeddict(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _jsonable(value: Any) -> Any:
    """`value` as plain JSON data (dataclasses, enums and tuples converted)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def schema_of(annotation: Any) -> dict:
    """The JSON Schema of a Python type annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = dict(schema_of(args[0]))
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, dict):
                schema.update(extra)
        return schema
    if origin is Union or origin is pytypes.UnionType:
        options = [a for a in args if a is not type(None)]
        nullable = len(options) < len(args)
        if len(options) == 1:
            inner = schema_of(options[0])
            if not nullable:
                return inner
            if isinstance(inner.get("type"), str) and set(inner) <= {"type", "description"}:
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        any_of = [schema_of(a) for a in options] + ([{"type": "null"}] if nullable else [])
        return {"anyOf": any_of}
    if origin is Literal:
        values = list(args)
        kinds = {_json_type(v) for v in values}
        schema: dict = {"enum": values}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), "enum": values}
        return schema
    if origin in (list, typing.List, tuple, set, frozenset) or annotation in (list, tuple, set):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {
                "type": "array",
                "prefixItems": [schema_of(a) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        item = args[0] if args else Any
        schema = {"type": "array"}
        if schema_of(item):
            schema["items"] = schema_of(item)
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is dict or annotation is dict:
        schema = {"type": "object"}
        if len(args) == 2 and schema_of(args[1]):
            schema["additionalProperties"] = schema_of(args[1])
        return schema
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        values = [member.value for member in annotation]
        kinds = {_json_type(v) for v in values}
        schema = {"enum": values}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), "enum": values}
        return schema
    if dataclasses.is_dataclass(annotation) or _is_typeddict(annotation):
        return _object_schema(annotation)
    raise TypeError(f"no JSON Schema for the annotation {annotation!r}")


def _object_schema(cls: type) -> dict:
    """The schema of a dataclass or TypedDict: its fields, the ones without a
    default (or, for a TypedDict, its required keys) required."""
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict = {}
    required: list = []
    if dataclasses.is_dataclass(cls):
        for field in dataclasses.fields(cls):
            prop = schema_of(hints.get(field.name, Any))
            if field.default is not dataclasses.MISSING:
                _add_default(prop, field.default)
            elif field.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                required.append(field.name)
            properties[field.name] = prop
    else:
        for key, annotation in hints.items():
            properties[key] = schema_of(_strip_required(annotation))
            if key in cls.__required_keys__:  # type: ignore[attr-defined]
                required.append(key)
    schema: dict = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    doc = cls.__dict__.get("__doc__")  # its own, not dict's
    if doc and not doc.startswith(cls.__name__ + "("):  # nor the dataclass's generated one
        schema["description"] = inspect.cleandoc(doc)
    return schema


def _strip_required(annotation: Any) -> Any:
    """`Required[T]` / `NotRequired[T]` (TypedDict markers) as `T`."""
    if typing.get_origin(annotation) in (typing.Required, typing.NotRequired):
        return typing.get_args(annotation)[0]
    return annotation


def _add_default(schema: dict, default: Any) -> None:
    try:
        json.dumps(_jsonable(default))
    except (TypeError, ValueError):
        return
    schema["default"] = _jsonable(default)


def _parameters(fn: Callable) -> list:
    """`fn`'s parameters with their resolved annotations, `Context` ones marked."""
    hints = typing.get_type_hints(fn, include_extras=True)
    params = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args and **kwargs cannot be described by a schema")
        annotation = hints.get(param.name, inspect.Parameter.empty)
        params.append((param, annotation, annotation is Context))
    return params


def input_schema(fn: Callable) -> dict:
    """The input schema of a tool function: one property per parameter."""
    properties: dict = {}
    required: list = []
    for param, annotation, is_context in _parameters(fn):
        if is_context:
            continue
        prop = schema_of(annotation)
        if param.default is param.empty:
            required.append(param.name)
        else:
            _add_default(prop, param.default)
        properties[param.name] = prop
    schema: dict = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def output_schema(fn: Callable) -> Optional[dict]:
    """The output schema of a tool function, if it returns a dataclass or TypedDict."""
    annotation = typing.get_type_hints(fn, include_extras=True).get("return")
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if dataclasses.is_dataclass(annotation) or _is_typeddict(annotation):
        return schema_of(annotation)
    return None


def _convert(value: Any, annotation: Any) -> Any:
    """A JSON argument as the Python value its annotation asks for."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if value is None:
        return None
    if origin is typing.Annotated:
        return _convert(value, args[0])
    if origin is Union or origin is pytypes.UnionType:
        options = [a for a in args if a is not type(None)]
        return _convert(value, options[0]) if len(options) == 1 else value
    if origin in (list, tuple, set, frozenset) and isinstance(value, list):
        if origin is tuple and args and args[-1] is not Ellipsis:
            return tuple(_convert(v, a) for v, a in zip(value, args))
        item = args[0] if args else Any
        return origin(_convert(v, item) for v in value)
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _convert(v, args[1]) for k, v in value.items()}
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return annotation(value)
    if dataclasses.is_dataclass(annotation) and isinstance(value, dict):
        hints = typing.get_type_hints(annotation, include_extras=True)
        return annotation(**{k: _convert(v, hints.get(k, Any)) for k, v in value.items()})
    return value


# ---- The call's context --------------------------------------------------------


@dataclasses.dataclass
class Answer:
    """The user's answer to a question: `action` is `accept`, `decline` or
    `cancel`; `content` is the submitted form for `accept` (else None)."""

    action: str
    content: Optional[dict] = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclasses.dataclass
class Form:
    """A question for `Context.ask`: a form, as `Context.elicit`."""

    message: str
    schema: Any


@dataclasses.dataclass
class Url:
    """A question for `Context.ask`: a URL, as `Context.elicit_url`."""

    message: str
    url: str


@dataclasses.dataclass
class Sample:
    """A question for `Context.ask`: a request for the client's model, as
    `Context.sample`."""

    request: dict


@dataclasses.dataclass
class Roots:
    """A question for `Context.ask`: the client's roots, as `Context.list_roots`."""


_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class Context:
    """One call's link to the host: who it is, whether it should stop, and
    how to talk to the client and the user."""

    def __init__(self, call_id: str, cancelled: Any):
        #: Unique for this host process; name external state by it so
        #: `cleanup` can find it.
        self.call_id = call_id
        self._cancelled = cancelled

    @property
    def cancelled(self) -> bool:
        """True once the call should stop (client cancel, deadline, shutdown)."""
        return self._cancelled.is_cancelled()

    @property
    def stop_reason(self) -> Optional[str]:
        """Why the call should stop (`client-cancelled`, `deadline-exceeded`,
        `shutdown`, `no-answer`), or None while it should carry on."""
        reason = self._cancelled.reason()
        return None if reason is None else _kebab(reason.name)

    def check_cancelled(self) -> None:
        """Raises `Cancelled` if the call should stop. Call it between steps."""
        if self.cancelled:
            raise Cancelled()

    def cancel_pollable(self) -> Any:
        """A `wasi:io/poll` pollable that becomes ready on cancel, to poll
        beside the tool's own pollables."""
        return self._cancelled.subscribe()

    def wait_for_cancel(self) -> None:
        """Blocks (parked in the host, using no CPU) until the call is
        cancelled, then raises `Cancelled`."""
        self._cancelled.subscribe().block()
        raise Cancelled()

    def progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        """Reports progress (sent if the client asked for it); must increase."""
        client.progress(float(progress), None if total is None else float(total), message)

    def log(self, data: Any, level: str = "info", logger: Optional[str] = None) -> None:
        """Logs `data` (any JSON value) to the host's log and to the client."""
        if level not in _LEVELS:
            raise ValueError(f"log level must be one of {', '.join(_LEVELS)}")
        client.log(client.LogLevel[level.upper()], logger, json.dumps(_jsonable(data)))

    def elicit(self, message: str, schema: Any) -> Answer:
        """Asks the user to fill in a form. `schema` is a JSON Schema object
        (flat primitive properties) or a dataclass/TypedDict describing one.
        Raises `Cancelled` if the call was cancelled meanwhile (the question
        is withdrawn), `RequestFailed` if no answer came."""
        if not isinstance(schema, dict):
            schema = schema_of(schema)
        return _answer(_ask(lambda: client.elicit(message, json.dumps(schema))))

    def elicit_url(self, message: str, url: str) -> Answer:
        """Sends the user to `url` (e.g. to sign in); see `elicit`."""
        return _answer(_ask(lambda: client.elicit_url(message, url)))

    def sample(self, request: dict) -> dict:
        """Asks the client's model (`sampling/createMessage` params, e.g.
        `messages` and `maxTokens`); returns its answer as a dict."""
        return json.loads(_ask(lambda: client.sample(json.dumps(request))))

    def list_roots(self) -> list:
        """The client's roots (`roots/list`): directories or files the user
        lets servers work in, each `{"uri": ..., "name": ...}` (`name` may be
        None). Raises `RequestFailed` (`unsupported` when the client declared
        no roots) or `Cancelled`."""
        return [_root(root) for root in _ask(client.list_roots)]

    def ask(self, questions: dict) -> dict:
        """Puts several questions to the client at once and waits for all of
        them. `questions` maps a key you name (1 to 64 of `A-Z a-z 0-9 _ - .`)
        to a `Form`, `Url`, `Sample` or `Roots`; on protocol 2026-07-28 they
        reach the client in one `input_required` result under those keys.

        Returns a dict of the same keys: an `Answer` for a form or a URL, a
        dict for a sample, a list of roots for `Roots`, or a `RequestFailed`
        (not raised) for a question that got no answer, so one the client
        cannot take does not lose the others. Raises `Cancelled` if the call
        was cancelled meanwhile (every question is withdrawn)."""
        asked = [(key, _question(question)) for key, question in questions.items()]
        answers = _ask(lambda: client.ask(asked))
        got: dict = {}
        for (key, _), answer in zip(asked, answers):
            if isinstance(answer, Err):
                failure = _failure(answer.value)
                if isinstance(failure, Cancelled):
                    raise failure
                got[key] = failure
                continue
            value = answer.value
            if isinstance(value, client.Answer_Elicit):
                got[key] = _answer(value.value)
            elif isinstance(value, client.Answer_Sample):
                got[key] = json.loads(value.value)
            else:
                got[key] = [_root(root) for root in value.value]
        return got

    def request_approval(self, operation: str) -> None:
        """Asks the user to approve `operation` (one sentence they will read).
        Returns once approved; raises `NotApproved` with the reason otherwise,
        or `Cancelled` if the call was stopped while waiting."""
        try:
            client.request_approval(operation)
            approved: Optional[str] = None
        except Err as err:
            approved = str(err.value)
        if self.cancelled:
            raise Cancelled()
        if approved is not None:
            raise NotApproved(approved)


def _kebab(name: str) -> str:
    return name.lower().replace("_", "-")


def _ask(request: Callable) -> Any:
    """Runs a client request, turning its error into `Cancelled` or `RequestFailed`."""
    try:
        return request()
    except Err as err:
        raise _failure(err.value) from None


def _failure(error: Any) -> Exception:
    """A contract `request-error` as the exception it means."""
    if isinstance(error, client.RequestError_Cancelled):
        return Cancelled()
    if isinstance(error, client.RequestError_Unsupported):
        return RequestFailed("unsupported", "the client does not support this request")
    if isinstance(error, client.RequestError_TimedOut):
        return RequestFailed("timed-out", "the client did not answer in time")
    return RequestFailed("failed", str(getattr(error, "value", error)))


def _question(question: Any) -> Any:
    """A question of `Context.ask` as the contract's `question`."""
    if isinstance(question, Form):
        schema = question.schema if isinstance(question.schema, dict) else schema_of(question.schema)
        return client.Question_Elicit((question.message, json.dumps(schema)))
    if isinstance(question, Url):
        return client.Question_ElicitUrl((question.message, question.url))
    if isinstance(question, Sample):
        return client.Question_Sample(json.dumps(question.request))
    if isinstance(question, Roots):
        return client.Question_ListRoots()
    raise TypeError(f"not a question for ask: {question!r} (use Form, Url, Sample or Roots)")


def _root(root: Any) -> dict:
    return {"uri": root.uri, "name": root.name}


def _answer(response: Any) -> Answer:
    if isinstance(response, client.ElicitResponse_Accept):
        return Answer("accept", json.loads(response.value))
    if isinstance(response, client.ElicitResponse_Decline):
        return Answer("decline")
    return Answer("cancel")


# ---- Registration ----------------------------------------------------------------


@dataclasses.dataclass
class _Registered:
    fn: Callable
    name: str
    title: Optional[str]
    description: Optional[str]
    input_schema: str
    output_schema: Optional[str]
    hints: dict
    needs_approval: Optional[bool]
    tasks: str
    params: list


_TOOLS: dict = {}
_CLEANUPS: list = []


def tool(
    fn: Optional[Callable] = None,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    read_only: Optional[bool] = None,
    destructive: Optional[bool] = None,
    idempotent: Optional[bool] = None,
    open_world: Optional[bool] = None,
    needs_approval: Optional[bool] = None,
    tasks: Literal["forbidden", "optional", "required"] = "optional",
) -> Any:
    """Registers a function as a tool. Usable bare (`@tool`) or with options:

    - `name` (default: the function's name), `title`, `description`
      (default: the docstring);
    - behaviour hints for clients: `read_only`, `destructive`, `idempotent`,
      `open_world` (None: not stated);
    - `needs_approval`: True to have the host ask the user before every call
      (None: the host decides; tools marked destructive ask);
    - `tasks`: whether a call may run as a task, for a client that speaks
      MCP's tasks extension: "optional" (one that takes more than a moment,
      or asks the user something, becomes one), "forbidden" (it always
      answers in its own response) or "required" (only as a task; other
      clients are refused).
    """
    if tasks not in ("forbidden", "optional", "required"):
        raise ValueError(f"tasks is 'forbidden', 'optional' or 'required', not {tasks!r}")

    def register(fn: Callable) -> Callable:
        tool_name = name or fn.__name__
        if tool_name in _TOOLS:
            raise ValueError(f"two tools are named {tool_name!r}")
        out = output_schema(fn)
        _TOOLS[tool_name] = _Registered(
            fn=fn,
            name=tool_name,
            title=title,
            description=description if description is not None else inspect.getdoc(fn),
            input_schema=json.dumps(input_schema(fn)),
            output_schema=None if out is None else json.dumps(out),
            hints={
                "read_only": read_only,
                "destructive": destructive,
                "idempotent": idempotent,
                "open_world": open_world,
            },
            needs_approval=needs_approval,
            tasks=tasks,
            params=_parameters(fn),
        )
        return fn

    return register(fn) if fn is not None else register


def on_cleanup(fn: Callable) -> Callable:
    """Registers `fn(call_id, reason)` to run for every call that did not
    return normally (`reason`: `client-cancelled`, `deadline-exceeded`,
    `shutdown`, `no-answer` or `limit-exceeded`). It runs in a fresh
    instance with a small budget: release what the call left outside the
    sandbox (named by its call id), and be quick."""
    _CLEANUPS.append(fn)
    return fn


def _result(value: Any, declared_output: bool) -> Any:
    """A tool function's return value as a WIT `call-result`."""
    if isinstance(value, ToolResult):
        content = [text(c) if isinstance(c, str) else c for c in value.content]
        structured = None if value.structured is None else json.dumps(_jsonable(value.structured))
        return wit.CallResult(content=content, structured_content=structured, is_error=value.is_error)
    if value is None:
        return wit.CallResult(content=[], structured_content=None, is_error=False)
    if isinstance(value, str):
        return wit.CallResult(content=[text(value)], structured_content=None, is_error=False)
    data = _jsonable(value)
    body = json.dumps(data, separators=(",", ":"))
    if isinstance(data, dict) or declared_output:
        return wit.CallResult(content=[text(body)], structured_content=body, is_error=False)
    return wit.CallResult(content=[text(body)], structured_content=None, is_error=False)


class Tool(_ToolBase):  # type: ignore[misc,valid-type]
    """The `mcp:tool/tool` export: lists the registered tools, runs them and
    runs the cleanup hooks. `app.py` must import it (`from mcp_tool import Tool`)."""

    def list_tools(self) -> list:
        return [
            wit.ToolInfo(
                name=t.name,
                title=t.title,
                description=t.description,
                input_schema=t.input_schema,
                output_schema=t.output_schema,
                annotations=wit.Annotations(**t.hints),
                needs_approval=t.needs_approval,
            )
            for t in _TOOLS.values()
        ]

    def call(self, call_id: str, name: str, arguments: str, cancelled: Any) -> Any:
        registered = _TOOLS.get(name)
        if registered is None:
            raise Err(wit.CallError_UnknownTool(name))
        ctx = Context(call_id, cancelled)
        try:
            args = json.loads(arguments) if arguments else {}
            kwargs = {}
            for param, annotation, is_context in registered.params:
                if is_context:
                    kwargs[param.name] = ctx
                elif param.name in args:
                    kwargs[param.name] = _convert(args[param.name], annotation)
            value = registered.fn(**kwargs)
            return _result(value, registered.output_schema is not None)
        except Cancelled:
            raise Err(wit.CallError_Cancelled()) from None
        except InvalidArguments as error:
            raise Err(wit.CallError_InvalidArguments(str(error))) from None
        except ToolError as error:
            raise Err(wit.CallError_Failed(str(error))) from None
        except Err:
            raise
        except Exception as error:  # a bug in the tool: say what, not a trap
            raise Err(wit.CallError_Failed(f"{type(error).__name__}: {error}")) from None

    def cleanup(self, call_id: str, reason: Any) -> None:
        for fn in _CLEANUPS:
            try:
                fn(call_id, _kebab(reason.name))
            except Exception as error:  # one failing hook must not skip the others
                print(f"cleanup {fn.__name__} failed: {type(error).__name__}: {error}", file=sys.stderr)



# ---- Resources, resource templates and prompts ---------------------------------
#
# The `server-component` world's other exports. Each is a decorated function
# registered here at import time (which componentize-py runs at build time),
# like the tools; the classes below list and run them.


class Message:
    """One message of a prompt: `role` is `user` or `assistant`; `content`
    is a string (text) or a content block (`image()`, `audio()`,
    `embedded()`, `text()`). Made by `user()` and `assistant()`."""

    def __init__(self, role: str, content: Any):
        if role not in ("user", "assistant"):
            raise ValueError("a message's role is `user` or `assistant`")
        self.role = role
        self.content = content

    def __repr__(self) -> str:
        return f"Message({self.role!r}, {self.content!r})"


def user(content: Any) -> Message:
    """A message from the user: a string (text) or a content block, e.g.
    `user(image(png))` or `user(embedded(uri, body, mime_type))`."""
    return Message("user", content)


def assistant(content: Any) -> Message:
    """A message from the assistant: a string (text) or a content block."""
    return Message("assistant", content)


# The most variables a template may hold, as the host counts them.
_MAX_TEMPLATE_VARIABLES = 16


def _parse_template(template: str) -> list:
    """`template` as ("literal", text) and ("variable", name) parts; refuses
    what the host refuses (only `{name}` expressions, a text between two
    variables, at least one variable), so the build fails, not the load."""
    parts: list = []
    rest = template
    while rest:
        if rest.startswith("{"):
            end = rest.find("}")
            if end < 0:
                raise ValueError(f"URI template {template!r} has an unclosed `{{`")
            name = rest[1:end]
            if not name or not all(c.isascii() and (c.isalnum() or c == "_") for c in name):
                raise ValueError(
                    f"URI template {template!r} has a variable other than `{{name}}` (letters, digits, _)"
                )
            if parts and parts[-1][0] == "variable":
                raise ValueError(f"URI template {template!r} has two variables with no text between them")
            parts.append(("variable", name))
            rest = rest[end + 1 :]
        else:
            end = rest.find("{")
            end = len(rest) if end < 0 else end
            if "}" in rest[:end]:
                raise ValueError(f"URI template {template!r} has a `}}` with no `{{`")
            parts.append(("literal", rest[:end]))
            rest = rest[end:]
    variables = [name for kind, name in parts if kind == "variable"]
    if not variables:
        raise ValueError(f"URI template {template!r} has no `{{variable}}` (make it a @resource)")
    if len(variables) > _MAX_TEMPLATE_VARIABLES:
        raise ValueError(f"URI template {template!r} has more than {_MAX_TEMPLATE_VARIABLES} variables")
    return parts


def _match_parts(parts: list, uri: str) -> Optional[dict]:
    """The host's rule (host/src/component/uri_template.rs): a `{name}`
    matches one or more characters other than `/`, up to the first place
    the text after it matches; the whole URI must be used up."""
    rest = uri
    values: dict = {}
    for index, (kind, value) in enumerate(parts):
        if kind == "literal":
            if not rest.startswith(value):
                return None
            rest = rest[len(value) :]
            continue
        segment_end = rest.find("/")
        segment_end = len(rest) if segment_end < 0 else segment_end
        following = parts[index + 1][1] if index + 1 < len(parts) else None
        if following is None:
            end = segment_end
        else:
            # The value stops at or before the next `/`: the text after it
            # starts there at the latest (it may start with the `/`).
            end = next((at for at in range(1, segment_end + 1) if rest.startswith(following, at)), None)
            if end is None:
                return None
        if end == 0:
            return None
        values[value] = rest[:end]
        rest = rest[end:]
    return values if not rest else None


def match_template(uri_template: str, uri: str) -> Optional[dict]:
    """The variables of `uri` by name if it matches `uri_template`, as the
    host matches them; None if it does not."""
    return _match_parts(_parse_template(uri_template), uri)


def _completer(spec: Any) -> Callable:
    """A completion spec as `fn(value, context) -> list[str]`: a list of
    values (those starting with what the user typed), or a function of the
    typed value and, if it takes two parameters, the arguments already
    filled in (a dict)."""
    if callable(spec):
        positional = [
            p
            for p in inspect.signature(spec).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
        takes_context = len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)
        if takes_context:
            return lambda value, context: list(spec(value, context))
        return lambda value, context: list(spec(value))
    choices = [str(choice) for choice in spec]
    return lambda value, context: [choice for choice in choices if choice.startswith(value)]


def _string_parameters(fn: Callable, what: str) -> list:
    """`fn`'s string parameters (prompt arguments, template variables), each
    as (parameter, schema, is_context); the schema says the description,
    title and allowed values (`Literal[...]`)."""
    found = []
    for param, annotation, is_context in _parameters(fn):
        if is_context:
            found.append((param, {}, True))
            continue
        schema = schema_of(annotation)
        strings = schema.get("type", "string") in ("string", ["string", "null"])
        if not strings or not all(isinstance(v, str) for v in schema.get("enum", [])):
            raise TypeError(f"{fn.__name__}: {what} `{param.name}` is a string; annotate it `str`")
        found.append((param, schema, False))
    return found


def _invoke(fn: Callable, params: list, ctx: Context, values: dict) -> Any:
    """Calls `fn` with `values` by parameter name and the context where asked."""
    kwargs = {}
    for param, _, is_context in params:
        if is_context:
            kwargs[param.name] = ctx
        elif param.name in values:
            kwargs[param.name] = values[param.name]
    return fn(**kwargs)


@dataclasses.dataclass
class _Resource:
    fn: Callable
    uri: str
    name: str
    title: Optional[str]
    description: Optional[str]
    mime_type: Optional[str]
    params: list


@dataclasses.dataclass
class _Template:
    fn: Callable
    uri_template: str
    parts: list
    name: str
    title: Optional[str]
    description: Optional[str]
    mime_type: Optional[str]
    params: list
    completers: dict


@dataclasses.dataclass
class _Prompt:
    fn: Callable
    name: str
    title: Optional[str]
    description: Optional[str]
    arguments: list  # (name, title, description, required)
    choices: dict  # argument -> the values Literal[...] allows
    params: list
    completers: dict


_RESOURCES: dict = {}
_TEMPLATES: dict = {}
_PROMPTS: dict = {}


def resource(
    uri: str,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    mime_type: Optional[str] = None,
) -> Callable:
    """Registers a function as the resource at `uri` (fixed, unique):

        @resource("notes://readme", mime_type="text/markdown")
        def readme() -> str:
            "The project's README."
            return "# Notes"

    It returns the contents: a `str` (text), `bytes` (a blob, sent
    base64-encoded), or anything else JSON can hold (sent as its JSON
    text). A parameter annotated `Context` gets the read's context. `name`
    defaults to the function's name, `description` to its docstring."""
    if not uri or any(ord(c) < 0x20 or ord(c) == 0x7F for c in uri):
        raise ValueError(f"resource URI {uri!r} is empty or has control characters")

    def register(fn: Callable) -> Callable:
        if uri in _RESOURCES:
            raise ValueError(f"two resources have the URI {uri!r}")
        params = _parameters(fn)
        if any(not is_context for _, _, is_context in params):
            raise TypeError(f"{fn.__name__}: a resource takes no parameters (a `Context` at most)")
        _RESOURCES[uri] = _Resource(
            fn=fn,
            uri=uri,
            name=name or fn.__name__,
            title=title,
            description=description if description is not None else inspect.getdoc(fn),
            mime_type=mime_type,
            params=params,
        )
        return fn

    return register


def resource_template(
    uri_template: str,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    mime_type: Optional[str] = None,
    complete: Optional[dict] = None,
) -> Callable:
    """Registers a function as the resources whose URIs follow
    `uri_template` (`{name}` expressions; each matches one or more
    characters other than `/`). Its parameters are the template's
    variables, by name (and a `Context` if it asks):

        @resource_template("notes://{day}/summary", mime_type="text/plain",
                           complete={"day": ["monday", "tuesday"]})
        def summary(day: str) -> str:
            if day not in NOTES:
                raise NotFound()
            return NOTES[day]

    It returns the contents as a `@resource` does, or raises `NotFound`.
    `complete` maps a variable to its suggestions while the user types
    it: a list (those starting with the typed text), or a function of the
    typed text (and, if it takes two parameters, the variables already
    filled in, a dict) returning a list. A variable annotated
    `Literal[...]` is suggested (and checked) from its values."""
    parts = _parse_template(uri_template)
    variables = [value for kind, value in parts if kind == "variable"]

    def register(fn: Callable) -> Callable:
        if uri_template in _TEMPLATES:
            raise ValueError(f"two resource templates are {uri_template!r}")
        params = _string_parameters(fn, "template variable")
        names = {param.name for param, _, is_context in params if not is_context}
        if names != set(variables):
            raise TypeError(
                f"{fn.__name__}: its parameters must be the variables of {uri_template!r}: "
                f"{', '.join(variables)} (and a `Context` if it needs one)"
            )
        for var in complete or {}:
            if var not in variables:
                raise ValueError(f"{fn.__name__}: `complete` names {var!r}, which is not a variable")
        completers = _literal_completers(params)
        completers.update({var: _completer(spec) for var, spec in (complete or {}).items()})
        _TEMPLATES[uri_template] = _Template(
            fn=fn,
            uri_template=uri_template,
            parts=parts,
            name=name or fn.__name__,
            title=title,
            description=description if description is not None else inspect.getdoc(fn),
            mime_type=mime_type,
            params=params,
            completers=completers,
        )
        return fn

    return register


def _literal_completers(params: list) -> dict:
    """Suggestions for the parameters annotated `Literal[...]`: their values."""
    return {
        param.name: _completer(schema["enum"])
        for param, schema, is_context in params
        if not is_context and "enum" in schema
    }


def _valid_prompt_name(name: str) -> bool:
    return 1 <= len(name) <= 128 and all(c.isascii() and (c.isalnum() or c in "_-.") for c in name)


def prompt(
    fn: Optional[Callable] = None,
    *,
    name: Optional[str] = None,
    title: Optional[str] = None,
    description: Optional[str] = None,
    complete: Optional[dict] = None,
) -> Any:
    """Registers a function as a prompt. Usable bare (`@prompt`) or with
    options. Its parameters are the prompt's arguments (strings): required
    unless they have a default, described by `Annotated[str, "..."]`; a
    parameter annotated `Context` gets the request's context instead.

        @prompt(description="Asks for a code review")
        def review(code: Annotated[str, "The code"],
                   language: Literal["python", "rust"] = "python") -> list:
            return [user(f"Please review this {language} code:\\n{code}")]

    It returns the messages: a list of `user(...)` / `assistant(...)`, or a
    string (one message from the user). Raising `InvalidArguments` says the
    arguments make no sense; `ToolError`, that it failed. `name` defaults to
    the function's name, `description` to its docstring; `complete` is as
    for `@resource_template`, by argument, and a `Literal[...]` argument is
    suggested (and checked) from its values."""

    def register(fn: Callable) -> Callable:
        prompt_name = name or fn.__name__
        if not _valid_prompt_name(prompt_name):
            raise ValueError(f"prompt name {prompt_name!r}: 1-128 characters of A-Z a-z 0-9 _ - .")
        if prompt_name in _PROMPTS:
            raise ValueError(f"two prompts are named {prompt_name!r}")
        params = _string_parameters(fn, "prompt argument")
        arguments = [
            (param.name, schema.get("title"), schema.get("description"), param.default is param.empty)
            for param, schema, is_context in params
            if not is_context
        ]
        for argument in complete or {}:
            if argument not in {a[0] for a in arguments}:
                raise ValueError(f"{fn.__name__}: `complete` names {argument!r}, which is not an argument")
        completers = _literal_completers(params)
        completers.update({arg: _completer(spec) for arg, spec in (complete or {}).items()})
        _PROMPTS[prompt_name] = _Prompt(
            fn=fn,
            name=prompt_name,
            title=title,
            description=description if description is not None else inspect.getdoc(fn),
            arguments=arguments,
            choices={
                param.name: schema["enum"]
                for param, schema, is_context in params
                if not is_context and "enum" in schema
            },
            params=params,
            completers=completers,
        )
        return fn

    return register(fn) if fn is not None else register


def _resource_body(value: Any) -> Any:
    """What a resource function returned, as a WIT `resource-body`."""
    if isinstance(value, str):
        return wit.ResourceBody_Text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return wit.ResourceBody_Blob(bytes(value))
    return wit.ResourceBody_Text(json.dumps(_jsonable(value), separators=(",", ":")))


def _content(value: Any) -> Any:
    """A message's content as a WIT `content` (a string is text)."""
    return text(value) if isinstance(value, str) else value


def _messages(value: Any) -> list:
    """What a prompt function returned, as WIT `prompt-message`s."""
    if isinstance(value, (str, Message)):
        value = [value]
    messages = []
    for message in value:
        if isinstance(message, str):
            message = user(message)
        if not isinstance(message, Message):
            raise TypeError(f"a prompt returns messages (`user(...)`, `assistant(...)`), not {message!r}")
        role = wit_prompts.Role.USER if message.role == "user" else wit_prompts.Role.ASSISTANT
        messages.append(wit_prompts.PromptMessage(role=role, content=_content(message.content)))
    return messages


def _failure(error: Exception) -> str:
    """The message a failed read or prompt sends: a `ToolError`'s own, or
    what a bug raised."""
    if isinstance(error, ToolError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class Resources(_ResourcesBase):  # type: ignore[misc,valid-type]
    """The `mcp:tool/resources` export: lists the registered resources and
    templates and reads them. `app.py` must import it (`from mcp_tool
    import Resources`) when its world exports resources."""

    def list_resources(self) -> list:
        return [
            wit_resources.ResourceInfo(
                uri=r.uri,
                name=r.name,
                title=r.title,
                description=r.description,
                mime_type=r.mime_type,
                size=None,
            )
            for r in _RESOURCES.values()
        ]

    def list_templates(self) -> list:
        return [
            wit_resources.ResourceTemplate(
                uri_template=t.uri_template,
                name=t.name,
                title=t.title,
                description=t.description,
                mime_type=t.mime_type,
            )
            for t in _TEMPLATES.values()
        ]

    def read(self, call_id: str, uri: str, cancelled: Any) -> list:
        ctx = Context(call_id, cancelled)
        try:
            found = _RESOURCES.get(uri)
            if found is not None:
                value, mime_type = _invoke(found.fn, found.params, ctx, {}), found.mime_type
            else:
                for template in _TEMPLATES.values():
                    variables = _match_parts(template.parts, uri)
                    if variables is not None:
                        break
                else:
                    raise NotFound()
                for param, schema, is_context in template.params:
                    if not is_context and "enum" in schema and variables[param.name] not in schema["enum"]:
                        raise NotFound()
                value = _invoke(template.fn, template.params, ctx, variables)
                mime_type = template.mime_type
            return [wit_resources.ResourceContents(uri=uri, mime_type=mime_type, body=_resource_body(value))]
        except NotFound:
            raise Err(wit_resources.ReadError_NotFound()) from None
        except Cancelled:
            raise Err(wit_resources.ReadError_Cancelled()) from None
        except Err:
            raise
        except Exception as error:  # ToolError, or a bug: say what, not a trap
            raise Err(wit_resources.ReadError_Failed(_failure(error))) from None


class Prompts(_PromptsBase):  # type: ignore[misc,valid-type]
    """The `mcp:tool/prompts` export: lists the registered prompts and fills
    them in. `app.py` must import it when its world exports prompts."""

    def list_prompts(self) -> list:
        return [
            wit_prompts.PromptInfo(
                name=p.name,
                title=p.title,
                description=p.description,
                arguments=[
                    wit_prompts.PromptArgument(name=n, title=t, description=d, required=r)
                    for n, t, d, r in p.arguments
                ],
            )
            for p in _PROMPTS.values()
        ]

    def get_prompt(self, call_id: str, name: str, arguments: list, cancelled: Any) -> Any:
        registered = _PROMPTS.get(name)
        if registered is None:
            raise Err(wit_prompts.PromptError_InvalidArguments(f"no prompt named {name!r}"))
        ctx = Context(call_id, cancelled)
        try:
            given = dict(arguments)
            # The host checked these; a component may be served by another.
            for argument, _, _, required in registered.arguments:
                if required and argument not in given:
                    raise InvalidArguments(f"argument `{argument}` is required")
            for argument, allowed in registered.choices.items():
                if argument in given and given[argument] not in allowed:
                    raise InvalidArguments(f"`{argument}` must be one of {', '.join(map(str, allowed))}")
            messages = _messages(_invoke(registered.fn, registered.params, ctx, given))
            return wit_prompts.PromptResult(description=None, messages=messages)
        except InvalidArguments as error:
            raise Err(wit_prompts.PromptError_InvalidArguments(str(error))) from None
        except Cancelled:
            raise Err(wit_prompts.PromptError_Cancelled()) from None
        except Err:
            raise
        except Exception as error:  # ToolError, or a bug: say what, not a trap
            raise Err(wit_prompts.PromptError_Failed(_failure(error))) from None


class Tasks(_TasksBase):  # type: ignore[misc,valid-type]
    """The `mcp:tool/tasks` export: each tool's `tasks=` that is not
    "optional". `app.py` must import it when its world exports tasks."""

    def list_task_support(self) -> list:
        support = {"forbidden": wit_tasks.TaskSupport.FORBIDDEN, "required": wit_tasks.TaskSupport.REQUIRED}
        return [(t.name, support[t.tasks]) for t in _TOOLS.values() if t.tasks != "optional"]


class Completion(_CompletionBase):  # type: ignore[misc,valid-type]
    """The `mcp:tool/completion` export: asks the prompt or template named
    by the request for suggestions (none if it has no `complete` for that
    argument). `app.py` must import it when its world exports completion."""

    def complete(self, call_id: str, request: Any, cancelled: Any) -> Any:
        reference = request.reference
        if isinstance(reference, wit_completion.Reference_Prompt):
            entry: Any = _PROMPTS.get(reference.value)
        else:
            entry = _TEMPLATES.get(reference.value)
        completer = None if entry is None else entry.completers.get(request.argument)
        values: list = []
        if completer is not None:
            try:
                values = [str(value) for value in completer(request.value, dict(request.context))]
            except Exception as error:
                why = f"{type(error).__name__}: {error}"
                raise Err(f"completing `{request.argument}` failed: {why}") from None
        return wit_completion.Completions(values=values, total=len(values), has_more=False)
