"""The tools of this component, written with `mcp_tool.py`: each decorated
function is a tool, its parameters the input schema."""

import time
from typing import Annotated, Literal

from mcp_tool import Context, Tool, tool

__all__ = ["Tool"]  # what componentize-py exports as mcp:tool/tool


@tool(read_only=True)
def greet(name: Annotated[str, "Who to greet"], style: Literal["plain", "excited"] = "plain") -> str:
    """Greets someone by name."""
    return f"Hello, {name}{'!' if style == 'excited' else '.'}"


@tool(read_only=True)
def count(ctx: Context, to: Annotated[int, {"minimum": 1, "maximum": 100}] = 10) -> str:
    """Counts to `to`, one number a second, reporting progress; stops when cancelled."""
    for n in range(1, to + 1):
        ctx.check_cancelled()
        time.sleep(1)
        ctx.progress(n, to)
    return f"counted to {to}"
