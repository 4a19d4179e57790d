"""``workbench bench frameworks --run-turns N --file F``: an agent talking into a memory at a
pace a person can watch, then a check that the memory holds the conversation.

LangGraph: the one-node ``MessagesState`` graph with a fake chat model, compiled with
``WorkbenchSaver`` and ``WorkbenchStore`` (each turn also puts a note the Notes pane shows).
Agents SDK: an ``Agent`` with a model of our own answering from a list, ``Runner.run`` with a
``WorkbenchSession``; tracing off, nothing touches the network. Open the app on the same
file (``workbench F``) while it runs: each turn's messages appear in the Sessions pane.

Afterwards the session's events are read back (``engine.recall``) and compared with what the
agent said: every user and assistant message once, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.bench.frameworks import LANGGRAPH, OPENAI_AGENTS, chat_graph, turn_texts

if TYPE_CHECKING:
    from core.engine import Engine

THREAD = "bench-langgraph-thread"
SESSION = "bench-agents-session"


@dataclass
class RunReport:
    """What a driven run wrote and what reading it back found."""

    framework: str
    session_id: str
    turns: int
    file: str
    expected: int
    found: int
    problems: list[str] = field(default_factory=list)
    notes: int | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        out = [f"run           {self.turns} turns of {self.framework} into {self.file}, "
               f"session {self.session_id}"]
        if self.notes is not None:
            out.append(f"store         {self.notes} notes put through WorkbenchStore")
        if self.passed:
            out.append(f"verified      {self.expected} messages recalled, each once, in order")
        else:
            out.append(f"FAILED        {self.found} messages recalled, {self.expected} "
                       f"expected: {len(self.problems)} problems")
            out += [f"  {problem}" for problem in self.problems[:20]]
        return out


def _text(content: Any) -> str:
    """A stored event's content as plain text (a string, or a list's text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict))
    return ""


def check_conversation(payloads: list[dict[str, Any]],
                       texts: list[tuple[str, str]]) -> list[str]:
    """What differs between the recalled events' (role, text) and the turns' user and
    assistant messages, in order; empty when each appears once, in order."""
    expected = [pair for user, answer in texts
                for pair in (("user", user.strip()), ("assistant", answer.strip()))]
    found = [(str(p.get("role")), _text(p.get("content")).strip()) for p in payloads
             if p.get("role") in ("user", "assistant")]
    problems = []
    for index in range(max(len(expected), len(found))):
        want = expected[index] if index < len(expected) else None
        got = found[index] if index < len(found) else None
        if want != got:
            problems.append(f"message {index + 1}: expected {_short(want)}, found {_short(got)}")
    return problems


def _short(pair: tuple[str, str] | None) -> str:
    if pair is None:
        return "nothing"
    role, text = pair
    return f"{role} {text[:60]!r}"


async def _paced(texts: list[tuple[str, str]], pause: float,
                 say: Callable[[str], None]) -> AsyncIterator[tuple[int, str]]:
    for turn, (user, _) in enumerate(texts):
        if turn and pause:
            await asyncio.sleep(pause)
        say(f"turn {turn + 1}/{len(texts)}")
        yield turn, user


async def drive_langgraph(engine: Engine, texts: list[tuple[str, str]], pause: float,
                          say: Callable[[str], None]) -> int:
    """Run the graph on ``THREAD``; the notes it put through the store."""
    from langchain_core.messages import HumanMessage

    from core.integrations.langgraph import WorkbenchSaver, WorkbenchStore

    store = WorkbenchStore(engine)
    graph = chat_graph(WorkbenchSaver(engine), iter([answer for _, answer in texts]),
                       store=store)
    config = {"configurable": {"thread_id": THREAD}}
    async for turn, user in _paced(texts, pause, say):
        await graph.ainvoke({"messages": [HumanMessage(content=user)]}, config)
        await store.aput(("bench", THREAD), f"turn-{turn + 1:04d}", {"asked": user[:200]})
    return len(await store.asearch(("bench", THREAD), limit=len(texts) + 1))


def canned_model(answers: list[str]) -> Any:
    """An Agents SDK Model answering each call with the next of ``answers``."""
    from agents import ModelResponse, Usage
    from agents.models.interface import Model
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class Canned(Model):
        def __init__(self) -> None:
            self.answers = iter(answers)
            self.calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            text = next(self.answers)
            self.calls += 1
            message = ResponseOutputMessage(
                id=f"msg_canned_{self.calls:06d}", type="message", role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("this canned model answers get_response only")

    return Canned()


async def drive_agents(engine: Engine, texts: list[tuple[str, str]], pause: float,
                       say: Callable[[str], None]) -> None:
    """Run an Agent over ``SESSION`` with a canned model."""
    from agents import Agent, Runner, set_tracing_disabled

    from core.integrations.openai_agents import WorkbenchSession

    set_tracing_disabled(True)
    agent = Agent(name="bench", instructions="Answer briefly.",
                  model=canned_model([answer for _, answer in texts]))
    session = WorkbenchSession(SESSION, engine)
    async for _, user in _paced(texts, pause, say):
        await Runner.run(agent, user, session=session)


async def run_turns(config: Any, file: Path, framework: str, turns: int, pause: float,
                    say: Callable[[str], None] = print) -> RunReport:
    """Drive ``turns`` turns of ``framework`` into the memory at ``file``, then check it."""
    from core import Engine

    texts = turn_texts(turns)
    session_id = THREAD if framework == LANGGRAPH else SESSION
    notes = None
    async with Engine.open(file, config) as engine:
        if await engine.recall(session_id, 1):
            raise FileExistsError(f"{file} already holds session {session_id}: drive a new "
                                  "file, or forget that session first")
        if framework == LANGGRAPH:
            notes = await drive_langgraph(engine, texts, pause, say)
        elif framework == OPENAI_AGENTS:
            await drive_agents(engine, texts, pause, say)
        else:
            raise ValueError(f"unknown framework {framework[:40]!r}")
        payloads = [record.payload for record in await engine.recall(session_id)]
    problems = check_conversation(payloads, texts)
    if notes is not None and notes != turns:
        problems.append(f"store: {notes} notes found, {turns} put")
    found = sum(1 for p in payloads if p.get("role") in ("user", "assistant"))
    return RunReport(framework=framework, session_id=session_id, turns=turns, file=str(file),
                     expected=2 * turns, found=found, problems=problems, notes=notes)
