"""Evaluation: LoCoMo conversion, the dataset format, metrics, eval runs and the CLI."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.errors import InvalidInput
from core.evaluation import (
    convert_locomo_file,
    evaluate,
    expand_turns,
    read_dataset,
    score_query,
    store_dataset,
    sweep,
)
from core.evaluation.dataset import write_dataset
from core.evaluation.locomo import convert_locomo
from core.evaluation.metrics import (
    hit_at,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    summarize,
)
from core.types import HybridQueryResult, MemoryRecord
from tests.conftest import DETERMINISTIC
from workbench.cli.root import main

LOCOMO_DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo-dev"


def tiny_locomo() -> dict[str, Any]:
    """A LoCoMo-shaped conversation: two sessions, eight turns, an image, five questions."""
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:00 pm on 1 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a beagle named Max."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congratulations! I started pottery."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "Max loves the park by the river.",
             "img_url": ["https://example.invalid/dog.jpg"], "query": "dog park",
             "blip_caption": "a photo of a dog running on grass"},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "My pottery teacher is called Rosa."},
        ],
        "session_2_date_time": "9:00 am on 20 May, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I fired my first bowl in the kiln."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Max chewed my violin case."},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "Rosa says glazing comes next."},
            {"speaker": "Ana", "dia_id": "D2:4", "text": "I am training Max to sit."},
        ],
        # 26.json has dates of sessions whose turns are not in the file.
        "session_3_date_time": "2:00 pm on 2 June, 2023",
        "session_1_observation": {"Ana": [["OBSERVED Ana adopted a beagle.", "D1:1"]]},
        "session_1_summary": "SUMMARISED Ana told Ben about her dog.",
        "events_session_1": {"Ana": ["EVENT Ana adopts Max."], "Ben": [], "date": "1 May"},
        "qa": [
            {"question": "What is the name of Ana's dog?", "answer": "Max",
             "evidence": ["D1:1"], "category": 4},
            {"question": "What did Ben make in pottery?", "answer": "a bowl",
             "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "Where does Max like to run?", "answer": 2023,
             "evidence": ["D1:3", "D9:9"], "category": 2},
            {"question": "What is the name of Ben's dog?", "adversarial_answer": "Max",
             "evidence": ["D1:1"], "category": 5},
            {"question": "Would Ana call herself a dog person?", "answer": "yes",
             "evidence": [], "category": 3},
        ],
    }


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "77.json"
    path.write_text(json.dumps(tiny_locomo()))
    return path


# -- LoCoMo conversion ------------------------------------------------------------------------


def test_turns_become_one_session_in_order(locomo_file: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    assert conversion.session_id == "locomo-77"
    messages = conversion.dataset.messages["locomo-77"]
    assert [m.sequence for m in messages] == list(range(1, 9))
    assert [m.message_id for m in messages] == ["D1:1", "D1:2", "D1:3", "D1:4",
                                                "D2:1", "D2:2", "D2:3", "D2:4"]
    assert [m.message["role"] for m in messages[:2]] == ["user", "assistant"]
    assert messages[4].message == {
        "role": "assistant", "name": "Ben", "content": "I fired my first bowl in the kiln.",
        "metadata": {"message_id": "D2:1", "dia_id": "D2:1", "speaker": "Ben", "session": 2}}
    # A session's date-time is its turns' own time (LoCoMo names no zone: UTC).
    assert [m.created_at for m in messages] == (["2023-05-01T13:00:00.000Z"] * 4
                                                + ["2023-05-20T09:00:00.000Z"] * 4)
    assert messages[2].message["content"] == (
        "Max loves the park by the river. [image: a photo of a dog running on grass]")
    assert (conversion.sessions, conversion.turns, conversion.images) == (2, 8, 1)
    everything = json.dumps([m.to_dict() for m in messages])
    for derived in ("OBSERVED", "SUMMARISED", "EVENT", "dog park"):
        assert derived not in everything


def test_session_times_can_go_to_the_metadata_instead(locomo_file: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file, times="metadata")
    messages = conversion.dataset.messages["locomo-77"]
    assert [m.created_at for m in messages] == [None] * 8
    assert [m.message["metadata"]["session_date"] for m in messages] == (
        ["1:00 pm on 1 May, 2023"] * 4 + ["9:00 am on 20 May, 2023"] * 4)
    with pytest.raises(InvalidInput, match="times must be one of created_at, metadata"):
        convert_locomo_file(locomo_file, times="both")  # type: ignore[arg-type]


@pytest.mark.parametrize(("written", "stored"), [
    ("12:09 am on 13 September, 2023", "2023-09-13T00:09:00.000Z"),
    ("12:48 pm on 1 February, 2023", "2023-02-01T12:48:00.000Z"),
    ("7:55 PM on 9 June, 2023", "2023-06-09T19:55:00.000Z"),
    ("1:56 pm on 31 June, 2023", None),  # no such day
    ("13:10 pm on 1 June, 2023", None),
    ("sometime in June", None),
])
def test_a_session_date_time_is_read_as_utc(written: str, stored: str | None) -> None:
    record = tiny_locomo() | {"session_1_date_time": written}
    messages = convert_locomo(record, "x").dataset.messages["locomo-x"]
    assert messages[0].created_at == stored
    # One that is not a time is kept as text in the metadata, so nothing is lost.
    assert messages[0].message["metadata"].get("session_date") == (
        None if stored else written)


def test_questions_become_queries_and_evidence_problems_are_counted(locomo_file: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    queries = {q.query_id: q for q in conversion.dataset.queries}
    assert list(queries) == ["locomo-77:q1", "locomo-77:q2", "locomo-77:q3", "locomo-77:q4"]
    assert queries["locomo-77:q2"].relevant == ("D1:2", "D2:1")  # "D1:2; D2:1" split
    assert queries["locomo-77:q3"].relevant == ("D1:3",)  # D9:9 names no turn
    assert queries["locomo-77:q3"].answer == "2023"
    assert queries["locomo-77:q4"].category == "5" and queries["locomo-77:q4"].answer is None
    assert conversion.queries_by_category == {"1": 1, "2": 1, "4": 1, "5": 1}
    assert conversion.split_evidence == 1
    assert conversion.unknown_evidence == ["D9:9"]
    assert conversion.without_evidence == 1
    assert conversion.evidence_warnings == 2


def test_the_published_nested_shape_uses_its_sample_id(tmp_path: Path) -> None:
    record = {"sample_id": "conv-7", "conversation": tiny_locomo(), "qa": tiny_locomo()["qa"]}
    (path := tmp_path / "all.json").write_text(json.dumps([record]))
    (conversion,) = convert_locomo_file(path)
    assert conversion.session_id == "locomo-conv-7" and conversion.queries == 4


def test_a_turn_by_a_third_speaker_is_refused() -> None:
    record = tiny_locomo()
    record["session_2"][0]["speaker"] = "Cat"
    with pytest.raises(InvalidInput, match="D2:1 is spoken by 'Cat'"):
        convert_locomo(record, "x")


# -- the dataset format -----------------------------------------------------------------------


def test_dataset_round_trips_through_jsonl(locomo_file: Path, tmp_path: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    write_dataset(conversion.dataset, tmp_path / "d.jsonl")
    lines = (tmp_path / "d.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "message" and json.loads(lines[-1])["type"] == "query"
    again = read_dataset(tmp_path / "d.jsonl")
    assert again.messages == conversion.dataset.messages
    assert again.queries == conversion.dataset.queries
    assert again.turn_ids("locomo-77")[3] == "D1:3"


@pytest.mark.parametrize(("line", "error"), [
    ('{"type": "query", "query_id": "q", "session_id": "s", "query": "x", "relevant": ["m9"]}',
     "names messages not in session 's': m9"),
    ('{"type": "message", "session_id": "s", "message_id": "m1", "sequence": 2, "message": {}}',
     "message_id 'm1' repeats"),
    ('{"type": "query", "query_id": "q", "session_id": "s", "query": "x", "relevant": []}',
     "relevant must be a non-empty list"),
    ('{"type": "note"}', "type must be 'message' or 'query'"),
    ("not json", "not JSON"),
    ('{"type": "message", "session_id": "s", "message_id": "m2", "sequence": 2, '
     '"message": {"role": "user", "content": "hi"}, "created_at": "2023-05-01 13:00:00"}',
     "created_at '2023-05-01 13:00:00' has no UTC offset"),
])
def test_a_bad_dataset_line_is_named(tmp_path: Path, line: str, error: str) -> None:
    first = '{"type": "message", "session_id": "s", "message_id": "m1", "sequence": 1, ' \
            '"message": {"role": "user", "content": "hi"}}'
    (path := tmp_path / "bad.jsonl").write_text(first + "\n" + line + "\n")
    with pytest.raises(InvalidInput, match=error) as raised:
        read_dataset(path)
    assert f"{path}:2" in str(raised.value)


# -- metrics ----------------------------------------------------------------------------------

TURNS = {1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "f"}


def test_results_expand_to_turns_in_rank_order_without_duplicates() -> None:
    # (3, 4) spans two turns; (4, 5) repeats d; 9 is not a turn of the dataset.
    spans = [(3, 4), (2, 2), (4, 5), (9, 9), (1, 1)]
    assert expand_turns(spans, TURNS) == ["c", "d", "b", "e", "a"]
    assert expand_turns(spans, TURNS, limit=2) == ["c", "d"]
    assert expand_turns([(1, 10**12)], TURNS) == ["a", "b", "c", "d", "e", "f"]
    assert expand_turns(spans, {}) == []


def test_metrics_match_hand_computed_values() -> None:
    ranked = ["c", "d", "b", "e", "a"]
    relevant = ["b", "e", "f"]
    assert recall_at(ranked, relevant, 2) == 0.0
    assert recall_at(ranked, relevant, 3) == pytest.approx(1 / 3)
    assert recall_at(ranked, relevant, 5) == pytest.approx(2 / 3)
    assert (hit_at(ranked, relevant, 2), hit_at(ranked, relevant, 3)) == (0.0, 1.0)
    assert reciprocal_rank(ranked, relevant) == pytest.approx(1 / 3)
    assert reciprocal_rank(ranked, relevant, depth=2) == 0.0
    # DCG = 1/log2(4) + 1/log2(5); ideal = 1 + 1/log2(3) + 1/log2(4)
    dcg = 0.5 + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert ndcg_at(ranked, relevant, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at(ranked, relevant, 5) == pytest.approx(0.436747, abs=1e-6)
    assert ndcg_at(ranked, relevant, 2) == 0.0
    # Fewer relevant than k: the ideal list is shorter.
    assert ndcg_at(["x", "b"], ["b"], 5) == pytest.approx(1 / math.log2(3))


def test_score_query_and_summaries() -> None:
    first = score_query("q1", "1", ["c", "d", "b", "e", "a"], ["b", "e", "f"])
    assert first.metrics["recall@5"] == pytest.approx(2 / 3)
    assert first.metrics["recall@25"] == pytest.approx(2 / 3)
    assert first.metrics["hit@5"] == 1.0 and first.metrics["mrr"] == pytest.approx(1 / 3)
    second = score_query("q2", "2", ["a"], ["a"])
    assert second.metrics["ndcg@10"] == 1.0 and second.metrics["mrr"] == 1.0
    summary = summarize([first, second])
    assert summary.queries == 2
    assert summary.metrics["recall@5"] == pytest.approx((2 / 3 + 1) / 2)
    assert summary.metrics["mrr"] == pytest.approx((1 / 3 + 1) / 2)
    assert summarize([]).metrics["mrr"] == 0.0


# -- running through an engine ----------------------------------------------------------------


class StubEngine:
    """Answers search from a table, recording the arguments it was called with."""

    def __init__(self, dataset: Any, answers: dict[str, list[tuple[int, int]]]) -> None:
        self.dataset, self.answers, self.calls = dataset, answers, []
        self.path = "stub.db"
        self.embedder = SimpleNamespace(name="stub-model")
        self.config = SimpleNamespace(retrieval=SimpleNamespace(
            fusion="minmax", vector_weight=0.7, fts_weight=0.3))

    async def recall(self, session_id: str) -> list[MemoryRecord]:
        return [MemoryRecord(session_id, m.sequence, m.message, "now")
                for m in self.dataset.messages.get(session_id, [])]

    async def search(self, **kwargs: Any) -> StubFound:
        self.calls.append(kwargs)
        return StubFound(self, kwargs)

    def answer(self, kwargs: dict[str, Any]) -> list[HybridQueryResult]:
        spans = self.answers.get(kwargs["query"], [])
        if kwargs["fusion"] == "rrf" and kwargs["vector_weight"] == 0.3:
            spans = [(1, 8)]  # this grid point finds everything first
        return [HybridQueryResult(f"c{i}", kwargs["session_id"], "", 1.0, 0.0, 0.0, start, end,
                                  {}) for i, (start, end) in enumerate(spans)]


class StubFound:
    """A search result whose re-ranking asks the stub's table again, as kept legs would."""

    def __init__(self, engine: StubEngine, kwargs: dict[str, Any]) -> None:
        self.engine, self.kwargs = engine, kwargs
        retrieval = engine.config.retrieval
        self.ranking = SimpleNamespace(
            fusion=kwargs["fusion"] or retrieval.fusion,
            vector_weight=retrieval.vector_weight if kwargs["vector_weight"] is None
            else kwargs["vector_weight"],
            fts_weight=retrieval.fts_weight if kwargs["fts_weight"] is None
            else kwargs["fts_weight"])
        self.results = engine.answer({**kwargs, **vars(self.ranking)})

    def rerank(self, **changes: Any) -> StubFound:
        return StubFound(self.engine, {**self.kwargs, **changes})


async def test_evaluate_scores_queries_and_keeps_category_5_apart(locomo_file: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    engine = StubEngine(conversion.dataset, {
        "What is the name of Ana's dog?": [(2, 2), (1, 1)],        # D1:1 at rank 2
        "What did Ben make in pottery?": [(1, 2)],                  # D1:2 of D1:2, D2:1
        "Where does Max like to run?": [],                          # nothing
        "What is the name of Ben's dog?": [(1, 1)],                 # category 5, rank 1
    })
    report = await evaluate(engine, conversion.dataset, top_k_chunks=7, vector_weight=0.4,
                            fts_weight=0.6, fusion="rrf")  # type: ignore[arg-type]
    assert engine.calls[0] == {"session_id": "locomo-77", "query": "What is the name of Ana's dog?",
                               "top_k": 7, "vector_weight": 0.4, "fts_weight": 0.6,
                               "fusion": "rrf", "caller": "eval"}
    assert report.overall.queries == 3
    assert report.overall.metrics["recall@5"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert report.overall.metrics["mrr"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert list(report.categories) == ["1", "2", "4", "5"]
    assert report.categories["5"].metrics["mrr"] == 1.0
    assert report.categories["1"].metrics["recall@10"] == 0.5
    data = report.to_dict()
    assert data["excluded_categories"] == ["5"] and len(data["queries"]) == 4
    assert data["queries"][0]["ranked"] == ["D1:2", "D1:1"]
    defaults = await evaluate(engine, conversion.dataset)  # type: ignore[arg-type]
    assert (defaults.fusion, defaults.vector_weight, defaults.fts_weight) == ("minmax", 0.7, 0.3)
    assert engine.calls[-1]["top_k"] == 50 and engine.calls[-1]["fusion"] is None


async def test_sweep_covers_the_grid_and_marks_the_best(locomo_file: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    engine = StubEngine(conversion.dataset, {})
    result = await sweep(engine, conversion.dataset)  # type: ignore[arg-type]
    assert len(result.runs) == 33
    assert {(r.fusion, r.vector_weight, r.fts_weight) for r in result.runs} >= {
        ("minmax", 0.0, 1.0), ("rrf", 0.3, 0.7), ("dbsf", 1.0, 0.0)}
    best = result.runs[result.best]
    assert (best.fusion, best.vector_weight) == ("rrf", 0.3)
    assert best.overall.metrics["recall@10"] == 1.0


async def test_storing_a_dataset_twice_adds_nothing(locomo_file: Path, memory: str) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        first = await store_dataset(engine, conversion.dataset)
        again = await store_dataset(engine, conversion.dataset)
        await engine.drain()
        records = await engine.recall("locomo-77")
        report = await evaluate(engine, conversion.dataset)
        logged = await engine.retrieval_log(caller="eval")
    assert (first.stored, first.already) == (8, 0)
    assert len(logged) == 4  # the engine logs eval queries under their own caller
    assert (again.stored, again.already) == (0, 8)
    assert len(records) == 8 and records[2].payload["metadata"]["dia_id"] == "D1:3"
    assert [r.created_at for r in records] == [m.created_at for m in
                                               conversion.dataset.messages["locomo-77"]]
    assert records[0].created_at == "2023-05-01T13:00:00.000Z"
    # Eight turns: every query finds all its evidence within 25 turns.
    assert report.overall.metrics["recall@25"] == 1.0


async def test_an_import_that_stopped_part_way_resumes(locomo_file: Path, memory: str) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    messages = conversion.dataset.messages["locomo-77"]
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for message in messages[:3]:
            await engine.store("locomo-77", message.sequence, message.message)
        resumed = await store_dataset(engine, conversion.dataset)
        assert (resumed.stored, resumed.already) == (5, 3)
        assert len(await engine.recall("locomo-77")) == 8


async def test_a_session_holding_other_messages_is_refused(locomo_file: Path,
                                                          memory: str) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("locomo-77", 1, {"role": "user", "content": "something else"})
        with pytest.raises(InvalidInput, match="holds other messages"):
            await store_dataset(engine, conversion.dataset)
        with pytest.raises(InvalidInput, match="holds other messages"):
            await evaluate(engine, conversion.dataset)


# -- the command line -------------------------------------------------------------------------


def test_import_and_eval_from_the_command_line(runner: CliRunner, locomo_file: Path,
                                               tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    result = runner.invoke(main, ["import", "locomo", str(locomo_file), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "stored    8 messages" in result.output
    assert "1 string held several ids (split); 1 id named no turn (D9:9)" in result.output
    assert "queries   4 by category (1: 1, 2: 1, 4: 1, 5: 1)" in result.output
    dataset = tmp_path / "mem.locomo.jsonl"
    assert len(read_dataset(dataset).queries) == 4
    again = runner.invoke(main, ["import", "locomo", str(locomo_file), "--db", str(db), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["stored"] == [
        {"session_id": "locomo-77", "stored": 0, "already": 8}]

    table = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset)])
    assert table.exit_code == 0, table.output
    for label in ("recall@10", "hit@25", "MRR", "nDCG@5", "5*", "4 single-hop"):
        assert label in table.output
    as_json = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset), "--json",
                                   "--vector-weight", "0.25", "--fusion", "dbsf"])
    report = json.loads(as_json.output)
    assert report["overall"]["queries"] == 3 and report["overall"]["recall@25"] == 1.0
    assert (report["fusion"], report["vector_weight"], report["fts_weight"]) == ("dbsf", 0.25, 0.75)

    swept = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset), "--sweep",
                                 "--fusion", "rrf"])
    assert swept.exit_code == 0, swept.output
    rows = [line for line in swept.output.splitlines() if line.startswith("fusion=rrf ")]
    assert len(rows) == 11
    # Three queries cannot show any weight beating the current one beyond noise.
    assert not any(line.endswith("*") for line in rows)
    assert "the current setting is the best the grid holds" in swept.output

    async def logged() -> list[dict[str, Any]]:
        async with Engine.open(db, config=DETERMINISTIC) as engine:
            return await engine.retrieval_log()

    assert asyncio.run(logged()) == []  # eval's queries stay out of the file's log


def test_eval_errors(runner: CliRunner, locomo_file: Path, tmp_path: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    write_dataset(conversion.dataset, dataset := tmp_path / "d.jsonl")
    missing = runner.invoke(main, ["eval", "--db", str(tmp_path / "none.db"),
                                   "--dataset", str(dataset)])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    both = runner.invoke(main, ["eval", "--db", str(tmp_path / "m.db"), "--dataset", str(dataset),
                                "--sweep", "--vector-weight", "0.5"])
    assert both.exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    refused = runner.invoke(main, ["import", "locomo", str(bad), "--db", str(tmp_path / "b.db")])
    assert refused.exit_code == 1 and "LoCoMo conversation" in refused.output
    assert not (tmp_path / "b.db").exists()


def test_eval_refuses_a_file_without_the_dataset(runner: CliRunner, locomo_file: Path,
                                                 tmp_path: Path) -> None:
    (conversion,) = convert_locomo_file(locomo_file)
    write_dataset(conversion.dataset, dataset := tmp_path / "d.jsonl")
    db = tmp_path / "other.db"

    async def fill() -> None:
        async with Engine.open(db, config=DETERMINISTIC) as engine:
            await engine.store("unrelated", 1, {"role": "user", "content": "hello"})

    asyncio.run(fill())
    result = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset)])
    assert result.exit_code == 1
    assert "lacks 8 of the 8 messages of session 'locomo-77'" in result.output


# -- the real dev conversations ---------------------------------------------------------------


@pytest.mark.real_model
async def test_locomo_dev_conversation_26_imports_whole(tmp_path: Path) -> None:
    if not (LOCOMO_DEV / "26.json").exists():
        pytest.skip("../shared/data/locomo-dev is not present")
    (conversion,) = convert_locomo_file(LOCOMO_DEV / "26.json")
    assert (conversion.session_id, conversion.sessions, conversion.turns) == ("locomo-26", 19, 419)
    assert conversion.queries_by_category == {"1": 32, "2": 37, "3": 11, "4": 70, "5": 47}
    assert (conversion.split_evidence, conversion.unknown_evidence,
            conversion.without_evidence) == (1, [], 2)
    async with Engine.open(tmp_path / "m.db", config=DETERMINISTIC) as engine:
        stored = await store_dataset(engine, conversion.dataset)
        assert stored.stored == 419
        assert (await store_dataset(engine, conversion.dataset)).stored == 0
