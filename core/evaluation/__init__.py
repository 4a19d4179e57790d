"""Retrieval evaluation: a dataset format, the LoCoMo conversion, metrics and eval runs.

A dataset is a JSONL file, one JSON object per line, of two kinds::

    {"type": "message", "session_id": "locomo-26", "message_id": "D1:3", "sequence": 3,
     "message": {"role": "user", "content": "...", "metadata": {"message_id": "D1:3", ...}}}
    {"type": "query", "query_id": "locomo-26:q1", "session_id": "locomo-26",
     "query": "When did Caroline go to the LGBTQ support group?",
     "relevant": ["D1:3"], "category": "2", "answer": "7 May 2023"}

Message ids are stable and unique within a session; each message is stored at its
``sequence`` with the id in ``metadata.message_id``, so retrieval results map back to
messages. A message line may carry ``created_at`` (ISO-8601 with a UTC offset), stored as
the message's own time. A query's ``relevant`` lists the message ids that answer it;
``category`` is a string or null and ``answer`` is optional (for people reading misses; never
scored).

The modules: :mod:`~core.evaluation.dataset` (reading and writing the format),
:mod:`~core.evaluation.locomo` (LoCoMo conversations to datasets),
:mod:`~core.evaluation.metrics` (recall@k, hit@k, MRR, nDCG@k; pure functions),
:mod:`~core.evaluation.runner` (storing a dataset in an Engine, running queries, sweeps),
:mod:`~core.evaluation.stats` (bootstrap intervals, alone and paired),
:mod:`~core.evaluation.settings` (dotted overrides, grids, writing one into a config file),
:mod:`~core.evaluation.tuning` (grids scored per query, compared, cross-validated),
:mod:`~core.evaluation.judged` (a person's judgments: one query, or a scope's judged set) and
:mod:`~core.evaluation.report` (the text tables the CLI prints). Nothing here is imported
by ``import core``.
"""

from __future__ import annotations

from core.evaluation.dataset import Dataset, DatasetMessage, DatasetQuery, read_dataset
from core.evaluation.locomo import LocomoConversion, convert_locomo_file
from core.evaluation.metrics import KS, MRR_DEPTH, QueryScore, expand_turns, score_query
from core.evaluation.runner import (
    EXCLUDED_CATEGORIES,
    EvalReport,
    SweepResult,
    evaluate,
    store_dataset,
    sweep,
)

__all__ = [
    "EXCLUDED_CATEGORIES",
    "KS",
    "MRR_DEPTH",
    "Dataset",
    "DatasetMessage",
    "DatasetQuery",
    "EvalReport",
    "LocomoConversion",
    "QueryScore",
    "SweepResult",
    "convert_locomo_file",
    "evaluate",
    "expand_turns",
    "read_dataset",
    "score_query",
    "store_dataset",
    "sweep",
]
