"""What this component offers, written with `mcp_tool.py`: each decorated
function is a tool (its parameters the input schema), a resource (a
`skill://` one is part of a skill) or a prompt (its parameters the prompt's
arguments)."""

import time
from typing import Annotated, Literal

from mcp_tool import Completion, Context, Prompts, Resources, Tasks, Tool, prompt, resource, tool, user

# What componentize-py exports as mcp:tool/tool, resources, prompts, completion and tasks.
__all__ = ["Completion", "Prompts", "Resources", "Tasks", "Tool"]


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


@resource("greet://styles", name="styles", mime_type="text/plain")
def styles() -> str:
    """The greeting styles `greet` knows."""
    return "plain: Hello, NAME.\nexcited: Hello, NAME!"


@resource("skill://greeting/SKILL.md", name="greeting", mime_type="text/markdown")
def greeting_skill() -> str:
    """A skill (SEP-2640): when a model should use `greet`. The host hashes it at load."""
    return "---\nname: greeting\ndescription: Greets people by name with the greet tool.\n---\nCall `greet` with their name.\n"


@prompt
def welcome(
    name: Annotated[str, "Who to welcome"],
    style: Annotated[Literal["plain", "excited"], "How to greet them"] = "plain",
) -> list:
    """Asks the model to welcome someone with the `greet` tool."""
    return [user(f"Welcome {name} to the team: greet them with `greet` ({style}), then add a kind word.")]
