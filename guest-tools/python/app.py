"""The example tools in Python: the same names and behaviours as the Rust
`demo` component and the JavaScript example, so one test runs the same
assertions against each (tests/e2e/languages.rs).

- `echo`: returns its `text` as structured content (a dataclass, so the
  tool has an output schema);
- `countdown`: works in steps, reports progress, logs, checks `cancelled`
  between steps and stops early (the cooperative case);
- `wait_for_cancel`: parks on the `cancelled` pollable until cancelled;
- `spin`: ignores cancellation and computes forever, holding
  `<call-id>.lock` in the granted directory; the host stops it and
  `cleanup` removes the lock;
- `survey`: asks the user `questions` questions in a row (elicitation);
- `plan_trip`: names the client's roots, then asks the user and the model
  at once (`Context.ask`);
- `delete_records`: the user must approve every call (declared);
- `prune`: asks the user's approval mid-call, holding `<call-id>.lock`;
- `stats`: structured output from a dataclass, with list, Optional and
  Literal arguments.

Besides the tools, a resource, a resource template and a prompt, named
`py://...` and `py_...` so they do not clash with the JavaScript example's
when both are served:

- `py://examples/about` (text/plain): what this component is;
- `py://tables/{table}` (application/json): the columns of a (pretend)
  table, `table` completed from the tables there are;
- `py_review_table` (`table`, required and completed; `depth`, optional):
  asks the model to review a table's columns.

Built against guest-tools/wit-examples (the contract plus
`wasi:filesystem/preopens`, to find the granted directory):

    componentize-py -d ../wit-examples -w example-tools componentize app -o python-tool.wasm
"""

import json
import os
import statistics
import time
from dataclasses import dataclass
from typing import Annotated, Literal, Optional

from mcp_tool import (
    Completion,
    Context,
    Form,
    InvalidArguments,
    NotApproved,
    NotFound,
    Prompts,
    RequestFailed,
    Resources,
    Sample,
    Tasks,
    Tool,
    ToolError,
    embedded,
    on_cleanup,
    prompt,
    resource,
    resource_template,
    tool,
    user,
)
from wit_world.imports import preopens

# What componentize-py exports as mcp:tool/tool, resources, prompts, completion and tasks.
__all__ = ["Completion", "Prompts", "Resources", "Tasks", "Tool"]


@dataclass
class Echoed:
    text: str


# Never a task: it answers at once, so a task would only add polling.
@tool(read_only=True, destructive=False, idempotent=True, open_world=False, tasks="forbidden")
def echo(text: Annotated[str, "Text to return"]) -> Echoed:
    """Returns the text it is given."""
    return Echoed(text=text)


@tool(read_only=True, destructive=False, idempotent=True, open_world=False)
def countdown(
    ctx: Context,
    steps: Annotated[int, {"minimum": 0, "maximum": 100000}] = 50,
    step_ms: Annotated[int, {"minimum": 0, "maximum": 60000}] = 20,
    quiet: Annotated[bool, "Report no progress and log nothing (benchmarks compare both)"] = False,
) -> str:
    """Counts down from `steps`, one step every `step_ms` milliseconds; stops early when cancelled."""
    for left in range(steps, 0, -1):
        ctx.check_cancelled()
        # Goes to the host's log on stderr, never to the MCP stream.
        print(f"countdown: {left}")
        time.sleep(step_ms / 1000)
        if not quiet:
            ctx.progress(steps - left + 1, steps, f"{left} to go")
    if not quiet:
        ctx.log(f"counted down from {steps}", logger="countdown")
    return f"counted down from {steps}"


@tool(read_only=True, destructive=False, idempotent=True, open_world=False)
def wait_for_cancel(ctx: Context) -> str:
    """Waits, parked in wasi:io/poll on its `cancelled` pollable, until the call is cancelled."""
    ctx.wait_for_cancel()
    return "unreachable"


# Destructive (it holds external state), but only a demo of cancellation:
# it says so rather than asking every time.
@tool(read_only=False, destructive=True, idempotent=False, open_world=False, needs_approval=False)
def spin(ctx: Context) -> str:
    """Computes forever and ignores cancellation; holds <call-id>.lock in the granted directory."""
    hold_lock(ctx.call_id)
    x = 1
    while True:
        x = (x * 6364136223846793005 + 1) & 0xFFFFFFFFFFFFFFFF


@tool(read_only=True, destructive=False, idempotent=True, open_world=False)
def survey(ctx: Context, questions: Annotated[int, {"minimum": 1, "maximum": 20}] = 3) -> str:
    """Asks the user `questions` short questions in a row and returns the answers."""
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "title": "Answer"}},
        "required": ["answer"],
    }
    answers = []
    for n in range(1, questions + 1):
        try:
            answer = ctx.elicit(f"Question {n} of {questions}: what should happen next?", schema)
        except RequestFailed as failed:
            if failed.kind == "unsupported":
                raise ToolError("this client cannot ask the user questions") from None
            if failed.kind == "timed-out":
                raise ToolError(f"no answer to question {n} in time") from None
            raise
        if not answer.accepted:
            return f"the user stopped after {len(answers)} answers"
        answers.append(answer.content.get("answer", ""))
        ctx.check_cancelled()
    return "\n".join(answers)


@tool(read_only=True, destructive=False, idempotent=True, open_world=False)
def plan_trip(ctx: Context) -> str:
    """Asks the user where to go and the model for an idea at once, and names the client's roots."""
    roots = ctx.list_roots()
    answers = ctx.ask(
        {
            "where": Form("Where to?", {"type": "object", "properties": {"answer": {"type": "string"}}}),
            "idea": Sample({"messages": [{"role": "user", "content": {"type": "text", "text": "An idea?"}}], "maxTokens": 20}),
        }
    )
    where, idea = answers["where"], answers["idea"]
    if isinstance(where, Exception) or isinstance(idea, Exception):
        raise ToolError(f"no answer: {where if isinstance(where, Exception) else idea}")
    names = ", ".join(root["name"] or root["uri"] for root in roots)
    return f"roots: {names}; where: {where.content['answer']}; idea: {idea['content']['text']}"


@tool(read_only=False, destructive=True, idempotent=False, open_world=False, needs_approval=True)
def delete_records(table: Annotated[str, "Which table to empty"]) -> str:
    """Deletes every record of `table` (pretend). The user must approve each call first."""
    # Only reached once the user approved (the host asked first).
    return f"deleted every record of {table}"


# Finding is harmless; only the one step that deletes asks.
@tool(read_only=False, destructive=False, idempotent=False, open_world=False)
def prune(ctx: Context, count: Annotated[int, {"minimum": 1, "maximum": 1000}] = 3) -> str:
    """Finds `count` old snapshots, then asks the user's approval before deleting them.
    Holds <call-id>.lock in the granted directory meanwhile."""
    # Stands in for a lock or transaction held while the user decides. If the
    # call is stopped while waiting, `cleanup` releases it.
    hold_lock(ctx.call_id)
    try:
        ctx.request_approval(f"Delete {count} old snapshots for good?")
    except NotApproved as why:
        release_lock(ctx.call_id)
        raise ToolError(f"nothing pruned: {why}") from None
    release_lock(ctx.call_id)
    return f"pruned {count} snapshots"


@dataclass
class Stats:
    count: int
    total: float
    mean: Optional[float]
    median: Optional[float]
    order: list[float]


@tool(read_only=True, destructive=False, idempotent=True, open_world=False)
def stats(
    numbers: Annotated[list[float], "The numbers to describe"],
    order: Literal["ascending", "descending"] = "ascending",
    digits: Annotated[Optional[int], {"minimum": 0, "maximum": 12}] = None,
) -> Stats:
    """Counts, sums and averages `numbers`, and sorts them."""

    def rounded(value: float) -> float:
        return value if digits is None else round(value, digits)

    return Stats(
        count=len(numbers),
        total=rounded(sum(numbers)),
        mean=rounded(statistics.fmean(numbers)) if numbers else None,
        median=rounded(statistics.median(numbers)) if numbers else None,
        order=sorted(numbers, reverse=order == "descending"),
    )


@resource("py://examples/about", name="about", mime_type="text/plain")
def about() -> str:
    """What this component is."""
    return "The Python example tools for mcp-wasm-host, built with componentize-py."


# The (pretend) tables `delete_records` empties, and their columns.
TABLES = {
    "customers": {"id": "integer", "name": "text", "email": "text"},
    "orders": {"id": "integer", "customer_id": "integer", "total": "numeric"},
    "order_items": {"order_id": "integer", "sku": "text", "quantity": "integer"},
}


@resource_template(
    "py://tables/{table}",
    name="table",
    mime_type="application/json",
    complete={"table": sorted(TABLES)},
)
def table_columns(table: str) -> dict:
    """The columns of a table, by name, with their types."""
    if table not in TABLES:
        raise NotFound()
    return {"table": table, "columns": TABLES[table]}


@prompt(name="py_review_table", complete={"table": sorted(TABLES)})
def review_table(
    table: Annotated[str, "The table to review"],
    depth: Annotated[Literal["quick", "thorough"], "How closely to look"] = "quick",
) -> list:
    """Asks for a review of a table's columns: names, types, what is missing."""
    if table not in TABLES:
        raise InvalidArguments(f"there is no table {table!r}")
    columns = json.dumps({"table": table, "columns": TABLES[table]}, separators=(",", ":"))
    return [
        user(f"Please give the columns of `{table}` a {depth} review: names, types, what is missing."),
        user(embedded(f"py://tables/{table}", columns, "application/json")),
    ]


@on_cleanup
def release(call_id: str, reason: str) -> None:
    """Removes the call's lock, if it left one (already gone is fine)."""
    print(f"cleanup {call_id}: {reason}")
    release_lock(call_id)


def lock_path(call_id: str) -> Optional[str]:
    """`<call-id>.lock` in the directory the user granted (the first), if any."""
    granted = preopens.get_directories()
    if not granted:
        return None
    return f"{granted[0][1].rstrip('/')}/{call_id}.lock"


def hold_lock(call_id: str) -> None:
    path = lock_path(call_id)
    if path is not None:
        with open(path, "w") as lock:
            lock.write(call_id)


def release_lock(call_id: str) -> None:
    path = lock_path(call_id)
    if path is not None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
