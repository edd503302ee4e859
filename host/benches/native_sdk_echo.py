"""The `languages` section's baseline for the Python guest: a native server on
the official Python MCP SDK (`mcp`, the version tests/py/requirements.txt
pins), with the same `echo` tool as guest-tools' examples: input
`{text: string}` ("Text to return"), output schema `{text: string}`, the text
as content plus the structured result, the same annotations. What a user
would write instead of a Python guest. Serves over stdio until stdin closes:

    .tools/py/bin/python host/benches/native_sdk_echo.py

Installed by `scripts/setup.sh --with-node` (`just setup --with-node`).
"""

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

try:  # mcp 2.x
    from mcp.server import MCPServer as Server
except ImportError:  # older releases
    from mcp.server.fastmcp import FastMCP as Server
from mcp.types import ToolAnnotations

server = Server("native-sdk-echo")


@dataclass
class Echoed:
    text: str


@server.tool(
    annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
)
def echo(text: Annotated[str, Field(description="Text to return")]) -> Echoed:
    """Returns the text it is given."""
    return Echoed(text=text)


if __name__ == "__main__":
    server.run("stdio")
