"""Drives the real mcp-wasm-host binary over stdio with the official Python MCP SDK.

The demo component's `survey` tool asks the user questions through MCP
elicitation (`elicitation/create`, answered by the SDK client's elicitation
callback). These tests check, from a client the project did not write, that:

- answered questions come back as the tool's result;
- cancelling the `tools/call` while a question is open makes the host withdraw
  that question (`notifications/cancelled` for the elicitation request, which
  the SDK turns into cancelling the callback), sends no result for the
  cancelled call, and leaves the host ready for the next call;
- a tool that needs the user's approval asks with a one-field form and runs
  only on an explicit yes;
- afterwards the host holds nothing: its `mcp-wasm-host://status` resource
  reports no live calls, stores, open client requests or paused calls.

Every JSON-RPC message on the stdio link is recorded (see `Wire`), so the
tests can also assert on what the SDK hides (a late result for a cancelled
request is dropped silently by the SDK). The host logs with `--log-format
json`, so the tests read its events' fields (see `Host.events`).

Needs target/release/mcp-wasm-host (or $MCP_WASM_HOST) and
target/guests/demo.wasm: `just build guests`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.session import ClientRequestContext
from mcp.shared.message import SessionMessage

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(os.environ.get("MCP_WASM_HOST") or ROOT / "target/release/mcp-wasm-host")
DEMO = ROOT / "target/guests/demo.wasm"
STATUS_URI = "mcp-wasm-host://status"
PATIENCE_S = 20.0
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Answer"}},
    "required": ["answer"],
}

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session", autouse=True)
def built_host() -> None:
    """Fails (never skips) when the binary or the demo component is missing."""
    for what, path in (("host binary", HOST), ("demo component", DEMO)):
        if not path.is_file():
            pytest.fail(f"missing {what} at {path}: run `just build guests`", pytrace=False)


def question(n: int, of: int) -> str:
    return f"Question {n} of {of}: what should happen next?"


def accept(answer: str) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"answer": answer})


class Wire:
    """Every JSON-RPC message on the stdio link, in order, as (sender, message dict)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def record(self, sender: str, item: SessionMessage | Exception) -> None:
        if isinstance(item, SessionMessage):
            message = item.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
            self.messages.append((sender, message))

    def requests(self, sender: str, method: str) -> list[dict[str, Any]]:
        return [m for s, m in self.messages if s == sender and m.get("method") == method and "id" in m]

    def cancelled_ids(self, sender: str) -> list[Any]:
        return [
            (m.get("params") or {}).get("requestId")
            for s, m in self.messages
            if s == sender and m.get("method") == "notifications/cancelled"
        ]

    def answers_to(self, sender: str, request_id: Any) -> list[dict[str, Any]]:
        """Responses (results or errors) that `sender` sent for `request_id`."""
        return [
            m
            for s, m in self.messages
            if s == sender and "method" not in m and m.get("id") == request_id
        ]


class TapRead:
    """The SDK's read stream (host → client), recording each message it hands on."""

    def __init__(self, inner: Any, wire: Wire) -> None:
        self._inner, self._wire = inner, wire

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        self._wire.record("host", item)
        return item

    def __aiter__(self) -> TapRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> TapRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class TapWrite:
    """The SDK's write stream (client → host), recording each message it sends."""

    def __init__(self, inner: Any, wire: Wire) -> None:
        self._inner, self._wire = inner, wire

    async def send(self, item: SessionMessage) -> None:
        self._wire.record("client", item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> TapWrite:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class Host:
    """One host process with an initialized SDK session."""

    def __init__(self, session: ClientSession, wire: Wire, log: Path) -> None:
        self.session, self.wire, self.log = session, wire, log

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def events(self, message: str) -> list[dict[str, Any]]:
        """The fields of each log event with this message (`--log-format json`
        lines; any other line, such as a panic, is skipped)."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            fields = event.get("fields") if isinstance(event, dict) else None
            if isinstance(fields, dict) and fields.get("message") == message:
                found.append(fields)
        return found

    @contextmanager
    def patience(self, what: str) -> Iterator[None]:
        """Bounds a wait; on timeout, fails with the host's log."""
        try:
            with anyio.fail_after(PATIENCE_S):
                yield
        except TimeoutError:
            pytest.fail(f"timed out after {PATIENCE_S}s waiting for {what}\n--- host stderr ---\n{self.stderr()}")

    async def status(self) -> dict[str, int]:
        result = await self.session.read_resource(STATUS_URI)
        (contents,) = result.contents
        assert isinstance(contents, types.TextResourceContents), contents
        return json.loads(contents.text)

    async def settled_status(self) -> dict[str, int]:
        """Polls the status resource until the host holds no call, store or client request."""
        seen: dict[str, int] = {}
        try:
            with anyio.fail_after(PATIENCE_S):
                while True:
                    seen = await self.status()
                    if seen["live_calls"] == seen["live_stores"] == seen["open_client_requests"] == 0:
                        return seen
                    await anyio.sleep(0.005)
        except TimeoutError:
            pytest.fail(f"the host still holds resources after {PATIENCE_S}s: {seen}\n--- host stderr ---\n{self.stderr()}")


@asynccontextmanager
async def serve(tmp_path: Path, elicit: Any) -> AsyncIterator[Host]:
    """Spawns the host through the SDK's stdio client and initializes a session
    that declares elicitation (the SDK does so because a callback is given)."""
    params = StdioServerParameters(
        command=str(HOST),
        args=["--log-format", "json", "--component", str(DEMO)],
        env={"RUST_LOG": "mcp_wasm_host=info", "NO_COLOR": "1"},
    )
    log = tmp_path / "host.stderr"
    wire = Wire()
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(
                TapRead(read, wire),
                TapWrite(write, wire),
                elicitation_callback=elicit,
                client_info=types.Implementation(name="mcp-wasm-host-py-test", version="1.0.0"),
            ) as session:
                host = Host(session, wire, log)
                with host.patience("initialize"):
                    init = await session.initialize()
                assert init.capabilities.resources is not None, "the host does not advertise resources"
                yield host


async def test_python_sdk_answers_an_elicitation(tmp_path: Path) -> None:
    asked: list[str] = []
    answers = iter(["py-1", "py-2"])

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return accept(next(answers))

    async with serve(tmp_path, elicit) as host:
        with host.patience("the survey result"):
            result = await host.session.call_tool("survey", {"questions": 2})

        assert result.is_error is False, result
        assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["py-1\npy-2"], result
        assert result.structured_content == {"answers": ["py-1", "py-2"]}
        assert asked == [question(1, 2), question(2, 2)]
        # Form mode with the documented schema, exactly as sent on the wire.
        elicitations = host.wire.requests("host", "elicitation/create")
        assert len(elicitations) == 2, host.wire.messages
        for request in elicitations:
            assert request["params"].get("mode", "form") == "form", request
            assert request["params"]["requestedSchema"] == ANSWER_SCHEMA, request

        status = await host.settled_status()
        assert (status["calls_total"], status["cleanups_total"]) == (1, 0), status


async def test_python_sdk_cancelling_the_call_withdraws_the_open_elicitation(tmp_path: Path) -> None:
    asked: list[str] = []
    second_open = anyio.Event()  # question 2 of 3 reached the callback
    withdrawn = anyio.Event()  # ...and the SDK cancelled the callback
    open_request_id: list[Any] = []

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if params.message == question(2, 3):
            open_request_id.append(ctx.request_id)
            second_open.set()
            try:
                await anyio.sleep_forever()  # a user who never answers
            except anyio.get_cancelled_exc_class():
                # SDK 2.x: a `notifications/cancelled` naming this request
                # cancels the scope the callback runs in (the session itself is
                # still open here: the test waits for this before leaving it).
                withdrawn.set()
                raise
        if params.message == question(1, 3):
            return accept("py-1")
        if params.message == question(1, 1):
            return accept("py-after")
        return types.ElicitResult(action="decline")

    async with serve(tmp_path, elicit) as host:
        results: list[types.CallToolResult] = []
        call_scope = anyio.CancelScope()
        call_ended = anyio.Event()

        async def call() -> None:
            try:
                with call_scope:
                    results.append(await host.session.call_tool("survey", {"questions": 3}))
            finally:
                call_ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with host.patience("question 2 of 3"):
                await second_open.wait()
            # SDK 2.x: cancelling the task awaiting call_tool sends
            # `notifications/cancelled` for its request id (asserted below).
            call_scope.cancel()
            with host.patience("the host to withdraw the open question"):
                await withdrawn.wait()
            with host.patience("call_tool to return after its cancellation"):
                await call_ended.wait()

        assert call_scope.cancelled_caught, "call_tool finished before it could be cancelled"
        assert results == [], results
        wire = host.wire
        (call_request,) = wire.requests("client", "tools/call")
        call_id = call_request["id"]
        assert wire.cancelled_ids("client") == [call_id], wire.messages
        # The host withdrew exactly the open question, and the SDK did not answer it.
        elicitations = wire.requests("host", "elicitation/create")
        assert [e["params"]["message"] for e in elicitations] == [question(1, 3), question(2, 3)]
        open_id = elicitations[1]["id"]
        assert open_request_id == [open_id]
        assert wire.cancelled_ids("host") == [open_id], wire.messages
        assert wire.answers_to("client", open_id) == [], wire.messages

        # The host is ready for the next call, and it is answered normally.
        with host.patience("the survey after the cancelled one"):
            result = await host.session.call_tool("survey", {"questions": 1})
        assert result.is_error is False, result
        assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["py-after"], result
        assert asked == [question(1, 3), question(2, 3), question(1, 1)]

        status = await host.settled_status()
        # Both calls counted; the cancelled one (and only it) ran its cleanup.
        assert (status["calls_total"], status["cleanups_total"]) == (2, 1), status
        # The host logs a call's end before counting it out, so the event is there.
        ended = [
            e
            for e in host.events("call ended")
            if e.get("tool") == "survey" and e.get("stop_reason") == "client-cancelled"
        ]
        assert len(ended) == 1 and ended[0].get("cleanup") == "done", host.stderr()
        # The cancelled call never got a response, not even a late one the SDK
        # would have dropped without telling anyone.
        assert wire.answers_to("host", call_id) == [], wire.messages


async def test_python_sdk_approves_and_declines_a_tool_that_needs_approval(tmp_path: Path) -> None:
    """`delete_records` needs the user's approval: the host asks with a form
    holding one `approve` field; only an explicit yes runs the tool."""
    verdicts = iter([True, False])
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": next(verdicts)})

    async with serve(tmp_path, elicit) as host:
        with host.patience("the approved call"):
            approved = await host.session.call_tool("delete_records", {"table": "users"})
        assert approved.is_error is False, approved
        assert approved.content[0].text == "deleted every record of users", approved

        with host.patience("the declined call"):
            declined = await host.session.call_tool("delete_records", {"table": "users"})
        assert declined.is_error is True, declined
        assert "the user declined" in declined.content[0].text, declined

        assert len(asked) == 2
        assert "Allow the tool `delete_records` to run?" in asked[0].message
        assert 'table: "users"' in asked[0].message
        schema = host.wire.requests("host", "elicitation/create")[0]["params"]["requestedSchema"]
        assert schema["required"] == ["approve"] and schema["properties"]["approve"]["type"] == "boolean"

        status = await host.settled_status()
        assert status["paused_calls"] == 0 and status["leases"] == 0, status
        # The declined call never ran, and the host's log says why.
        declined_events = host.events("call ended before it started")
        assert [e.get("outcome") for e in declined_events] == ["declined"], host.stderr()
        assert [e.get("tool") for e in declined_events] == ["delete_records"], host.stderr()
