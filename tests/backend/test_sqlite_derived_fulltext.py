"""The derived full-text index: FTS5's tokens, FTS5's bm25 ranking (of a namespace, and of one
session over its prefixed columns), kept in step with writes."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.storage.derived import fulltext, impacts
from core.storage.derived.fulltext import FullTextIndex, varints
from core.storage.derived.holder import DerivedIndexes
from core.storage.derived.phrases import occurrences, phrase_postings
from core.storage.derived.session_text import session_search
from core.storage.derived.tokenizer import TOKENIZER, Tokenizer
from core.storage.sqlite import connection, fts_phrases
from core.storage.sqlite.fts_maxscore import bm25_rowids
from core.storage.sqlite.search import _session_match
from core.storage.vocabulary import agent_token_for
from tests.conftest import DETERMINISTIC

LOCOMO = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "locomo-dev"
COMMON = ["good", "plan", "today", "check", "painting", "paints"]
TOPICAL = ["lisbon", "flight", "hotel", "recipe", "garlic", "oven", "budget", "invoice"]
ODD = ["Café", "naïve", "ÉCOLE", "straße", "snake_case", "x86_64", "don’t", "über-cool",
       "日本語", "emoji🙂ok", "İstanbul", "ﬁne", "a.b.c", "Running", "RUNS", "42nd"]
RARE = [f"word{n}" for n in range(40)]
WEIGHTS = "1.0, 0, 0.5, 0, 0"


def _text(rng: random.Random) -> str:
    words = [w for w in COMMON if rng.random() < 0.5]
    words += rng.sample(TOPICAL, rng.randint(0, 2)) + rng.sample(RARE, rng.randint(0, 2))
    words += rng.sample(ODD, rng.randint(0, 2))
    words += [rng.choice(COMMON) for _ in range(rng.randint(0, 3))]  # repeats: tf > 1
    rng.shuffle(words)
    return " ".join(words) or "hello"


def _fts5_tokens(texts: list[str]) -> list[list[str]]:
    """Each text's tokens as a real FTS5 table with chunks_fts's tokenizer indexes them."""
    conn = connection.sqlite_module().connect(":memory:", isolation_level=None)
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
    found: dict[int, list[tuple[int, str]]] = {}
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM v"):
        found.setdefault(doc, []).append((offset, term))
    conn.close()
    return [[term for _, term in sorted(found.get(n, []))] for n in range(1, len(texts) + 1)]


def _locomo_texts() -> list[str]:
    texts = []
    for path in sorted(LOCOMO.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        record = record.get("conversation", record)
        for key, turns in record.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [turn.get("text", "") for turn in turns if isinstance(turn, dict)]
    return texts


def test_tokens_equal_fts5s_on_generated_text() -> None:
    rng = random.Random(5)
    texts = [_text(rng) for _ in range(500)]
    texts += ["", "___", "ÀÉÎÕÜ àéîõü", "e\u0301te\u0301", "tab\tnew\nline", "ＦＵＬＬ width",
              "caféS CAFÉ", "under_score__double", "x" * 80 + "ing", "runnings'"]
    tokenizer = Tokenizer()
    assert [tokenizer.tokens(text) for text in texts] == _fts5_tokens(texts)


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="the LoCoMo dev data is not beside the worktree")
def test_tokens_equal_fts5s_on_the_locomo_dev_conversations() -> None:
    texts = _locomo_texts()
    assert len(texts) > 500
    tokenizer = Tokenizer()
    assert [tokenizer.tokens(text) for text in texts] == _fts5_tokens(texts)


SPACES = "\x85\xa0\u1680\u2003\u2028\u2029\u202f\u205f\u3000\x1c\x1f"


def test_counts_of_a_batch_equal_fts5s_tokens_text_by_text() -> None:
    rng = random.Random(6)
    texts = [_text(rng) for _ in range(300)] + ["", "   ", "ÀÉÎ àéî", "x_y", "e\u0301te\u0301"]
    texts += [f"wide{space}gap{space}running" for space in SPACES] + ["non\u00adbreak"]
    want = sorted((term, n, tokens.count(term)) for n, tokens in enumerate(_fts5_tokens(texts))
                  for term in set(tokens))
    for batch in (texts, texts + ["a NUL\x00inside"]):  # the second split a text at a time
        tokenizer = Tokenizer()
        doc, term, count = (array.tolist() for array in tokenizer.count(batch))
        found = sorted(zip((tokenizer.terms[t] for t in term), doc, count, strict=True))
        assert [row for row in found if row[1] < len(texts)] == want
    assert [array.tolist() for array in Tokenizer().count([])] == [[], [], []]


def test_phrase_occurrences_count_overlapping_places() -> None:
    assert occurrences([1, 2, 1, 2, 1], (1, 2)) == 2
    assert occurrences([3, 3, 3], (3, 3)) == 2
    assert occurrences([1], (1, 2)) == 0


def test_phrase_postings_count_each_text_apart() -> None:
    tokenizer = Tokenizer()
    rng = random.Random(2)
    texts = [" ".join(rng.choice("ab") for _ in range(rng.randint(0, 6))) for _ in range(300)]
    contexts = [" ".join(rng.choice("abc") for _ in range(rng.randint(0, 4))) for _ in texts]
    phrases = [tuple(tokenizer.token_ids(p)) for p in ("a b", "b a", "a a", "a b a", "c c")]
    found = phrase_postings(tokenizer, phrases, range(100, 400), texts, contexts)
    for phrase in phrases:
        want = [(100 + n, occurrences(tokenizer.token_ids(text), phrase),
                 occurrences(tokenizer.token_ids(context), phrase))
                for n, (text, context) in enumerate(zip(texts, contexts, strict=True))]
        want = [row for row in want if row[1] or row[2]]
        slots, in_text, in_context = found[phrase]
        assert list(zip(slots.tolist(), in_text.tolist(), in_context.tolist(),
                        strict=True)) == want


def test_varints_read_sqlite_varints() -> None:
    assert varints(b"\x03\x00\x7f") == [3, 0, 127]
    assert varints(b"\x81\x00\x82\x81\x01") == [128, 2 * 16384 + 128 + 1]


async def _file(path: Path, messages: int = 600) -> None:
    rng = random.Random(7)
    async with Engine.open(path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
        await engine.store_many([(f"s{n % 9}", n // 9 + 1,
                                  {"role": "user", "content": _text(rng)})
                                 for n in range(messages)])
        await engine.store_many([(f"b{n % 3}", n // 3 + 1,
                                  {"role": "user", "content": _text(rng)})
                                 for n in range(200)], agent="bob")


def _fts5_top(conn: Any, namespace: str, terms: list[str], k: int,
              weights: str = WEIGHTS) -> list[tuple[int, float]]:
    """FTS5's plain namespace ranking: what the engine's SQL path computes."""
    ors = " OR ".join(f'"{t}"' for t in terms)
    return conn.execute(
        f"SELECT rowid, -bm25(chunks_fts, {weights}) AS score FROM chunks_fts"
        " WHERE chunks_fts MATCH ? ORDER BY score DESC, rowid LIMIT ?",
        (f'{{chunk_text context}} : ({ors}) AND scope_token : "{agent_token_for(namespace)}"',
         k)).fetchall()


def assert_same_ranking(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    """Same scores (to 1e-9 relative) rank by rank, and the same rows; rows whose scores tie
    are compared as sets, the last tied group as a subset of the rows that tie at the cut."""
    assert len(got) == len(want)
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9, abs=1e-12)
    groups: dict[float, tuple[set[int], set[int]]] = {}
    for (mine, score), (theirs, _) in zip(got, want, strict=True):
        key = round(score, 9)
        groups.setdefault(key, (set(), set()))
        groups[key][0].add(mine)
        groups[key][1].add(theirs)
    for mine_set, theirs_set in groups.values():
        assert mine_set == theirs_set


def _queries(rng: random.Random, vocabulary: list[str], count: int) -> list[list[str]]:
    return [list(dict.fromkeys(rng.sample(vocabulary, rng.randint(1, 6))))
            for _ in range(count)]


@pytest.mark.parametrize("phrases_by", ["places", "rows"])
async def test_the_index_ranks_as_fts5_in_every_namespace(
        db_path: Path, monkeypatch: pytest.MonkeyPatch, phrases_by: str) -> None:
    # A phrase's rows come from its tokens' places or from the matched rows' text,
    # whichever is cheaper: each way is made the cheaper one here.
    monkeypatch.setattr(fts_phrases, "_PLACE_SECONDS", 0.0 if phrases_by == "places" else 1.0)
    await _file(db_path)
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:
        index = FullTextIndex()
        index.build(conn)
        rng = random.Random(3)
        words = COMMON + TOPICAL + RARE[:12] + ["cafe", "naive", "run", "absent", "ecole"]
        # Words FTS5 reads as phrases of several tokens, and one that is missing.
        words += ["snake_case", "x86_64", "good_plan", "case_snake", "good_good", "plan-good-plan"]
        for terms in _queries(rng, words, 200):
            for namespace in ("ana", "bob"):
                k = rng.choice([1, 5, 10, 50, 1000])
                weight = rng.choice([0.5, 0.3, 1.0])
                weights = f"1.0, 0, {weight!r}, 0, 0"
                got = index.search(namespace, terms, k, weight, conn)
                assert got is not None
                want = _fts5_top(conn, namespace, terms, k, weights)
                assert_same_ranking(got, want)
        assert index.search("nobody", ["good"], 10) == []
        assert index.search("ana", ["___"], 10, conn=conn) is None  # no token: FTS5 answers
        # A phrase not seen before needs the rows' text: without a connection, FTS5 answers.
        assert FullTextIndex().search("ana", ["snake_case"], 10) is None
    finally:
        conn.close()


def _session_rowids(conn: Any, session_id: str) -> list[int]:
    return [row[0] for row in conn.execute(
        "SELECT fts_rowid FROM chunks WHERE session_id = ?", (session_id,))]


def _fts5_session_top(conn: Any, session_id: str, terms: list[str], k: int,
                      weight: float = 0.5) -> list[tuple[int, float]]:
    """FTS5's ranking of one session, by the engine's own SQL path (prefixed columns)."""
    match = _session_match(session_id, terms, weight)
    return [] if match is None else bm25_rowids(conn, *match, k)


# Words whose stem a session's consonant prefix changes, or might: short ones ("us" stays
# "us" bare, "used" stems to "us"), a leading "y", two-letter stems, and their neighbours.
QUIRKS = ["us", "used", "uses", "use", "is", "as", "yes", "yellow", "yelling", "ytterbium",
          "hoping", "hope", "op", "oping", "by", "my", "sky", "skies", "ate", "rating"]


async def test_a_sessions_rows_rank_as_fts5_ranks_the_session(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the word FTS5 keeps whole and Python's \w splits (tested apart below).
    monkeypatch.setattr(sys.modules[__name__], "ODD", [w for w in ODD if "🙂" not in w])
    await _file(db_path)
    rng = random.Random(5)
    async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
        await engine.store_many([("quirks", n + 1, {"role": "user", "content": " ".join(
            rng.sample(QUIRKS + COMMON, 6))}) for n in range(60)])
        await engine.store_many([("odd", 1, {"role": "user", "content": "good emoji🙂ok"}),
                                 ("odd", 2, {"role": "user", "content": "good plan"})])
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:
        index = FullTextIndex()
        index.build(conn)
        words = COMMON + TOPICAL + RARE[:12] + ["cafe", "naive", "run", "absent", "ecole"]
        sessions = [*(f"s{n}" for n in range(9)), "b0", "b1", "b2", "quirks"]
        rows = {session: _session_rowids(conn, session) for session in [*sessions, "odd"]}
        texts = {row[0]: (row[1], row[2]) for row in conn.execute(
            "SELECT fts_rowid, chunk_text, context_text FROM chunks")}
        phrases = ["snake_case", "x86_64", "good_plan", "case_snake", "good_good"]
        answered = 0
        for terms in _queries(rng, words + QUIRKS + phrases + ["good", "plan"], 300):
            session = rng.choice(sessions)
            k = rng.choice([1, 5, 10, 250])
            weight = rng.choice([0.5, 0.3, 1.0])
            got = session_search(index, rows[session], terms, k, weight, texts)
            if got is None:  # a word whose prefixed copy may stem otherwise: FTS5 ranks it
                assert set(terms) & set(QUIRKS), terms
                continue
            answered += 1
            assert_same_ranking(got, _fts5_session_top(conn, session, terms, k, weight))
        assert answered > 100
        for word in QUIRKS:  # each alone: FTS5's ranking, or left to FTS5
            got = session_search(index, rows["quirks"], [word], 250)
            if got is not None:
                assert_same_ranking(got, _fts5_session_top(conn, "quirks", [word], 250))
        for word in ("us", "used", "is", "as"):  # "us" stays "us" bare, prefixed it loses "s"
            assert session_search(index, rows["quirks"], [word], 10) is None, word
        for word in ("hoping", "rating", "skies", "yellow"):  # stems the prefix leaves alone
            assert session_search(index, rows["quirks"], [word], 10), word
        # Every row of a session, in any order: the rows FTS5 would read.
        shuffled = rows["s3"][::-1]
        assert session_search(index, shuffled, ["garlic", "good"], 50) == \
            session_search(index, rows["s3"], ["garlic", "good"], 50)
        # A word of several tokens is a phrase to FTS5: counted in the rows' texts, when
        # given them; else the SQL path ranks it.
        assert session_search(index, rows["s1"], ["good", "snake_case"], 10) is None
        assert_same_ranking(
            session_search(index, rows["s1"], ["good", "snake_case"], 250, 0.5, texts) or [],
            _fts5_session_top(conn, "s1", ["good", "snake_case"], 250))
        assert session_search(index, rows["s1"], ["___"], 10) is None
        # A session holding a word FTS5 keeps whole and the prefix splits in two.
        assert session_search(index, rows["odd"], ["good"], 10) is None
        assert session_search(index, [], ["good"], 10) == []
        assert session_search(index, rows["s1"], ["absentword"], 10) == []
    finally:
        conn.close()


@pytest.mark.parametrize("rebuild_floor", [fulltext.REBUILD_FLOOR, 0])
async def test_sync_follows_inserts_deletes_and_reused_rowids(
        db_path: Path, monkeypatch: pytest.MonkeyPatch, rebuild_floor: int) -> None:
    monkeypatch.setattr(fulltext, "REBUILD_FLOOR", rebuild_floor)
    await _file(db_path, messages=200)
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    index = FullTextIndex()
    holder = DerivedIndexes([index], lambda: connection.open_connection(
        db_path, read_only=True, busy_timeout_ms=5000))
    holder.build_now(index.name)
    try:
        assert _synced(holder, conn) == 0
        index.search("ana", ["snake_case", "x86_64"], 5, conn=conn)  # phrases kept up to date
        rng = random.Random(11)
        async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
            for round_ in range(4):
                for session in (f"new{round_}", f"gone{round_}"):
                    await engine.store_many([(session, n + 1, {"role": "user",
                                              "content": _text(rng)}) for n in range(30)])
                await engine.forget(f"s{round_}")
                # The newest session goes too: the next insert takes its rowids again.
                await engine.forget(f"gone{round_}")
                await engine.store_many([(f"again{round_}", 1, {"role": "user",
                                          "content": "garlic oven snake_case lisbon good"})])
                assert _synced(holder, conn) > 0
                for terms in _queries(rng, COMMON + TOPICAL + RARE[:10] + ["snake_case",
                                                                           "x86_64"], 40):
                    assert_same_ranking(index.search("ana", terms, 20) or [],
                                        _fts5_top(conn, "ana", terms, 20))
            # Deleted rows leave dead slots, until they outnumber the live rows (and the
            # floor): then the index is built afresh.
            assert index.slot_count > index.row_count
            for session in [*(f"s{n}" for n in range(4, 9)), *(f"new{n}" for n in range(4))]:
                await engine.forget(session)
        assert _synced(holder, conn) > 0
        assert (index.slot_count == index.row_count) == (rebuild_floor == 0)
        for terms in _queries(rng, COMMON + TOPICAL + ["snake_case"], 20):
            assert_same_ranking(index.search("ana", terms, 20, 0.5, conn) or [],
                                _fts5_top(conn, "ana", terms, 20))
        fresh = FullTextIndex()
        fresh.build(conn)
        assert fresh.row_count == index.row_count
    finally:
        conn.close()
        holder.close()


def _synced(holder: DerivedIndexes, conn: Any) -> int:
    """Bring the holder's one index up to the file; the log entries it applied."""
    state = holder.state(FullTextIndex.name)
    before = state.watermark
    with holder.reading(conn, FullTextIndex.name) as ready:
        assert ready
    return state.watermark - before


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="the LoCoMo dev data is not beside the worktree")
async def test_the_index_ranks_as_fts5_on_the_locomo_dev_questions(db_path: Path) -> None:
    from core.evaluation import convert_locomo_file
    from core.retrieval.fts_query import query_terms

    conversions = [c for path in sorted(LOCOMO.glob("*.json")) for c in convert_locomo_file(path)]
    async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
        for conversion in conversions:
            await engine.store_many([(m.session_id, m.sequence, m.message)
                                     for messages in conversion.dataset.messages.values()
                                     for m in messages])
    questions = [q.query for c in conversions for q in c.dataset.queries]
    assert len(questions) > 100
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:
        index = FullTextIndex()
        index.build(conn)
        sessions = [row[0] for row in conn.execute("SELECT session_id FROM sessions")]
        rows = {session: _session_rowids(conn, session) for session in sessions}
        for number, question in enumerate(questions):
            terms = query_terms(question)
            got = index.search("ana", terms, 50, 0.5, conn)
            assert got is not None, question
            assert_same_ranking(got, _fts5_top(conn, "ana", terms, 50))
            session = sessions[number % len(sessions)]
            mine = session_search(index, rows[session], terms, 250)
            if mine is not None:  # None: a word of several tokens, which FTS5 answers
                assert_same_ranking(mine, _fts5_session_top(conn, session, terms, 250))
    finally:
        conn.close()


async def test_scoring_light_words_on_found_rows_only_stays_exact(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await _file(db_path)
    outcomes: list[bool] = []  # with light words: whether the bound held
    scored, widened = FullTextIndex._scored, FullTextIndex._widened

    def spy_scored(self: FullTextIndex, weighed: Any, light: set[int], *args: Any) -> Any:
        if light:
            outcomes.append(True)
        return scored(self, weighed, light, *args)

    def spy_widened(self: FullTextIndex, *args: Any) -> Any:
        outcomes[-1] = False
        return widened(self, *args)

    monkeypatch.setattr(FullTextIndex, "_scored", spy_scored)
    monkeypatch.setattr(FullTextIndex, "_widened", spy_widened)
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:
        index = FullTextIndex()
        index.build(conn)
        rng = random.Random(8)
        for ceiling in (0.0, 1.0, 4.0, 1e9):
            monkeypatch.setattr(fulltext, "LIGHT_CEILING", ceiling)
            for terms in _queries(rng, COMMON + TOPICAL + RARE[:12], 60):
                k = rng.choice([1, 10, 50])
                assert_same_ranking(index.search("ana", terms, k, 0.5, conn) or [],
                                    _fts5_top(conn, "ana", terms, k))
    finally:
        conn.close()
    assert True in outcomes and False in outcomes  # both: answered early, and widened


async def test_a_build_in_many_batches_indexes_the_same(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await _file(db_path, messages=300)
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:
        whole = FullTextIndex()
        whole.build(conn)
        monkeypatch.setattr(fulltext, "_BUILD_BATCH", 37)
        monkeypatch.setattr(fulltext, "_MERGE_EVERY", 3)
        batched = FullTextIndex()
        batched.build(conn)
        assert batched.row_count == whole.row_count
        assert batched.memory_bytes() == whole.memory_bytes()
        rng = random.Random(4)
        for terms in _queries(rng, COMMON + TOPICAL + RARE[:12], 40):
            assert batched.search("ana", terms, 20) == whole.search("ana", terms, 20)
            assert_same_ranking(batched.search("ana", terms, 20) or [],
                                _fts5_top(conn, "ana", terms, 20))
    finally:
        conn.close()


async def test_word_quotients_are_kept_until_a_write_moves_them(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await _file(db_path, messages=300)
    made: list[bool] = []  # each Impact computed: whether it is dense

    class Counted(impacts.Impact):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self.dense)

    monkeypatch.setattr(impacts, "Impact", Counted)
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    index = FullTextIndex()
    holder = DerivedIndexes([index], lambda: connection.open_connection(
        db_path, read_only=True, busy_timeout_ms=5000))
    holder.build_now(index.name)
    terms = ["good", "word5", "word3", "plan"]
    try:
        first = index.search("ana", terms, 10, 0.5, conn)
        assert made == [False] * 4  # asked for once since the last write: made as they are
        assert index.search("ana", terms, 10, 0.5, conn) == first
        assert sorted(made[4:]) == [False, False, True, True]  # common words dense, rare sparse
        assert index.search("ana", terms, 10, 0.5, conn) == first
        assert made.count(True) == 2 and made.count(False) == 8  # the dense ones were kept
        # Bit-equal to FTS5's own scores, not just close.
        assert first == _fts5_top(conn, "ana", terms, 10)
        for _ in range(2):  # another context weight: other quotients
            index.search("ana", terms, 10, 0.3, conn)
        assert made.count(True) == 4
        async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
            await engine.store_many([("late", 1, {"role": "user", "content": "good oven"})])
        assert _synced(holder, conn) > 0  # N and avgdl moved: every quotient with them
        for _ in range(2):
            assert index.search("ana", terms, 10, 0.5, conn) == _fts5_top(conn, "ana", terms,
                                                                          10)
        assert made.count(True) == 6
        monkeypatch.setattr(impacts, "BUDGET_PER_SLOT", 0)  # room for one word at a time
        for _ in range(3):  # another weight again, so none is held from before
            assert index.search("ana", terms, 10, 1.0, conn) == _fts5_top(
                conn, "ana", terms, 10, "1.0, 0, 1.0, 0, 0")
        assert made.count(True) == 10
    finally:
        conn.close()
        holder.close()
