"""Bootstrap intervals, settings and grids, cross-validation, and the eval/tune command lines."""

from __future__ import annotations

import asyncio
import json
import tomllib
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from core import Engine
from core.config import Config
from core.errors import ConfigError, InvalidInput
from core.evaluation.dataset import Dataset, DatasetQuery
from core.evaluation.metrics import score_query, summarize
from core.evaluation.runner import EvalReport
from core.evaluation.settings import (
    apply_overrides,
    default_axes,
    grid_points,
    parse_assignment,
    parse_axis,
    parse_side,
    write_settings,
)
from core.evaluation.stats import mean_interval, paired_difference, resample_counts
from core.evaluation.tuning import (
    RERANK_FIELDS,
    assign_folds,
    compare,
    cross_validate_reports,
)
from workbench.cli.root import main

# -- the bootstrap ------------------------------------------------------------------------------


def _binomial_bounds(trials: int, p: float, tail: float) -> tuple[float, float]:
    """Shares of ``trials`` outside which a Binomial(trials, p) count falls with probability
    below ``tail`` on each side: the coverage test fails by chance less than 2*tail."""
    cdf, low, high = 0.0, 0, trials
    for k in range(trials + 1):
        cdf += comb(trials, k) * p**k * (1 - p) ** (trials - k)
        if cdf <= tail:
            low = k + 1
        if cdf >= 1 - tail:
            high = k
            break
    return low / trials, high / trials


def _paired_population(rng: np.random.Generator, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Hits of A (p 0.6) and of B, which keeps 90% of A's hits and finds 30% of its misses:
    P(B) = 0.6 * 0.9 + 0.4 * 0.3 = 0.66, so the true B - A is 0.06."""
    a = (rng.random(queries) < 0.6).astype(float)
    b = np.where(a == 1, rng.random(queries) < 0.9, rng.random(queries) < 0.3).astype(float)
    return a, b


TRUE_DIFFERENCE = 0.06
WRONG_DIFFERENCE = -0.03  # the standard error of B - A over 200 queries is 0.03


def test_the_paired_interval_covers_the_true_difference_95_times_in_100() -> None:
    repetitions, queries = 400, 200
    rng = np.random.default_rng(7)
    covered = wrong_covered = 0
    for repetition in range(repetitions):
        a, b = _paired_population(rng, queries)
        interval = paired_difference(a, b, resample_counts(queries, seed=repetition))
        covered += interval.low <= TRUE_DIFFERENCE <= interval.high
        wrong_covered += interval.low <= WRONG_DIFFERENCE <= interval.high
    low, high = _binomial_bounds(repetitions, 0.95, 0.0005)
    assert low <= covered / repetitions <= high, (covered, low, high)
    # A value 3 standard errors off the truth is rarely inside the interval.
    assert wrong_covered / repetitions < 0.3


def test_pairing_narrows_the_interval_of_correlated_scores() -> None:
    rng = np.random.default_rng(11)
    a, b = _paired_population(rng, 300)
    paired = paired_difference(a, b)
    # Unpaired: A and B each drawn on their own resamples, as if from other queries.
    means_a = resample_counts(300, seed=1) @ a / 300
    means_b = resample_counts(300, seed=2) @ b / 300
    unpaired_low, unpaired_high = np.quantile(means_b - means_a, [0.025, 0.975])
    assert paired.width < 0.75 * (unpaired_high - unpaired_low)
    assert paired.estimate == pytest.approx(b.mean() - a.mean())


def test_a_mean_interval_is_fixed_by_its_seed_and_holds_the_mean() -> None:
    values = np.random.default_rng(3).random(50)
    first, again = mean_interval(values), mean_interval(values)
    assert first == again and first.low < values.mean() < first.high
    counts = resample_counts(50)
    assert counts.shape == (2000, 50) and set(counts.sum(axis=1)) == {50.0}
    with pytest.raises(ValueError, match="same queries"):
        paired_difference([1.0, 0.0], [1.0])
    assert mean_interval([]).width == 0.0


# -- settings, grids, writing -----------------------------------------------------------------


def test_settings_parse_as_toml_values_or_bare_strings() -> None:
    assert parse_assignment("retrieval.vector_weight=0.4") == ("retrieval.vector_weight", 0.4)
    assert parse_assignment("retrieval.fusion=rrf") == ("retrieval.fusion", "rrf")
    assert parse_side("current") == {}
    assert parse_side("retrieval.fusion=rrf retrieval.rrf_k=30") == {
        "retrieval.fusion": "rrf", "retrieval.rrf_k": 30}
    with pytest.raises(InvalidInput, match="section.key=value"):
        parse_assignment("vector_weight=0.4")
    with pytest.raises(InvalidInput, match="no such config file"):
        parse_side("missing.toml")
    config = apply_overrides(Config(), {"retrieval.vector_weight": 0.4})
    assert (config.retrieval.vector_weight, config.retrieval.fts_weight) == (0.4, 0.6)
    with pytest.raises(ConfigError, match="retrieval.fusion"):
        apply_overrides(Config(), {"retrieval.fusion": "loudest"})
    with pytest.raises(ConfigError, match="retrieval.nonsense"):
        apply_overrides(Config(), {"retrieval.nonsense": 1})


def test_a_grid_is_built_from_the_retrieval_fields() -> None:
    assert parse_axis("retrieval.fusion") == ("retrieval.fusion", ("minmax", "rrf", "dbsf"))
    assert parse_axis("retrieval.rrf_k=30,60") == ("retrieval.rrf_k", (30, 60))
    with pytest.raises(InvalidInput, match="give its values"):
        parse_axis("retrieval.rrf_k")
    with pytest.raises(InvalidInput, match="retrieval option"):
        parse_axis("storage.url=x")
    with pytest.raises(InvalidInput, match="retrieval option"):
        parse_axis("retrieval.log_enabled")
    with pytest.raises(ConfigError, match="rrf_k"):
        parse_axis("retrieval.rrf_k=many")
    points = grid_points(default_axes(fusions=("rrf",)))
    assert len(points) == 11 and points[3] == {"retrieval.fusion": "rrf",
                                               "retrieval.vector_weight": 0.3}
    assert set(RERANK_FIELDS) >= {"vector_weight", "fts_weight", "fusion", "rrf_k"}


def test_writing_a_setting_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "workbench.toml"
    path.write_text('# mine\n[embedding]\nbackend = "deterministic"  # no download\n\n'
                    "[retrieval]\nvector_weight = 0.3 # chosen by hand\ntop_k = 7\n\n"
                    "[notes]\nmax_tags = 8\n")
    write_settings(path, {"retrieval.vector_weight": 0.4, "retrieval.fusion": "rrf"})
    text = path.read_text()
    assert text.startswith('# mine\n[embedding]\nbackend = "deterministic"  # no download\n')
    data = tomllib.loads(text)
    assert data["retrieval"] == {"vector_weight": 0.4, "fts_weight": 0.6, "top_k": 7,
                                 "fusion": "rrf"}
    assert data["notes"] == {"max_tags": 8}
    fresh = tmp_path / "new.toml"
    write_settings(fresh, {"retrieval.fusion": "dbsf"})
    assert tomllib.loads(fresh.read_text()) == {"retrieval": {"fusion": "dbsf"}}
    dotted = tmp_path / "dotted.toml"
    dotted.write_text("retrieval.fusion = 'rrf'\n")
    with pytest.raises(ConfigError, match="dotted keys"):
        write_settings(dotted, {"retrieval.fusion": "dbsf"})
    assert dotted.read_text() == "retrieval.fusion = 'rrf'\n"


# -- folds and cross-validation on synthetic reports --------------------------------------------


def _dataset(sessions: int, per_session: int) -> Dataset:
    return Dataset({}, [DatasetQuery(f"s{s}:q{q}", f"s{s}", "question", ("m",), "1")
                        for s in range(sessions) for q in range(per_session)])


def _report(hits: np.ndarray) -> EvalReport:
    scores = [score_query(f"q{i}", "1", ["m"] if hit else ["x"], ["m"])
              for i, hit in enumerate(hits)]
    return EvalReport("model", "minmax", 0.3, 0.7, 50, ("5",), scores, summarize(scores),
                      {"1": summarize(scores)})


def test_folds_keep_a_conversation_together_when_there_are_enough() -> None:
    folds, grouping = assign_folds([q.session_id for q in _dataset(4, 5).queries], 2)
    assert grouping == "conversation" and sorted(set(folds)) == [0, 1]
    for start in range(0, 20, 5):
        assert len(set(folds[start:start + 5])) == 1
    folds, grouping = assign_folds(["s0"] * 9, 3)
    assert grouping == "query" and sorted(folds) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    with pytest.raises(InvalidInput, match="folds"):
        assign_folds(["s0"] * 3, 4)


def test_cross_validation_marks_a_point_only_when_it_wins_held_out() -> None:
    rng = np.random.default_rng(5)
    dataset = _dataset(4, 100)
    current = (rng.random(400) < 0.5).astype(float)
    better = np.maximum(current, (rng.random(400) < 0.4).astype(float))  # +0.2 or so
    noise = current.copy()
    noise[:2] = 1 - noise[:2]  # the same but for two queries
    points = [{}, {"retrieval.vector_weight": 0.1}, {"retrieval.vector_weight": 0.9}]
    reports = [_report(current), _report(noise), _report(better)]
    cv = cross_validate_reports(points, reports, dataset, folds=4)
    assert cv.grouping == "conversation" and len(cv.folds) == 4
    assert cv.best == 2 and cv.beats_current and cv.gain.low > 0.1
    assert all(fold.chosen == 2 for fold in cv.folds)
    cv = cross_validate_reports(points[:2], reports[:2], dataset, folds=4)
    assert not cv.beats_current and cv.gain.low <= 0.0 <= cv.gain.high
    comparison = compare(_report(current), _report(better))
    assert comparison.differences["recall@10"].low > 0.1
    assert comparison.category_differences["1"]["recall@10"] == comparison.differences["recall@10"]


# -- the command lines ------------------------------------------------------------------------


@pytest.fixture
def imported(runner: CliRunner, tmp_path: Path) -> tuple[Path, Path]:
    from tests.test_evaluation import tiny_locomo

    source = tmp_path / "77.json"
    source.write_text(json.dumps(tiny_locomo()))
    db = tmp_path / "mem.db"
    result = runner.invoke(main, ["import", "locomo", str(source), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db, tmp_path / "mem.locomo.jsonl"


def test_eval_prints_intervals_and_compares_two_settings(runner: CliRunner,
                                                        imported: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    db, dataset = imported
    table = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset)])
    assert table.exit_code == 0, table.output
    assert "95% bootstrap interval" in table.output and " [" in table.output
    as_json = json.loads(runner.invoke(main, ["eval", "--db", str(db), "--dataset",
                                              str(dataset), "--json"]).stdout)
    interval = as_json["intervals"]["all"]["recall@10"]
    assert interval["low"] <= interval["estimate"] <= interval["high"]
    assert set(as_json["intervals"]) == {"all", "1", "2", "4", "5"}

    other = tmp_path / "b.toml"
    other.write_text("[retrieval]\nfusion = 'rrf'\nvector_weight = 1.0\nfts_weight = 0.0\n")
    compared = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset),
                                    "--compare", "current", str(other)])
    assert compared.exit_code == 0, compared.output
    assert "B - A recall@10 = " in compared.output and "(paired, 95%)" in compared.output
    inline = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset), "--json",
                                  "--compare", "retrieval.vector_weight=0.3",
                                  "retrieval.vector_weight=0.3"])
    same = json.loads(inline.stdout)["b_minus_a"]["recall@10"]
    assert same == {"estimate": 0.0, "low": 0.0, "high": 0.0}
    bad = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset),
                               "--compare", "current", "retrieval.fusion=loudest"])
    assert bad.exit_code == 1 and "retrieval.fusion" in bad.output
    mixed = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset),
                                 "--compare", "current", "current", "--sweep"])
    assert mixed.exit_code == 2
    folded = runner.invoke(main, ["eval", "--db", str(db), "--dataset", str(dataset),
                                  "--folds", "3", "--fusion", "rrf"])
    assert folded.exit_code == 0, folded.output
    assert "cross-validation: 3 folds by query" in folded.output
    assert "held-out recall@10: current" in folded.output
    assert "recall@10 [95%]" not in folded.stdout  # the grid table is --sweep's


def test_tune_recommends_and_writes_only_when_asked(runner: CliRunner,
                                                    imported: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    db, dataset = imported
    config = tmp_path / "mine.toml"
    config.write_text("# keep me\n[retrieval]\ntop_k = 7\n")
    tuned = runner.invoke(main, ["tune", "--db", str(db), "--dataset", str(dataset),
                                 "--grid", "retrieval.fusion", "--grid",
                                 "retrieval.vector_weight=0.0,1.0", "--folds", "3",
                                 "--write", str(config), "--json"])
    assert tuned.exit_code == 0, tuned.output
    result = json.loads(tuned.stdout)
    assert len(result["points"]) == 1 + 3 * 2 and len(result["folds"]) == 3
    # Three queries never show a gain beyond noise: the file is left as it was.
    assert result["beats_current"] is False and result["written"] is None
    assert config.read_text() == "# keep me\n[retrieval]\ntop_k = 7\n"
    text = runner.invoke(main, ["tune", "--db", str(db), "--dataset", str(dataset),
                                "--grid", "retrieval.fusion=rrf"])
    assert text.exit_code == 0, text.output
    assert "recommended: keep the current setting" in text.output
    refused = runner.invoke(main, ["tune", "--db", str(db), "--dataset", str(dataset),
                                   "--grid", "retrieval.rrf_k"])
    assert refused.exit_code == 2 and "give its values" in refused.output


def test_tune_on_the_playgrounds_judgments_writes_a_setting_that_wins(
        runner: CliRunner, tmp_path: Path) -> None:
    config = tmp_path / "mine.toml"
    config.write_text('# my settings\n[embedding]\nbackend = "deterministic"\n'
                      "fallback_dimensions = 32\n\n[retrieval]\nvector_weight = 1.0\n"
                      "fts_weight = 0.0\ntop_k = 1\n")
    db = tmp_path / "judged.db"
    texts = ["the violin recital is on friday", "my passport number is X123",
             "we booked the alpine hut", "peanut allergy noted for meals",
             "the train leaves at nine", "rain expected in june", "cortina weather forecast",
             "hiking boots are in the car"]
    asked = [("violin recital", "violin"), ("passport number", "passport"),
             ("alpine hut", "hut"), ("train nine", "train"), ("boots car", "boots"),
             ("peanut allergy", "peanut"), ("rain june", "rain")]

    async def judge_misses() -> int:
        """Judge, as the playground would, queries the vector leg alone ranks wrong first."""
        missed = 0
        async with Engine.open(db, config=config) as engine:
            for sequence, text in enumerate(texts, 1):
                await engine.store("s", sequence, {"role": "user", "content": text})
            await engine.drain()
            for query, word in asked:
                found = await engine.search(query=query, session_id="s", top_k=8)
                relevant = next(r for r in found.results if word in r.text)
                if found.results[0].chunk_id != relevant.chunk_id:
                    await engine.judge(query, relevant.chunk_id, 2, session_id="s")
                    missed += 1
        return missed

    assert asyncio.run(judge_misses()) >= 3
    tuned = runner.invoke(main, ["--config", str(config), "tune", "--db", str(db),
                                 "--session", "s", "--grid", "retrieval.vector_weight=0.0",
                                 "--folds", "3", "--write", str(config)])
    assert tuned.exit_code == 0, tuned.output
    assert "recommended: vector_weight=0" in tuned.output and "written to" in tuned.output
    text = config.read_text()
    assert text.startswith('# my settings\n[embedding]\nbackend = "deterministic"\n')
    assert tomllib.loads(text)["retrieval"] == {"vector_weight": 0.0, "fts_weight": 1.0,
                                                "top_k": 1}
    neither = runner.invoke(main, ["tune", "--db", str(db)])
    assert neither.exit_code == 2 and "--dataset FILE, --session ID" in neither.output


async def test_points_share_a_search_unless_they_change_more_than_the_ranking(
        tmp_path: Path) -> None:
    from core.evaluation import convert_locomo_file, evaluate, store_dataset
    from core.evaluation.tuning import score_points
    from tests.conftest import DETERMINISTIC
    from tests.test_evaluation import tiny_locomo

    source = tmp_path / "77.json"
    source.write_text(json.dumps(tiny_locomo()))
    (conversion,) = convert_locomo_file(source)
    db = tmp_path / "m.db"
    base = apply_overrides(Config(), {"embedding.backend": "deterministic",
                                      "embedding.fallback_dimensions": 64})
    async with Engine.open(db, config=DETERMINISTIC) as engine:
        await store_dataset(engine, conversion.dataset)
        await engine.drain()
    opened: list[Config] = []

    def open_engine(config: Config) -> Any:
        opened.append(config)
        return Engine.open(db, config=config)

    points = [{}, {"retrieval.vector_weight": 0.9}, {"retrieval.context_weight": 2.0}]
    reports = await score_points(open_engine, base, conversion.dataset, points)
    assert len(opened) == 2 and opened[1].retrieval.context_weight == 2.0
    async with Engine.open(db, config=opened[1]) as engine:
        direct = await evaluate(engine, conversion.dataset)
    assert [s.ranked for s in reports[2].scores] == [s.ranked for s in direct.scores]
    assert (reports[1].vector_weight, reports[1].fts_weight) == (0.9, 0.1)
