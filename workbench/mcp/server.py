"""``workbench mcp``: the memory served over the Model Context Protocol on stdio.

An MCP-capable agent starts ``workbench mcp --db FILE|URL --namespace NS`` as a subprocess and
calls the tools in :mod:`workbench.mcp.tools`, while the developer watches the same file in
the app. The server is the low-level ``mcp`` server: the tools' JSON schemas are their
argument models', arguments are checked against them before a handler runs, and every
refusal comes back as a tool error in one line (``tool_name: what is wrong``) rather than a
protocol failure, so the agent can read it and try again. Nothing but the protocol goes to
stdout; warnings and the start-up line go to stderr.
"""

from __future__ import annotations

import json
import logging
import sys
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import click

from workbench.command_line import (
    MEMORY,
    MEMORY_HELP,
    command_config,
    echo_created,
    is_missing,
    model_option,
    open_engine,
    run_command,
    say_model_fallback,
    unlogged_warnings,
)

if TYPE_CHECKING:  # the protocol, pydantic and the tools load when the server starts
    from pydantic import ValidationError

    from core.locations import Location
    from workbench.mcp.tools import MemoryTools

log = logging.getLogger("workbench.mcp")

MAX_ERROR_CHARS = 500
"""The longest tool error sent to an agent; the input it quotes is cut to ~100 characters."""

INSTRUCTIONS = (
    "Memory for one agent namespace: saved memories by key (save_memory, recall_memories, "
    "forget_memory, list_memories), notes with tags (memory_save, memory_search, "
    "memory_update, memory_delete), a per-session scratchpad, conversations "
    "(conversation_append, conversation_get_context) and schedules.")


def argument_errors(tool: str, error: ValidationError) -> str:
    """A validation failure in one line an agent can act on: each argument and its fault."""
    from workbench.mcp.lines import clip
    from workbench.mcp.tools import TOOLS_BY_NAME

    parts = []
    for item in error.errors(include_url=False):
        where = clip(".".join(str(p) for p in item["loc"]) or "arguments")
        if item["type"] == "extra_forbidden":
            known = ", ".join(TOOLS_BY_NAME[tool].args.model_fields)
            parts.append(f"unknown argument {where} (it takes: {known})")
        elif item["type"] == "missing":
            parts.append(f"{where} is required")
        else:
            parts.append(f"{where}: {item['msg']}")
    return one_line(f"{tool}: " + "; ".join(parts))


def one_line(error: str) -> str:
    """A refusal as the agent is shown it: one line, at most :data:`MAX_ERROR_CHARS`, so an
    error that quotes its input whole cannot send a megabyte back."""
    error = " ".join(error.splitlines())
    if len(error) <= MAX_ERROR_CHARS:
        return error
    return f"{error[:MAX_ERROR_CHARS - 30]}… ({len(error):,} characters in all)"


async def call(tools: MemoryTools, name: str, arguments: dict[str, Any] | None,
               ) -> tuple[dict[str, Any] | None, str | None]:
    """Run a tool: (its result, None), or (None, the one-line error an agent is shown)."""
    from pydantic import ValidationError

    from core.errors import WorkbenchError
    from workbench.mcp.lines import clip
    from workbench.mcp.tools import TOOLS_BY_NAME

    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        return None, f"unknown tool {clip(name)}; the tools are: {', '.join(TOOLS_BY_NAME)}"
    try:
        args = tool.args.model_validate(arguments or {})
    except ValidationError as error:
        return None, argument_errors(name, error)
    try:
        return await tool.run(tools, args), None
    except WorkbenchError as error:
        return None, one_line(f"{name}: {error}")
    except Exception as error:  # a bug: the agent is told, the developer gets the traceback
        log.exception("tool %s failed", name)
        return None, one_line(f"{name}: internal error ({type(error).__name__}: {error})")


def build_server(tools: MemoryTools) -> Any:
    """The MCP server over one engine and namespace."""
    from mcp import types
    from mcp.server import Server

    from workbench.mcp.tools import TOOLS


    listed = [types.Tool(name=tool.name, description=tool.description,
                         input_schema=tool.input_schema()) for tool in TOOLS]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result, error = await call(tools, params.name, params.arguments)
        if error is not None:
            return types.CallToolResult(content=[types.TextContent(type="text", text=error)],
                                        is_error=True)
        text = json.dumps(result, ensure_ascii=False, indent=1)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result)

    return Server("memory-workbench", version=version("memory-workbench"),
                  instructions=f"{INSTRUCTIONS} Namespace: {tools.namespace}.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(db: Location | None, namespace: str, config: Any) -> None:
    """Open the memory (a file is created when missing; None: the config's [storage] url)
    and serve it until stdin closes.

    The model loads before the server answers, so what start-up has to say (a fallback
    model, or the refusal ``embedding.on_missing_model = "refuse"`` makes) is on stderr
    before the first tool call rather than in that call's error."""
    from core.inputs import clean_namespace
    from workbench.mcp.tools import TOOLS, MemoryTools
    from workbench.mcp.transport import stdio_transport

    namespace = clean_namespace(namespace)
    created = db is not None and is_missing(db)
    async with open_engine(db, config, writes=True, serves=True) as engine:
        if created and db is not None:
            echo_created(db)
        say_model_fallback()
        for warning in unlogged_warnings(engine):
            click.echo(f"warning: {warning}", err=True)
        server = build_server(MemoryTools(engine, namespace))
        click.echo(f"workbench mcp: serving {engine.location} as namespace {namespace!r} on stdio "
                   f"({len(TOOLS)} tools)", err=True)
        async with stdio_transport() as (read, write):
            await server.run(read, write, server.create_initialization_options())


@click.command("mcp")
@click.option("--db", "db", type=MEMORY, default=None,
              help=f"{MEMORY_HELP} to serve (a file is created when missing; default: the "
                   "config's [storage] url).")
@click.option("--namespace", required=True,
              help="The agent namespace every tool works in; no tool reaches another.")
@model_option
@click.pass_context
def mcp_command(ctx: click.Context, db: Location | None, namespace: str,
                model: str | None) -> None:
    """Serve the memory to an agent over MCP on stdio, bound to one namespace.

    Tools: save_memory, recall_memories, forget_memory, list_memories, memory_save,
    memory_search, memory_update, memory_delete, scratchpad_read/write/clear,
    conversation_append, conversation_get_context, schedule_create/list/update/delete.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="workbench mcp: %(levelname)s %(message)s")
    config = command_config(ctx, model)
    run_command(serve(db, namespace, config))
