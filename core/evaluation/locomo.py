"""LoCoMo conversations as evaluation datasets: turns become messages, questions queries.

A LoCoMo conversation has two speakers, numbered sessions of turns (``speaker``,
``dia_id``, ``text``, sometimes an image's ``blip_caption``), each session's date, and
``qa``: questions with the ``evidence`` turns that answer them and a category 1-5. Only the
turns are imported; the observation, summary and event keys are annotations derived from
the turns and would hand retrieval the answers.

One conversation becomes one session (``locomo-<sample id or file stem>``) holding every
turn in order, sequences 1..n across the LoCoMo sessions; ``speaker_a`` speaks as "user",
``speaker_b`` as "assistant". An image's caption is appended to the turn's text as
``[image: ...]`` so questions about what was shown can be answered.

Each LoCoMo session's ``session_N_date_time`` ("1:56 pm on 8 May, 2023") is the time of its
turns. With ``times="created_at"`` (the default) it becomes each turn's ``created_at``, the
message's own time; LoCoMo names no zone, so it is read as UTC. With ``times="metadata"`` it
is kept as text in the metadata (``session_date``) instead, as importers did before the engine
stored a message's time; a date-time that cannot be read as a time is kept there either way.
"""

from __future__ import annotations

import calendar
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from core import inputs
from core.errors import InvalidInput
from core.evaluation.dataset import Dataset, DatasetMessage, DatasetQuery

# LoCoMo's question categories, as its paper and evaluation code number them.
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop",
                  "5": "adversarial"}

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
# LoCoMo's session date-time: "1:56 pm on 8 May, 2023".
_SESSION_TIME = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*",
    re.IGNORECASE)

Times = Literal["created_at", "metadata"]
"""Where a turn's session date-time goes: the message's ``created_at``, or its metadata."""
TIMES: tuple[Times, ...] = ("created_at", "metadata")


@dataclass
class LocomoConversion:
    """One conversation converted, with the counts an import reports."""

    source: str
    session_id: str
    dataset: Dataset
    sessions: int = 0
    turns: int = 0
    images: int = 0
    queries_by_category: dict[str, int] = field(default_factory=dict)
    split_evidence: int = 0
    unknown_evidence: list[str] = field(default_factory=list)
    without_evidence: int = 0

    @property
    def queries(self) -> int:
        """Questions that became queries."""
        return sum(self.queries_by_category.values())

    @property
    def evidence_warnings(self) -> int:
        """Evidence strings that held several ids, plus ids that name no turn."""
        return self.split_evidence + len(self.unknown_evidence)

    def to_dict(self) -> dict[str, Any]:
        """The counts as a JSON-ready dict."""
        return {"source": self.source, "session_id": self.session_id,
                "sessions": self.sessions, "turns": self.turns, "images": self.images,
                "queries": self.queries, "queries_by_category": self.queries_by_category,
                "split_evidence": self.split_evidence,
                "unknown_evidence": self.unknown_evidence,
                "without_evidence": self.without_evidence}


def convert_locomo_file(path: str | os.PathLike[str], *,
                        times: Times = "created_at") -> list[LocomoConversion]:
    """The conversations of a LoCoMo JSON file: one conversation dict, or a list of them;
    ``times`` as :func:`convert_locomo` takes it."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
    records = data if isinstance(data, list) else [data]
    if not records or not all(isinstance(r, dict) for r in records):
        raise InvalidInput(f"{source}: expected a LoCoMo conversation object or a list of them")
    default = source.stem if len(records) == 1 else None
    conversions = []
    for index, record in enumerate(records):
        name = default if default is not None else f"{source.stem}-{index + 1}"
        conversions.append(convert_locomo(record, name, source=str(source), times=times))
    return conversions


def convert_locomo(record: dict[str, Any], name: str, *, source: str = "",
                   times: Times = "created_at") -> LocomoConversion:
    """One LoCoMo conversation as a dataset; ``name`` is used when it has no sample id.
    ``times``: where each session's date-time goes, each turn's ``created_at`` or its
    metadata's ``session_date``."""
    if times not in TIMES:
        raise InvalidInput(f"times must be one of {', '.join(TIMES)}, got {times!r:.60}")
    # The published locomo10.json nests turns under "conversation"; the dev files are flat.
    conversation = record.get("conversation", record)
    sample_id = record.get("sample_id")
    session_id = f"locomo-{sample_id if sample_id else name}"
    where = source or session_id
    speakers = {conversation.get("speaker_a"): "user", conversation.get("speaker_b"): "assistant"}
    if None in speakers or len(speakers) != 2:
        raise InvalidInput(f"{where}: a LoCoMo conversation needs two distinct speakers, "
                           "speaker_a and speaker_b")
    result = LocomoConversion(source=source, session_id=session_id, dataset=Dataset())
    messages: list[DatasetMessage] = []
    for number in _session_numbers(conversation):
        turns = conversation[f"session_{number}"]
        if not turns:
            continue
        result.sessions += 1
        date = conversation.get(f"session_{number}_date_time")
        created_at = session_time(date) if times == "created_at" else None
        for turn in turns:
            messages.append(_turn_message(turn, session_id, len(messages) + 1, number,
                                          None if created_at else date, created_at,
                                          speakers, where))
            result.images += "[image: " in messages[-1].message["content"]
    if not messages:
        raise InvalidInput(f"{where}: no session_N turns found")
    result.turns = len(messages)
    result.dataset.messages[session_id] = messages
    turn_ids = {m.message_id for m in messages}
    categories: Counter[str] = Counter()
    for index, qa in enumerate(record.get("qa") or [], 1):
        relevant = []
        for text in _evidence_strings(qa.get("evidence")):
            ids = [f"D{int(a)}:{int(b)}" for a, b in _DIA_ID.findall(text)]
            if len(ids) > 1 or (ids and text.strip() != ids[0]):
                result.split_evidence += 1
            for dia_id in ids or [text]:
                if dia_id in turn_ids:
                    relevant.append(dia_id)
                else:
                    result.unknown_evidence.append(dia_id)
        if not relevant:
            result.without_evidence += 1
            continue
        question = qa.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InvalidInput(f"{where}: qa[{index - 1}] has no question text")
        category = None if qa.get("category") is None else str(qa["category"])
        answer = qa.get("answer")
        result.dataset.queries.append(DatasetQuery(
            query_id=f"{session_id}:q{index}", session_id=session_id,
            query=question, relevant=tuple(dict.fromkeys(relevant)),
            category=category, answer=None if answer is None else str(answer)))
        categories[category or "-"] += 1
    result.queries_by_category = dict(sorted(categories.items()))
    return result


def _session_numbers(conversation: dict[str, Any]) -> list[int]:
    """The numbers of the sessions that hold turns, in numeric order (10 after 9)."""
    numbers = []
    for key, value in conversation.items():
        match = _SESSION_KEY.fullmatch(key)
        if match and isinstance(value, list):
            numbers.append(int(match.group(1)))
    return sorted(numbers)


def session_time(text: Any) -> str | None:
    """A LoCoMo session date-time ("1:56 pm on 8 May, 2023") as the engine's UTC text; None
    when it is not one (or names no real day)."""
    match = _SESSION_TIME.fullmatch(text) if isinstance(text, str) else None
    if match is None or match[5].lower() not in _MONTHS:
        return None
    hour, minute = int(match[1]), int(match[2])
    if not (1 <= hour <= 12 and minute < 60):
        return None
    hour = hour % 12 + (12 if match[3].lower() == "p" else 0)
    try:
        moment = datetime(int(match[6]), _MONTHS[match[5].lower()], int(match[4]), hour,
                          minute, tzinfo=UTC)
    except ValueError:
        return None
    return inputs.message_time(moment)


def _turn_message(turn: Any, session_id: str, sequence: int, session: int, date: Any,
                  created_at: str | None, speakers: dict[Any, str],
                  where: str) -> DatasetMessage:
    if not isinstance(turn, dict) or not isinstance(turn.get("dia_id"), str):
        raise InvalidInput(f"{where}: session_{session} has a turn without a dia_id")
    dia_id = turn["dia_id"]
    role = speakers.get(turn.get("speaker"))
    if role is None:
        raise InvalidInput(f"{where}: turn {dia_id} is spoken by {turn.get('speaker')!r}, "
                           "who is neither speaker_a nor speaker_b")
    content = str(turn.get("text") or "")
    # Many turns carry a caption but no img_url (the link was lost); the image was still
    # shared in the conversation, so the caption is kept either way.
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        content = f"{content} [image: {caption.strip()}]".strip()
    metadata: dict[str, Any] = {"message_id": dia_id, "dia_id": dia_id,
                                "speaker": turn["speaker"], "session": session}
    if isinstance(date, str):
        metadata["session_date"] = date
    return DatasetMessage(session_id, dia_id, sequence,
                          {"role": role, "name": str(turn["speaker"]), "content": content,
                           "metadata": metadata}, created_at)


def _evidence_strings(evidence: Any) -> list[str]:
    """A question's evidence as a flat list of strings (nested lists occur in annotations)."""
    if evidence is None:
        return []
    if isinstance(evidence, str):
        return [evidence]
    found: list[str] = []
    if isinstance(evidence, list):
        for item in evidence:
            found.extend(_evidence_strings(item))
    return found
