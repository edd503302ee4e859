"""Protocol 2026-07-28 seen from the official Python MCP SDK's modern `Client`.

Pinned to 2026-07-28 over stdio, the client sends no `initialize`; a tool's
questions come back as `input_required` results, which the client answers
through its ordinary callbacks (elicitation, sampling, roots) and retries
with the `requestState`. These tests drive the real mcp-wasm-host binary
serving guest-tools/everything and check that:

- a tool asking one question per round completes after two rounds;
- three questions of three kinds asked at once are answered in one round;
- a prompt that asks first (`prompts/get`) completes the same way.

Needs target/release/mcp-wasm-host (or $MCP_WASM_HOST) and
target/guests/everything.wasm: `just build guests`.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.session import ClientRequestContext

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(os.environ.get("MCP_WASM_HOST") or ROOT / "target/release/mcp-wasm-host")
EVERYTHING = ROOT / "target/guests/everything.wasm"
PATIENCE_S = 20.0

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session", autouse=True)
def built_host() -> None:
    """Fails (never skips) when the binary or the component is missing."""
    for what, path in (("host binary", HOST), ("everything component", EVERYTHING)):
        if not path.is_file():
            pytest.fail(f"missing {what} at {path}: run `just build guests`")


class Answers:
    """The client's callbacks: forms get `name` Ada (any other field:
    green), sampling says "Hi Ada", roots are one directory; `asked`
    records each question in order."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        assert isinstance(params, types.ElicitRequestFormParams), params
        field = next(iter(params.requested_schema["properties"]))
        return types.ElicitResult(action="accept", content={field: "Ada" if field == "name" else "green"})

    async def sample(
        self, ctx: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        asked = params.messages[0].content
        self.asked.append(f"sample: {asked.text if isinstance(asked, types.TextContent) else asked}")
        return types.CreateMessageResult(
            role="assistant", model="test-model", content=types.TextContent(type="text", text="Hi Ada")
        )

    async def roots(self, ctx: ClientRequestContext) -> types.ListRootsResult:
        self.asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    def client(self) -> Client:
        return Client(
            StdioServerParameters(command=str(HOST), args=["--component", str(EVERYTHING)]),
            mode="2026-07-28",
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            list_roots_callback=self.roots,
        )


def texts(content: list[types.ContentBlock]) -> list[str]:
    return [block.text for block in content if isinstance(block, types.TextContent)]


async def test_a_question_per_round_completes_after_two_rounds() -> None:
    answers = Answers()
    with anyio.fail_after(PATIENCE_S):
        async with answers.client() as client:
            result = await client.call_tool("test_input_required_result_multi_round", {})
    assert texts(result.content) == ["Ada likes green"], result
    assert answers.asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]


async def test_three_questions_of_three_kinds_are_answered_in_one_round() -> None:
    answers = Answers()
    with anyio.fail_after(PATIENCE_S):
        async with answers.client() as client:
            result = await client.call_tool("test_input_required_result_multiple_inputs", {})
    assert texts(result.content) == ["name: Ada; greeting: Hi Ada; roots: file:///work"], result
    assert sorted(answers.asked) == ["What is your name?", "roots", "sample: Generate a greeting"]


async def test_a_prompt_that_asks_first_completes_the_same_way() -> None:
    answers = Answers()
    with anyio.fail_after(PATIENCE_S):
        async with answers.client() as client:
            prompt = await client.get_prompt("test_input_required_result_prompt")
    assert [texts([message.content]) for message in prompt.messages] == [["Use this context: green"]]
    assert answers.asked == ["What context should the prompt use?"]
