"""Write mcp-wasm-host tools in Python: one decorated, type-annotated function per tool.

    from typing import Annotated
    from mcp_tool import Context, Tool, tool

    @tool(read_only=True)
    def greet(name: Annotated[str, "Who to greet"], excited: bool = False) -> str:
        "Greets someone by name."
        return f"Hello, {name}{'!' if excited else '.'}"

Build it with componentize-py 0.25.1 against the `mcp:tool` contract
(`mcp-wasm-host wit wit` writes it), from the folder holding `app.py` and
this file:

    componentize-py -d wit -w tool-component componentize app -o tool.wasm

`app.py` must import `Tool` (the class componentize-py exports as
`mcp:tool/tool`); it finds every function decorated with `@tool`.

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

__all__ = [
    "Answer",
    "Cancelled",
    "Context",
    "InvalidArguments",
    "NotApproved",
    "RequestFailed",
    "Tool",
    "ToolError",
    "ToolResult",
    "audio",
    "embedded",
    "image",
    "input_schema",
    "on_cleanup",
    "output_schema",
    "schema_of",
    "text",
    "tool",
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
        error = err.value
        if isinstance(error, client.RequestError_Cancelled):
            raise Cancelled() from None
        if isinstance(error, client.RequestError_Unsupported):
            raise RequestFailed("unsupported", "the client does not support this request") from None
        if isinstance(error, client.RequestError_TimedOut):
            raise RequestFailed("timed-out", "the client did not answer in time") from None
        raise RequestFailed("failed", str(getattr(error, "value", error))) from None


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
) -> Any:
    """Registers a function as a tool. Usable bare (`@tool`) or with options:

    - `name` (default: the function's name), `title`, `description`
      (default: the docstring);
    - behaviour hints for clients: `read_only`, `destructive`, `idempotent`,
      `open_world` (None: not stated);
    - `needs_approval`: True to have the host ask the user before every call
      (None: the host decides; tools marked destructive ask).
    """

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

