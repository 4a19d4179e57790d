"""``workbench bench frameworks``: what keeping an agent's memory in the engine costs per
turn, beside each framework's own SQLite memory.

LangGraph: a real graph (``MessagesState``, one node calling langchain-core's
``GenericFakeChatModel``) runs ``turns`` turns on one thread, each adding a user and an
assistant message, so each checkpoint's ``messages`` channel grows as a real agent's does. A
wrapping checkpointer times the graph's ``aput`` and ``aput_writes`` calls; a turn's figure is
their sum. The same graph runs on LangGraph's ``AsyncSqliteSaver`` (a fresh file) and on
``WorkbenchSaver`` (a fresh SQLite memory).

Agents SDK: each turn ``add_items`` a user and an assistant item, then ``get_items()`` the
whole session (what ``Runner.run`` does with a session), on the SDK's ``SQLiteSession`` (a
file) and on ``WorkbenchSession`` (a fresh SQLite memory).

Ours is measured with the engine as configured (the default here: the deterministic
embedder, its worker on), then with the embedding worker off (chunks and full text are still
written in the turn's transaction; what changes is the worker embedding alongside), and with
``--model`` a model2vec model embedding: the differences say where our time goes.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.embeddings.worker import GATHER_AT_MOST_SECONDS
from core.summary.service import QUIET_AT_MOST_SECONDS as SUMMARY_AT_MOST_SECONDS
from core.upkeep import LOG_BUSY_SECONDS
from workbench.bench.measure import percentile
from workbench.bench.synthetic import conversation

LANGGRAPH = "langgraph"
OPENAI_AGENTS = "openai-agents"
GOAL_RATIO = 2.0  # the goal: ours within 2x of the framework's own at p95
THEIRS = "theirs"
OURS = "ours"
WORKER_OFF = "ours, embedding worker off"


def turn_texts(turns: int, seed: int = 11) -> list[tuple[str, str]]:
    """``turns`` (user, assistant) texts with the shapes of agent transcripts, seeded."""
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    user: str | None = None
    while len(pairs) < turns:
        for message in conversation(rng, 40):
            content = message.get("content")
            if not isinstance(content, str):
                continue
            if message["role"] == "user":
                user = content
            elif message["role"] == "assistant" and user is not None:
                pairs.append((user, content))
                user = None
    return pairs[:turns]


@dataclass
class FrameworksFigures:
    """Per-turn milliseconds of one ``bench frameworks`` run, by framework and side."""

    turns: int
    model: str | None
    langgraph: dict[str, list[float]] = field(default_factory=dict)
    agents: dict[str, list[float]] = field(default_factory=dict)
    agents_missing: str | None = None

    def lines(self) -> list[str]:
        """The figures as the lines the command prints: one per side, p50 and p95."""
        out = [f"turns         {self.turns} per run, one thread/session, a fresh SQLite file "
               "per run; times per turn in ms"]
        out += _framework_lines(LANGGRAPH, "aput + aput_writes", self.langgraph,
                                "AsyncSqliteSaver", "WorkbenchSaver")
        out += _framework_lines(OPENAI_AGENTS, "add_items + get_items", self.agents,
                                "SQLiteSession", "WorkbenchSession")
        if self.agents_missing is not None:
            out.append(f"{OPENAI_AGENTS:<14}{self.agents_missing}")
        out.append(f"{'where':<14}'worker off' takes the embedding worker away (chunks and "
                   "full text are still written in the turn's transaction)"
                   + ("; the model line embeds with " + self.model if self.model else ""))
        out.append(f"{'':<14}the turns run back to back: the worker's embedding (within "
                   f"{GATHER_AT_MOST_SECONDS:g} s) and a session's summary check (within "
                   f"{SUMMARY_AT_MOST_SECONDS:g} s) wait for a pause, as an agent's wait for "
                   "its model gives them; the log's copy into the file runs beside the turns "
                   f"(after a pause, or every {LOG_BUSY_SECONDS:g} s of writes that never pause)")
        return out


def _framework_lines(framework: str, what: str, sides: dict[str, list[float]],
                     theirs_name: str, ours_name: str) -> list[str]:
    names = {THEIRS: f"{theirs_name} (theirs)", OURS: f"{ours_name} (ours)"}
    out = []
    for side, values in sides.items():
        label = names.get(side, side)
        out.append(f"{framework:<14}{label:<44}p50 {percentile(values, .5):9.3f} ms  "
                   f"p95 {percentile(values, .95):9.3f} ms  {what}")
    if THEIRS in sides and OURS in sides:
        theirs, ours = sides[THEIRS], sides[OURS]
        p50 = percentile(ours, .5) / percentile(theirs, .5)
        p95 = percentile(ours, .95) / percentile(theirs, .95)
        met = "goal met" if p95 <= GOAL_RATIO else "goal missed"
        out.append(f"{framework:<14}{'ours/theirs':<44}p50 {p50:9.2f} x   p95 {p95:9.2f} x   "
                   f"(goal: within {GOAL_RATIO:g}x at p95: {met})")
    return out


# --- LangGraph ---------------------------------------------------------------------------

def timed_checkpointer(inner: Any) -> Any:
    """A checkpointer handing every call to ``inner``, adding the seconds its ``aput`` and
    ``aput_writes`` took to ``.spent``."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    class TimedSaver(BaseCheckpointSaver[Any]):
        def __init__(self) -> None:
            super().__init__(serde=inner.serde)
            self.spent = 0.0

        async def aget_tuple(self, config: Any) -> Any:
            return await inner.aget_tuple(config)

        def alist(self, config: Any, **options: Any) -> AsyncIterator[Any]:
            return inner.alist(config, **options)  # type: ignore[no-any-return]

        async def aput(self, config: Any, checkpoint: Any, metadata: Any,
                       new_versions: Any) -> Any:
            start = time.perf_counter()
            try:
                return await inner.aput(config, checkpoint, metadata, new_versions)
            finally:
                self.spent += time.perf_counter() - start

        async def aput_writes(self, config: Any, writes: Sequence[tuple[str, Any]],
                              task_id: str, task_path: str = "") -> None:
            start = time.perf_counter()
            try:
                await inner.aput_writes(config, writes, task_id, task_path)
            finally:
                self.spent += time.perf_counter() - start

        def get_next_version(self, current: Any, channel: None = None) -> Any:
            return inner.get_next_version(current, channel)

    return TimedSaver()


def chat_graph(checkpointer: Any, answers: Iterator[str], store: Any = None) -> Any:
    """A compiled one-node ``MessagesState`` graph whose model answers from ``answers``."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    model = GenericFakeChatModel(messages=(AIMessage(content=text) for text in answers))

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_edge(START, "model")
    return builder.compile(checkpointer=checkpointer, store=store)


async def langgraph_turns(checkpointer: Any, texts: list[tuple[str, str]],
                          thread_id: str = "bench-thread") -> list[float]:
    """Per-turn ms of ``aput`` + ``aput_writes`` on ``checkpointer``, the graph running
    ``texts`` on one thread."""
    from langchain_core.messages import HumanMessage

    timed = timed_checkpointer(checkpointer)
    graph = chat_graph(timed, iter([answer for _, answer in texts]))
    config = {"configurable": {"thread_id": thread_id}}
    spent: list[float] = []
    for user, _ in texts:
        timed.spent = 0.0
        await graph.ainvoke({"messages": [HumanMessage(content=user)]}, config,
                            durability="sync")
        spent.append(timed.spent * 1000)
    return spent


async def their_langgraph(folder: Path, texts: list[tuple[str, str]]) -> list[float]:
    """LangGraph's own AsyncSqliteSaver on a fresh file."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(folder / "langgraph.sqlite")) as saver:
        return await langgraph_turns(saver, texts)


# --- Agents SDK --------------------------------------------------------------------------

def user_item(text: str) -> dict[str, Any]:
    """A user input item as ``Runner.run`` stores it."""
    return {"role": "user", "content": text}


def assistant_item(text: str, turn: int) -> dict[str, Any]:
    """An assistant output message item as a Responses model returns it."""
    return {"id": f"msg_{turn:08d}", "type": "message", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


async def session_turns(session: Any, texts: list[tuple[str, str]]) -> list[float]:
    """Per-turn ms of ``add_items`` (user + assistant item) + ``get_items()``."""
    spent: list[float] = []
    for turn, (user, answer) in enumerate(texts):
        start = time.perf_counter()
        await session.add_items([user_item(user), assistant_item(answer, turn)])
        await session.get_items()
        spent.append((time.perf_counter() - start) * 1000)
    return spent


async def their_agents(folder: Path, texts: list[tuple[str, str]]) -> list[float]:
    """The SDK's own SQLiteSession on a fresh file."""
    from agents import SQLiteSession

    session = SQLiteSession("bench-session", db_path=folder / "agents.sqlite")
    try:
        return await session_turns(session, texts)
    finally:
        session.close()


SessionFactory = Callable[[str, Any], Any]
"""(session_id, engine) -> an Agents SDK session: WorkbenchSession's signature."""


def workbench_session_factory() -> SessionFactory:
    """WorkbenchSession; ImportError when this install has none."""
    from core.integrations.openai_agents import WorkbenchSession

    return WorkbenchSession  # type: ignore[no-any-return]


# --- the run -----------------------------------------------------------------------------

@asynccontextmanager
async def fresh_engine(folder: Path, name: str, config: Any,
                       worker: bool) -> AsyncIterator[Any]:
    """An engine on a new SQLite memory in ``folder``."""
    from core import Engine

    async with Engine.open(folder / f"{name}.db", config, start_worker=worker) as engine:
        yield engine


async def run_frameworks_bench(config: Any, turns: int, *, model_config: Any = None,
                               model: str | None = None,
                               session_factory: SessionFactory | None = None,
                               say: Callable[[str], None] = print) -> FrameworksFigures:
    """Time ``turns`` turns on each framework's own SQLite memory and on ours (``config``;
    worker off; ``model_config`` when given). ``session_factory``: the session measured as
    ours on the Agents SDK side (default: WorkbenchSession, when installed)."""
    from core.integrations.langgraph import WorkbenchSaver

    texts = turn_texts(turns)
    figures = FrameworksFigures(turns=turns, model=model)
    if session_factory is None:
        try:
            session_factory = workbench_session_factory()
        except ImportError:
            figures.agents_missing = ("WorkbenchSession: not installed on this branch "
                                      "(core.integrations.openai_agents); ours not measured")
    ours: list[tuple[str, Any, bool]] = [(OURS, config, True), (WORKER_OFF, config, False)]
    if model_config is not None:
        ours.append((f"ours, model2vec {Path(str(model)).name[:24]}", model_config, True))
    with tempfile.TemporaryDirectory(prefix="workbench-bench-frameworks-") as where:
        folder = Path(where)
        say(f"langgraph: AsyncSqliteSaver, {turns} turns")
        figures.langgraph[THEIRS] = await their_langgraph(folder, texts)
        for index, (side, side_config, worker) in enumerate(ours):
            say(f"langgraph: WorkbenchSaver ({side}), {turns} turns")
            async with fresh_engine(folder, f"langgraph-{index}", side_config,
                                    worker) as engine:
                figures.langgraph[side] = await langgraph_turns(WorkbenchSaver(engine), texts)
        say(f"openai-agents: SQLiteSession, {turns} turns")
        figures.agents[THEIRS] = await their_agents(folder, texts)
        if session_factory is not None:
            for index, (side, side_config, worker) in enumerate(ours):
                say(f"openai-agents: session ({side}), {turns} turns")
                async with fresh_engine(folder, f"agents-{index}", side_config,
                                        worker) as engine:
                    figures.agents[side] = await session_turns(
                        session_factory("bench-session", engine), texts)
    return figures
