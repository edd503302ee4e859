"""OpenTelemetry traces, from a client the project did not write to a receiver
the test serves: the official Python MCP SDK creates a client span for each
request it sends (`MCP send tools/call <tool>`) and puts its W3C `traceparent`
in the request's `params._meta`; the host, started with the standard
`OTEL_EXPORTER_OTLP_ENDPOINT`, exports its spans over OTLP/HTTP (protobuf) to
an endpoint on loopback that decodes them with the official proto types
(`opentelemetry-proto`).

The SDK uses the global OpenTelemetry tracer provider, so the test installs
the SDK's own (`opentelemetry-sdk`), with an in-memory exporter: the client's
spans get real, sampled ids, and the test can name the exact client span each
host span must be the child of.

For each of an approved call with a question, a cancelled call (forced stop
and cleanup) and a refused call, the tests check that the host's spans join
the client's trace, with the MCP semantic conventions' names and attributes,
and that the approval, the questions, the guest run, the forced stop and the
cleanup hang where they belong (and that a call that did not wait for a slot
has no span for it).

Needs target/release/mcp-wasm-host (or $MCP_WASM_HOST) and
target/guests/demo.wasm: `just build guests`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(os.environ.get("MCP_WASM_HOST") or ROOT / "target/release/mcp-wasm-host")
DEMO = ROOT / "target/guests/demo.wasm"
PATIENCE_S = 20.0
SERVICE_NAME = "mcp-wasm-host-py-traces"
INVALID_PARAMS = -32602

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", autouse=True)
def built_host() -> None:
    """Fails (never skips) when the binary or the demo component is missing."""
    for what, path in (("host binary", HOST), ("demo component", DEMO)):
        if not path.is_file():
            pytest.fail(f"missing {what} at {path}: run `just build guests`", pytrace=False)


# --- the client's side: the SDK's spans ----------------------------------


@pytest.fixture(scope="module")
def _client_exporter() -> InMemorySpanExporter:
    """An SDK tracer provider, installed once for the process (OpenTelemetry
    lets the global provider be set only once), exporting to memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    # Simple, not batched: a span is in the exporter as soon as it ends.
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def client_spans(_client_exporter: InMemorySpanExporter) -> Iterator[ClientSpans]:
    _client_exporter.clear()
    yield ClientSpans(_client_exporter)
    _client_exporter.clear()


class ClientSpans:
    """The spans the SDK (and the test) made in this process."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self._exporter = exporter

    def sent(self, method: str, target: str) -> ReadableSpan:
        """The SDK's client span for the one request `method` on `target` (its
        name is `MCP send {method} {target}`, see mcp.shared.jsonrpc_dispatcher)."""
        name = f"MCP send {method} {target}"
        found = [span for span in self._exporter.get_finished_spans() if span.name == name]
        names = [span.name for span in self._exporter.get_finished_spans()]
        assert len(found) == 1, f"expected one client span {name!r}, the SDK made {names}"
        (span,) = found
        assert span.kind == trace.SpanKind.CLIENT, span
        assert span.attributes is not None and span.attributes.get("mcp.method.name") == method, span.attributes
        return span


def trace_hex(span: ReadableSpan) -> str:
    return format(span.context.trace_id, "032x")


def span_hex(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


TRACER = trace.get_tracer("mcp-wasm-host-py-traces")


# --- the host's side: an OTLP/HTTP receiver --------------------------------


class Receiver:
    """An OTLP/HTTP traces endpoint on a free loopback port: every span of every
    `POST /v1/traces`, decoded as an `ExportTraceServiceRequest`, with the
    `service.name` of the resource that sent it."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.service_names: set[str] = set()
        self.problems: list[str] = []  # any POST that is not an OTLP/HTTP protobuf export
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                content_type = self.headers.get("Content-Type")
                if self.path != "/v1/traces" or content_type != "application/x-protobuf":
                    receiver._note(f"POST {self.path} with Content-Type {content_type}")
                    self.send_error(404)
                    return
                receiver._received(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # pytest shows the test's own output only

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _note(self, problem: str) -> None:
        with self._changed:
            self.problems.append(problem)
            self._changed.notify_all()

    def _received(self, request: ExportTraceServiceRequest) -> None:
        with self._changed:
            for resource in request.resource_spans:
                for attribute in resource.resource.attributes:
                    if attribute.key == "service.name":
                        self.service_names.add(attribute.value.string_value)
                for scope in resource.scope_spans:
                    self.spans.extend(scope.spans)
            self._changed.notify_all()

    def names(self) -> list[str]:
        with self._changed:
            return [span.name for span in self.spans]

    def tree(self) -> str:
        """The spans received, each under its parent, with their attributes
        (for failure messages)."""
        with self._changed:
            spans = list(self.spans)
        ids = {span.span_id for span in spans}
        lines: list[str] = []

        def show(span: Span, depth: int) -> None:
            lines.append(f"{'  ' * depth}{span.name} {span.span_id.hex()} {attributes(span)}")
            for child in spans:
                if child.parent_span_id == span.span_id:
                    show(child, depth + 1)

        for span in spans:
            if span.parent_span_id not in ids:
                lines.append(f"(parent {span.parent_span_id.hex() or 'none'}, trace {span.trace_id.hex()})")
                show(span, 1)
        return "\n".join(lines)

    async def arrived(self, name: str, match: Callable[[Span], bool] = lambda span: True) -> Span:
        """Waits (on the receiver's condition, in a worker thread) until a span
        `name` that `match`es has arrived; fails the test after PATIENCE_S.

        A span ends after its children, and the host exports spans in the
        order they end: once a request's span is here, so are its children."""

        def found() -> Span | None:
            return next((span for span in self.spans if span.name == name and match(span)), None)

        def wait() -> Span | None:
            with self._changed:
                self._changed.wait_for(lambda: found() is not None, timeout=PATIENCE_S)
                return found()

        span = await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
        if span is None:
            pytest.fail(f"no span {name!r} arrived within {PATIENCE_S}s; spans:\n{self.tree()}", pytrace=False)
        return span

    def one(self, name: str, under: Span | None = None) -> Span:
        """The one span `name` received (whose parent is `under`, if given)."""
        with self._changed:
            found = [
                span
                for span in self.spans
                if span.name == name and (under is None or span.parent_span_id == under.span_id)
            ]
        where = f" under {under.name!r}" if under is not None else ""
        assert len(found) == 1, f"expected one span {name!r}{where}, got {len(found)}; spans:\n{self.tree()}"
        return found[0]

    def children(self, parent: Span, name: str | None = None) -> list[Span]:
        with self._changed:
            return [
                span
                for span in self.spans
                if span.parent_span_id == parent.span_id and (name is None or span.name == name)
            ]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    endpoint = Receiver()
    yield endpoint
    endpoint.close()
    assert endpoint.problems == [], endpoint.problems


def attributes(span: Span) -> dict[str, Any]:
    """A span's attributes as Python values (string, bool, int, float)."""
    values: dict[str, Any] = {}
    for attribute in span.attributes:
        value: AnyValue = attribute.value
        kind = value.WhichOneof("value")
        values[attribute.key] = getattr(value, kind) if kind else None
    return values


def assert_joins(host_span: Span, sent: ReadableSpan) -> None:
    """The host's request span is a server span in the client's trace, the
    child of the SDK's span for the request it answers."""
    assert host_span.trace_id.hex() == trace_hex(sent), "the host's span joins the client's trace"
    assert host_span.parent_span_id.hex() == span_hex(sent), "its parent is the SDK's span for the request"
    assert host_span.kind == Span.SPAN_KIND_SERVER, host_span
    assert attributes(host_span)["jsonrpc.request.id"] == sent.attributes["jsonrpc.request.id"]


def assert_in_trace(spans: list[Span], sent: ReadableSpan) -> None:
    for span in spans:
        assert span.trace_id.hex() == trace_hex(sent), f"{span.name} is outside the client's trace"


def within(inner: Span, outer: Span) -> bool:
    return outer.start_time_unix_nano <= inner.start_time_unix_nano <= inner.end_time_unix_nano <= outer.end_time_unix_nano


# --- the host, traced ------------------------------------------------------


class Host:
    """One host process with an initialized SDK session."""

    def __init__(self, session: ClientSession, protocol_version: str, log: Path) -> None:
        self.session, self.protocol_version, self.log = session, protocol_version, log

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    async def patiently(self, what: str, waiting: Callable[[], Any]) -> Any:
        """Awaits `waiting()`; on timeout, fails with the host's log."""
        try:
            with anyio.fail_after(PATIENCE_S):
                return await waiting()
        except TimeoutError:
            pytest.fail(f"timed out after {PATIENCE_S}s waiting for {what}\n--- host stderr ---\n{self.stderr()}")


async def no_questions(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


@asynccontextmanager
async def serve(
    tmp_path: Path, receiver: Receiver, *args: str, elicit: Any = no_questions
) -> AsyncIterator[Host]:
    """Spawns the host through the SDK's stdio client, exporting traces to
    `receiver` (configured the standard way, by environment), and
    initializes a session that declares elicitation."""
    params = StdioServerParameters(
        command=str(HOST),
        args=["--log-format", "json", "--component", str(DEMO), *args],
        env={
            "RUST_LOG": "mcp_wasm_host=info",
            "NO_COLOR": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_SERVICE_NAME": SERVICE_NAME,
            # Batches go every 100 ms (the default is 5 s).
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        },
    )
    log = tmp_path / "host.stderr"
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(
                read,
                write,
                elicitation_callback=elicit,
                client_info=types.Implementation(name="mcp-wasm-host-py-traces", version="1.0.0"),
            ) as session:
                host = Host(session, "", log)
                init = await host.patiently("initialize", session.initialize)
                host.protocol_version = str(init.protocol_version)
                yield host


def assert_tool_call_span(span: Span, tool: str, host: Host) -> None:
    """The attributes the MCP semantic conventions give a `tools/call` server
    span for a tool the host serves, over stdio."""
    got = attributes(span)
    expected = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": tool,
        "gen_ai.operation.name": "execute_tool",
        "network.transport": "pipe",
        "mcp.protocol.version": host.protocol_version,
    }
    assert {key: got.get(key) for key in expected} == expected, got


# --- the tests ---------------------------------------------------------------
# Each waits for the host's last spans while the host still runs (the
# receiver's waits are the only sign that a batch has gone out), then checks
# what arrived once the session is over.


async def test_an_approved_call_with_a_question_is_one_trace_from_the_client_to_the_guests_question(
    tmp_path: Path, receiver: Receiver, client_spans: ClientSpans
) -> None:
    """`survey` made to need approval: the host asks for it first (the
    `approval` span), then the guest asks its own question (a client span
    `elicitation/create` under the `guest` span), all in the client's trace."""
    asked: list[str] = []

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        fields = (getattr(params, "requested_schema", None) or {}).get("properties", {})
        if "approve" in fields:
            asked.append("approval")
            return types.ElicitResult(action="accept", content={"approve": True})
        asked.append("question")
        return types.ElicitResult(action="accept", content={"answer": "traced"})

    with TRACER.start_as_current_span("test") as test_span:
        async with serve(tmp_path, receiver, "--require-approval", "survey", elicit=elicit) as host:
            result = await host.patiently(
                "the survey result", lambda: host.session.call_tool("survey", {"questions": 1})
            )
            await receiver.arrived("tools/call survey")
    assert result.is_error is False, result
    assert result.structured_content == {"answers": ["traced"]}, result
    assert asked == ["approval", "question"]

    sent = client_spans.sent("tools/call", "survey")
    assert sent.parent is not None and sent.parent.span_id == test_span.get_span_context().span_id
    call = receiver.one("tools/call survey")
    assert_joins(call, sent)
    assert_tool_call_span(call, "survey", host)
    assert "error.type" not in attributes(call), attributes(call)
    assert call.status.code != Status.STATUS_CODE_ERROR, call.status

    approval = receiver.one("approval", under=call)
    got = attributes(approval)
    assert (got.get("mcp.method.name"), got.get("verdict")) == ("elicitation/create", "approved"), got
    # The approval's own question to the user, a client span under it.
    asked = receiver.one("elicitation/create", under=approval)
    assert asked.kind == Span.SPAN_KIND_CLIENT, asked
    assert attributes(asked).get("outcome") == "answered", attributes(asked)
    # A call that found a slot free has no span for a wait it did not have.
    assert not [span for span in receiver.spans if span.name == "wait for a slot"]
    guest = receiver.one("guest", under=call)
    question = receiver.one("elicitation/create", under=guest)
    assert_in_trace([approval, asked, guest, question], sent)
    assert question.kind == Span.SPAN_KIND_CLIENT, question
    got = attributes(question)
    assert (got.get("mcp.method.name"), got.get("outcome")) == ("elicitation/create", "answered"), got

    got = attributes(guest)
    assert got.get("tier") in ("baseline", "optimized"), got
    assert (got.get("outcome"), got.get("forced")) == ("ok", False), got
    assert isinstance(got.get("fuel_used"), int) and got["fuel_used"] > 0, got
    # The guest ran only after the approval; every child lies within the request.
    assert approval.end_time_unix_nano <= guest.start_time_unix_nano
    for child in (approval, guest):
        assert within(child, call), child.name
    assert within(question, guest)
    assert receiver.children(call, "cleanup") == [], "a call that returned needs no cleanup"
    assert receiver.service_names == {SERVICE_NAME}, "OTEL_SERVICE_NAME names the host's resource"


async def test_a_cancelled_call_shows_its_forced_stop_and_cleanup_in_the_clients_trace(
    tmp_path: Path, receiver: Receiver, client_spans: ClientSpans
) -> None:
    """`spin` ignores cancellation: cancelling it (the SDK sends
    `notifications/cancelled`) makes the host stop it by force after
    --cancel-grace, then run the component's cleanup, which removes the lock
    `spin` holds in the granted directory."""
    locks = tmp_path / "locks"
    locks.mkdir()
    call_scope = anyio.CancelScope()
    call_ended = anyio.Event()

    with TRACER.start_as_current_span("test"):
        async with serve(tmp_path, receiver, "--dir", str(locks), "--cancel-grace", "100ms") as host:

            async def call() -> None:
                try:
                    with call_scope:
                        await host.session.call_tool("spin", {})
                finally:
                    call_ended.set()

            async def spinning() -> None:
                # `spin` creates `<call-id>.lock` before it starts computing.
                while not any(locks.iterdir()):
                    await anyio.sleep(0.01)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await host.patiently("spin to hold its lock", spinning)
                # SDK 2.x: cancelling the task awaiting call_tool sends
                # `notifications/cancelled` for its request.
                call_scope.cancel()
                await host.patiently("call_tool to end after its cancellation", call_ended.wait)
            # The cleanup span ends once the component's cleanup has run.
            await receiver.arrived("cleanup")
            await receiver.arrived("tools/call spin")
            lock_files = list(locks.iterdir())
    assert call_scope.cancelled_caught, "call_tool finished before it could be cancelled"
    assert lock_files == [], "the cleanup released the lock"

    sent = client_spans.sent("tools/call", "spin")
    call = receiver.one("tools/call spin")
    assert_joins(call, sent)
    assert_tool_call_span(call, "spin", host)

    guest = receiver.one("guest", under=call)
    forced_stop = receiver.one("forced stop", under=guest)
    cleanup = receiver.one("cleanup", under=call)
    assert_in_trace([guest, forced_stop, cleanup], sent)

    got = attributes(guest)
    assert got.get("forced") is True, got
    assert got.get("outcome") == "stopped", got
    assert attributes(forced_stop).get("reason") == "client-cancelled", attributes(forced_stop)
    assert attributes(cleanup).get("reason") == "client-cancelled", attributes(cleanup)
    # The stop is part of the guest's run; the cleanup follows it.
    assert within(forced_stop, guest)
    assert guest.end_time_unix_nano <= cleanup.start_time_unix_nano


async def test_a_refused_call_is_an_error_span_in_the_clients_trace(
    tmp_path: Path, receiver: Receiver, client_spans: ClientSpans
) -> None:
    """Arguments that fail the tool's input schema, and a tool the host does
    not serve, are refused with -32602: the request spans say so
    (`error.type`, status Error), and nothing ran under them. A made-up tool
    name does not name the span (the method alone does)."""
    with TRACER.start_as_current_span("test"):
        async with serve(tmp_path, receiver) as host:
            with pytest.raises(MCPError) as bad_arguments:
                # `questions` is at least 1 in survey's input schema.
                await host.patiently("the refusal", lambda: host.session.call_tool("survey", {"questions": 0}))
            with pytest.raises(MCPError) as unknown_tool:
                await host.patiently("the refusal", lambda: host.session.call_tool("no_such_tool", {}))
            await receiver.arrived("tools/call survey")
            await receiver.arrived("tools/call")
    assert bad_arguments.value.code == INVALID_PARAMS, bad_arguments.value
    assert unknown_tool.value.code == INVALID_PARAMS, unknown_tool.value

    sent = client_spans.sent("tools/call", "survey")
    refused = receiver.one("tools/call survey")
    assert_joins(refused, sent)
    assert_tool_call_span(refused, "survey", host)
    assert attributes(refused).get("error.type") == str(INVALID_PARAMS), attributes(refused)
    assert refused.status.code == Status.STATUS_CODE_ERROR, refused.status
    # The SDK records the same on its side.
    assert sent.attributes.get("error.type") == str(INVALID_PARAMS), sent.attributes

    sent_unknown = client_spans.sent("tools/call", "no_such_tool")
    unknown = receiver.one("tools/call")
    assert_joins(unknown, sent_unknown)
    got = attributes(unknown)
    assert got.get("mcp.method.name") == "tools/call", got
    assert got.get("error.type") == str(INVALID_PARAMS), got
    assert unknown.status.code == Status.STATUS_CODE_ERROR, unknown.status
    assert "gen_ai.tool.name" not in got, got
    # No approval, slot, guest or cleanup: nothing ran.
    assert receiver.children(refused) == [] and receiver.children(unknown) == []
