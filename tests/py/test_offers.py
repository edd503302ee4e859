"""Resources, prompts and completion (mcp:tool 0.2.1) seen from the official Python MCP SDK.

The example component guest-tools/everything offers resources (text, a PNG,
one a tool says changed), a resource template with completion, and prompts
with arguments, an embedded resource and an image. These tests drive the
real mcp-wasm-host binary over stdio with the SDK's `ClientSession` and
check, from a client the project did not write, that:

- resources/list shows the host's `mcp-wasm-host://status` first, then the
  component's, and resources/read returns text as text and bytes as base64;
- a read of a URI matching the template is routed to the component, and
  completion/complete suggests the template's variable and a prompt's argument;
- prompts/get fills in arguments, carries an embedded resource and an image,
  and refuses a missing required argument as invalid params;
- after resources/subscribe, a tool calling `client.resource-updated` brings
  notifications/resources/updated to the client;
- a component built against mcp:tool 0.2.0 still works beside a 0.2.1 one.

Needs target/release/mcp-wasm-host (or $MCP_WASM_HOST) and
target/guests/everything.wasm and contract-0-2.wasm: `just build guests`.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client, types
from mcp.client.session import IncomingMessage

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(os.environ.get("MCP_WASM_HOST") or ROOT / "target/release/mcp-wasm-host")
EVERYTHING = ROOT / "target/guests/everything.wasm"
CONTRACT_0_2 = ROOT / "target/guests/contract-0-2.wasm"
STATUS_URI = "mcp-wasm-host://status"
WATCHED = "test://watched-resource"
TEMPLATE = "test://template/{id}/data"
STATIC_TEXT = "This is the content of the static text resource."
EVERYTHING_URIS = [
    "test://static-text",
    "test://static-binary",
    WATCHED,
    "test://spinning-resource",
    "skill://release-notes/SKILL.md",
    "skill://release-notes/references/STYLE.md",
]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PATIENCE_S = 20.0

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session", autouse=True)
def built_host() -> None:
    """Fails (never skips) when the binary or a component is missing."""
    for what, path in (
        ("host binary", HOST),
        ("everything component", EVERYTHING),
        ("0.2.0 component", CONTRACT_0_2),
    ):
        if not path.is_file():
            pytest.fail(f"missing {what} at {path}: run `just build guests`", pytrace=False)


class Host:
    """One host process with an initialized SDK session, and the URIs of the
    notifications/resources/updated it sent."""

    def __init__(self, session: ClientSession, log: Path, updated: list[str], changed: anyio.Event) -> None:
        self.session, self.log, self.updated, self.changed = session, log, updated, changed

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    @contextmanager
    def patience(self, what: str) -> Iterator[None]:
        """Bounds a wait; on timeout, fails with the host's log."""
        try:
            with anyio.fail_after(PATIENCE_S):
                yield
        except TimeoutError:
            pytest.fail(f"timed out after {PATIENCE_S}s waiting for {what}\n--- host stderr ---\n{self.stderr()}")

    async def read_text(self, uri: str, mime_type: str) -> str:
        """The single text content of a read of `uri`, checked for its URI and type."""
        with self.patience(f"resources/read {uri}"):
            result = await self.session.read_resource(uri)
        (contents,) = result.contents
        assert isinstance(contents, types.TextResourceContents), contents
        assert (contents.uri, contents.mime_type) == (uri, mime_type), contents
        return contents.text


@asynccontextmanager
async def serve(tmp_path: Path, *components: Path) -> AsyncIterator[Host]:
    """Spawns the host serving `components` through the SDK's stdio client and
    initializes a session whose message handler records resource updates."""
    params = StdioServerParameters(
        command=str(HOST),
        args=["--log-format", "json", *(arg for c in components for arg in ("--component", str(c)))],
        env={"RUST_LOG": "mcp_wasm_host=info", "NO_COLOR": "1"},
    )
    log = tmp_path / "host.stderr"
    updated: list[str] = []
    changed = anyio.Event()  # under the asyncio backend, an asyncio.Event

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(message.params.uri)
            changed.set()

    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(
                read,
                write,
                message_handler=on_message,
                client_info=types.Implementation(name="mcp-wasm-host-py-offers", version="1.0.0"),
            ) as session:
                host = Host(session, log, updated, changed)
                with host.patience("initialize"):
                    init = await session.initialize()
                caps = init.capabilities
                assert caps.resources is not None and caps.resources.subscribe, caps
                assert caps.prompts is not None and caps.completions is not None, caps
                yield host


def assert_png(data: str) -> None:
    assert base64.b64decode(data, validate=True).startswith(PNG_SIGNATURE), data


async def test_resources_list_and_read_text_and_blob(tmp_path: Path) -> None:
    async with serve(tmp_path, EVERYTHING) as host:
        with host.patience("resources/list"):
            listed = await host.session.list_resources()
        assert [str(r.uri) for r in listed.resources] == [STATUS_URI, *EVERYTHING_URIS]
        by_uri = {str(r.uri): r for r in listed.resources}
        assert by_uri["test://static-text"].mime_type == "text/plain"
        assert by_uri["test://static-binary"].mime_type == "image/png"

        assert await host.read_text("test://static-text", "text/plain") == STATIC_TEXT

        with host.patience("resources/read of the PNG"):
            result = await host.session.read_resource("test://static-binary")
        (binary,) = result.contents
        assert isinstance(binary, types.BlobResourceContents), binary
        assert (binary.uri, binary.mime_type) == ("test://static-binary", "image/png"), binary
        assert_png(binary.blob)


async def test_template_read_and_completion(tmp_path: Path) -> None:
    async with serve(tmp_path, EVERYTHING) as host:
        session = host.session
        with host.patience("resources/templates/list"):
            listed = await session.list_resource_templates()
        assert [(t.uri_template, t.name, t.mime_type) for t in listed.resource_templates] == [
            (TEMPLATE, "template-data", "application/json")
        ]

        text = await host.read_text("test://template/123/data", "application/json")
        assert json.loads(text) == {"id": "123", "templateTest": True, "data": "Data for ID: 123"}

        with host.patience("completion/complete"):
            ids = await session.complete(types.ResourceTemplateReference(uri=TEMPLATE), {"name": "id", "value": "1"})
            words = await session.complete(
                types.PromptReference(name="test_prompt_with_arguments"), {"name": "arg1", "value": "par"}
            )
            none = await session.complete(types.ResourceTemplateReference(uri=TEMPLATE), {"name": "id", "value": "9"})
        assert ids.completion.values == ["100", "123"], ids
        assert not ids.completion.has_more, ids
        assert words.completion.values == ["paris", "park", "party"], words
        assert none.completion.values == [], none


async def test_prompts_with_arguments_and_embedded_media(tmp_path: Path) -> None:
    async with serve(tmp_path, EVERYTHING) as host:
        session = host.session
        with host.patience("prompts/list"):
            listed = await session.list_prompts()
        arguments = {p.name: [(a.name, a.required) for a in p.arguments or []] for p in listed.prompts}
        assert arguments == {
            "test_simple_prompt": [],
            "test_prompt_with_arguments": [("arg1", True), ("arg2", True)],
            "test_prompt_with_embedded_resource": [("resourceUri", True)],
            "test_prompt_with_image": [],
            "test_input_required_result_prompt": [],
        }
        assert [p.name for p in listed.prompts] == list(arguments), "listed in the component's order"

        with host.patience("prompts/get"):
            filled = await session.get_prompt("test_prompt_with_arguments", {"arg1": "A", "arg2": "B"})
            embedded = await session.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://e/1"})
            image = await session.get_prompt("test_prompt_with_image")

        (message,) = filled.messages
        assert message.role == "user"
        assert isinstance(message.content, types.TextContent), message
        assert message.content.text == "Prompt with arguments: arg1='A', arg2='B'"

        first = embedded.messages[0]
        assert isinstance(first.content, types.EmbeddedResource), first
        resource = first.content.resource
        assert isinstance(resource, types.TextResourceContents), resource
        assert (str(resource.uri), resource.text) == ("test://e/1", "Embedded resource content for testing.")

        picture = image.messages[0].content
        assert isinstance(picture, types.ImageContent), image
        assert picture.mime_type == "image/png"
        assert_png(picture.data)
        assert isinstance(image.messages[-1].content, types.TextContent), image

        # The host checks required arguments before the component runs.
        with host.patience("the refused prompts/get"), pytest.raises(MCPError) as refused:
            await session.get_prompt("test_prompt_with_arguments", {"arg1": "A"})
        assert refused.value.code == types.INVALID_PARAMS, refused.value
        assert "arg2" in refused.value.message, refused.value


# resources/subscribe is deprecated by SDK 2.x for the 2026-07-28 protocol
# (which drops it); the host speaks an earlier version, where it is current.
@pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")
async def test_subscribe_then_a_tool_says_the_resource_changed(tmp_path: Path) -> None:
    async with serve(tmp_path, EVERYTHING) as host:
        with host.patience("resources/subscribe"):
            await host.session.subscribe_resource(WATCHED)
        with host.patience("update_watched_resource"):
            result = await host.session.call_tool("update_watched_resource", {})
        assert result.is_error is False, result
        with host.patience("notifications/resources/updated"):
            await host.changed.wait()
        assert host.updated == [WATCHED]


async def test_a_0_2_0_component_works_beside_a_0_2_1_one(tmp_path: Path) -> None:
    async with serve(tmp_path, EVERYTHING, CONTRACT_0_2) as host:
        with host.patience("tools/list"):
            tools = await host.session.list_tools()
        names = {t.name for t in tools.tools}
        assert {"old_echo", "update_watched_resource"} <= names, names

        with host.patience("old_echo"):
            echo = await host.session.call_tool("old_echo", {"text": "hi"})
        assert echo.is_error is False, echo
        assert [(c.type, c.text) for c in echo.content if isinstance(c, types.TextContent)] == [
            ("text", '{"text":"hi"}')
        ], echo

        # The old component offers no resources; the new one's are served as before.
        with host.patience("resources/list"):
            listed = await host.session.list_resources()
        assert [str(r.uri) for r in listed.resources] == [STATUS_URI, *EVERYTHING_URIS]
        assert await host.read_text("test://static-text", "text/plain") == STATIC_TEXT
