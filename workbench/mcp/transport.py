"""The MCP server's stdio transport: lines in through :mod:`workbench.mcp.lines`, answers out.

It stands where the ``mcp`` library's ``stdio_server`` would, with the same streams for
``Server.run``: a line is read as bytes (at most ``max_line_bytes``; the rest of a longer one
is skipped), checked, and either handed to the library or answered here, so no request goes
unanswered. Answers from both share one writer, a line each. While it serves, fd 0 reads
``/dev/null`` and fd 1 goes to stderr (as the library arranges too), so code that reads
stdin or prints cannot take or tear a protocol line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, BinaryIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from workbench.mcp.lines import (
    INVALID_REQUEST,
    QUOTE_CHARS,
    Checked,
    check_line,
    clip,
    error_answer,
    recover_id,
)

log = logging.getLogger("workbench.mcp")

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line read whole by default: well above the largest content a tool accepts."""

RECOVER_BYTES = 1024 * 1024
"""How much of a line over the limit is kept to find its id in."""


def read_checked(stream: BinaryIO, max_line_bytes: int) -> Checked | None:
    """The next line of ``stream``, checked; None at end of input. Blocking: run in a thread."""
    line = stream.readline(max_line_bytes + 1)
    if not line:
        return None
    if len(line) <= max_line_bytes or line.endswith(b"\n"):
        return check_line(line.rstrip(b"\n").removesuffix(b"\r"))
    head, size = line[:RECOVER_BYTES], len(line)
    while not line.endswith(b"\n"):
        line = stream.readline(RECOVER_BYTES)
        if not line:
            break
        size += len(line)
    request_id = recover_id(head.decode("utf-8", errors="replace"))
    return Checked(answers=(error_answer(
        request_id, INVALID_REQUEST,
        f"invalid request: the line is at least {size:,} bytes, over the limit of "
        f"{max_line_bytes:,}; send less content per call"),))


def encode(item: Any) -> bytes:
    """One answer as a protocol line: the library's messages as it would write them, with
    any text an error quotes cut to a few hundred characters (the library's "method not
    found" quotes the method whole); this transport's own refusals as they are."""
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError

    if not isinstance(item, SessionMessage):
        return json.dumps(item, separators=(",", ":")).encode() + b"\n"
    message = item.message
    if isinstance(message, JSONRPCError):
        error = message.error
        update: dict[str, Any] = {}
        if len(error.message) > 3 * QUOTE_CHARS:
            update["message"] = error.message[:3 * QUOTE_CHARS] + "…"
        if isinstance(error.data, str) and len(error.data) > QUOTE_CHARS:
            update["data"] = clip(error.data)
        if update:
            message = message.model_copy(update={"error": error.model_copy(update=update)})
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def _write_line(stdout: BinaryIO, line: bytes) -> None:
    stdout.write(line)
    stdout.flush()


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The protocol's stdin and stdout on private descriptors, with fd 0 on ``/dev/null``
    and fd 1 on stderr until the server is done."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    # Never closed: a reader thread may still be blocked on wire_in when serving ends, and
    # a closed descriptor could be reused under it.
    stdin = os.fdopen(wire_in, "rb", closefd=False)
    stdout = os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield stdin, stdout
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)


@asynccontextmanager
async def stdio_transport(max_line_bytes: int = MAX_LINE_BYTES) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[Any]]]:
    """The read and write streams ``Server.run`` takes, served over this process's stdio."""
    from mcp.shared.message import SessionMessage

    to_server, from_stdin = anyio.create_memory_object_stream[Any](0)
    to_stdout, outgoing = anyio.create_memory_object_stream[Any](16)
    refusals = to_stdout.clone()

    with claimed_stdio() as (stdin, stdout):

        async def reader() -> None:
            async with to_server, refusals:
                while True:
                    checked = await anyio.to_thread.run_sync(
                        read_checked, stdin, max_line_bytes, abandon_on_cancel=True)
                    if checked is None:
                        return
                    for answer in checked.answers:
                        log.warning("refused a line: %s", answer["error"]["message"])
                        await refusals.send(answer)
                    if checked.ignored is not None:
                        log.warning("ignored a line: %s", checked.ignored)
                    if checked.message is not None:
                        await to_server.send(SessionMessage(checked.message))

        async def writer() -> None:
            async with outgoing:
                async for item in outgoing:
                    await anyio.to_thread.run_sync(_write_line, stdout, encode(item))

        async with anyio.create_task_group() as tasks:
            reading = anyio.CancelScope()

            async def read_until_cancelled() -> None:
                with reading:
                    await reader()

            tasks.start_soon(read_until_cancelled)
            tasks.start_soon(writer)
            try:
                yield from_stdin, to_stdout
            finally:
                reading.cancel()
                await to_stdout.aclose()
