"""Every configuration key: one pydantic model per TOML section, with its default, bounds and
the one-line description that ``workbench doctor`` and the README draw from.

Models refuse unknown keys and coerce nothing (``"640"`` is not a number, ``1`` is not
``true``), and the checks that span two keys (overlap under half a chunk, target under
trigger) sit on the later key, so every refusal names one dotted key.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from core.errors import ConfigError, InvalidInput
from core.inputs import shown as _shown

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class _DurationError(ValueError):
    """Text or a value that is not a duration; the message names no key."""


def _duration_seconds(value: Any) -> float:
    """Seconds from humantime-like text or a plain number, else ``_DurationError``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:
            raise _DurationError(f"{_shown(value)} is too large") from None
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        if text and text.replace(".", "", 1).isdecimal():
            seconds = float(text)
        else:
            pos, seconds = 0, 0.0
            for match in _DURATION_PART.finditer(text):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
                pos = match.end()
            if not text or pos != len(text):
                raise _DurationError(f'cannot read {_shown(value)} as a duration; write e.g. '
                                     '"24h", "90m"')
    else:
        raise _DurationError(f'expected a duration like "24h", got {type(value).__name__} '
                             f"{_shown(value)}")
    if not math.isfinite(seconds):
        raise _DurationError(f"must be a finite number, got {seconds!r}")
    return seconds


def parse_duration(value: str | int | float, key: str = "duration") -> float:
    """Seconds from humantime-like text ("24h", "1h30m", "90s") or a plain number."""
    try:
        return _duration_seconds(value)
    except _DurationError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def _read_duration(value: Any) -> float:
    try:
        return _duration_seconds(value)
    except _DurationError as exc:
        raise PydanticCustomError("duration", str(exc)) from None


def _positive_duration(seconds: float) -> float:
    if seconds <= 0:
        raise PydanticCustomError("duration_not_positive", "must be longer than 0 s")
    return seconds


def _within_int64(value: int) -> int:
    # SQLite stores 64-bit integers; a larger one fails later, far from the file that set it.
    if not -(2**63) <= value < 2**63:
        raise PydanticCustomError("int64_range", "is outside the 64-bit integer range")
    return value


Int64 = Annotated[int, AfterValidator(_within_int64)]
Duration = Annotated[float, BeforeValidator(_read_duration), AfterValidator(_positive_duration)]


class _Section(BaseModel):
    """What every section shares: unknown keys refused, no coercion, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class StorageConfig(_Section):
    """Where the memory lives when no path is given, and how a SQLite file is opened
    (DESIGN.md "Storage")."""

    url: str = Field(
        default="", repr=False,
        description='Memory opened when no file is named, e.g. "postgresql://agent@db/memory".')
    reader_pool_size: Int64 = Field(
        default=5, ge=1,
        description="Read connections beside the one writer, opened as reads overlap"
                    " (aidaemon: 5).")
    busy_timeout_ms: Int64 = Field(
        default=15000, description="How long a statement waits for another process's lock.")
    synchronous: str = Field(
        default="NORMAL",
        description='"NORMAL" survives a process crash; "FULL" also survives power loss, slower.')
    mmap_mb: Int64 = Field(
        default=1024, ge=0,
        description="MiB of the file each connection reads through memory mapping (0: off).")
    derived_memory_mb: Int64 = Field(
        default=4096, ge=0,
        description="On PostgreSQL: MiB the namespaces' indexes this process derives in memory "
        "may hold together; beyond it the least recently queried are dropped (never one "
        "queried in the last minute) and rebuilt on their next query (0: no limit).")
    max_content_kb: Int64 = Field(
        default=256, ge=1,
        description="Largest message (as stored: JSON) or note content accepted, in KiB of "
        "UTF-8; a larger one is refused.")

    @field_validator("url")
    @classmethod
    def _openable_url(cls, value: str) -> str:
        if value:
            from core.locations import parse_location

            try:
                parse_location(value)
            except InvalidInput as exc:
                # The message names the URL redacted, so it is safe to show.
                raise PydanticCustomError("location", "{reason}", {"reason": str(exc)}) from None
        return value

    @field_validator("synchronous")
    @classmethod
    def _known_synchronous(cls, value: str) -> str:
        if value.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise PydanticCustomError("synchronous", "must be NORMAL, FULL or EXTRA")
        return value


class EmbeddingConfig(_Section):
    """Which model turns chunks into vectors (oxydra "Embedding Pipeline", nexo-rs)."""

    backend: Literal["model2vec", "http", "deterministic"] = Field(
        default="model2vec",
        description='"model2vec", "http" (OpenAI-compatible) or "deterministic".')
    model: str = Field(
        default="minishlab/potion-base-8M",
        description="model2vec hub id or local folder; for http the remote model name.")
    base_url: str = Field(
        default="", description="http backend: the embeddings endpoint's base URL (…/v1).")
    api_key: str = Field(
        default="", repr=False,
        description="http backend: the API key; use ${ENV_VAR} rather than the key.")
    dimensions: Int64 | None = Field(
        default=None, ge=1,
        description="Expected vector size; a mismatch with the model aborts start-up (nexo-rs).")
    timeout_secs: float = Field(
        default=30.0, description="http backend: request timeout in seconds.")
    batch_size: Int64 = Field(
        default=512, ge=1, description="Chunks embedded per batch by the background worker.")
    max_attempts: Int64 = Field(
        default=5, description="Times a failing chunk is retried before it stays in error.")
    allow_download: bool = Field(
        default=True, description="Let model2vec fetch a hub model that is not cached.")
    download_timeout_secs: float = Field(
        default=20.0, description="Give up on a model download after this long.")
    fallback_dimensions: Int64 = Field(
        default=256,
        description="Vector size of the deterministic backend when the file has none yet.")
    on_missing_model: Literal["fallback", "refuse"] = Field(
        default="fallback",
        description='A model that cannot load: "fallback" runs the deterministic backend '
        '(logged as a warning), "refuse" stops start-up with the reason.')


class ChunkingConfig(_Section):
    """How extracted text is cut into indexable chunks (oxydra step 6)."""

    max_chars: Int64 = Field(default=640, ge=16, description="Longest chunk, in characters.")
    overlap_chars: Int64 = Field(
        default=96, ge=0, description="Characters shared by neighbouring chunks.")
    context_messages: Int64 = Field(
        default=2, ge=0, le=16,
        description="Earlier messages of the conversation indexed (and embedded) with each chunk "
        "as its context; 0 turns it off.")
    context_chars: Int64 = Field(
        default=400, ge=1,
        description="Characters of each earlier message kept in a chunk's context.")

    @field_validator("overlap_chars")
    @classmethod
    def _under_half_a_chunk(cls, overlap: int, info: ValidationInfo) -> int:
        # max_chars is declared first, so it is in info.data unless it was refused itself.
        max_chars = info.data.get("max_chars")
        if max_chars is not None and overlap >= max_chars // 2:
            raise PydanticCustomError("overlap", "must be under half of max_chars ({half})",
                                      {"half": max_chars // 2})
        return overlap


class ImportanceConfig(_Section):
    """Default importance of an event by role (aidaemon); a payload may set its own."""

    user: float = Field(default=0.5, description="Importance of a user message.")
    assistant: float = Field(default=0.5, description="Importance of an assistant message.")
    tool: float = Field(default=0.3, description="Importance of a tool result.")
    system: float = Field(default=0.1, description="Importance of a system message.")


class ShortTermConfig(_Section):
    """The in-memory working memory per session (aidaemon, nexo-rs ``short_term``)."""

    max_history_turns: Int64 = Field(
        default=50, ge=1, description="Turns kept in working memory per session.")
    session_ttl: Duration = Field(
        default=86400.0,
        description='Idle time before a session is evicted ("24h", "90m" or seconds).')
    max_sessions: Int64 = Field(
        default=10000, ge=0,
        description="Sessions held at once; the oldest-idle is evicted. 0 = unbounded.")


class RetrievalConfig(_Section):
    """Hybrid retrieval defaults (oxydra "Hybrid Retrieval", aidaemon, nexo-rs)."""

    default_recall_mode: Literal["keyword", "vector", "hybrid"] = Field(
        default="hybrid", description='"keyword", "vector" or "hybrid".')
    vector_weight: float = Field(
        default=0.3, ge=0,
        description="Weight of the vector leg in fusion (oxydra says 0.7; measured best 0.3).")
    fts_weight: float = Field(
        default=0.7, ge=0,
        description="Weight of the FTS5 leg in fusion (oxydra says 0.3; measured best 0.7).")
    top_k: Int64 = Field(default=10, description="Results returned when a query does not say.")
    fusion: Literal["minmax", "rrf", "dbsf"] = Field(
        default="minmax", description='"minmax", "rrf" or "dbsf".')
    rrf_k: Int64 = Field(default=60, description="Reciprocal-rank fusion constant.")
    speaker_boost: float = Field(
        default=0.2, ge=0,
        description="Share of the fused maximum added to a message whose speaker name the "
        "query names.")
    date_boost: float = Field(
        default=0.2, ge=0,
        description="Share of the fused maximum added to a message dated in the period the "
        "query names.")
    neighbour_weight: float = Field(
        default=0.3, ge=0,
        description="Share of the best nearby candidate's score added to a candidate "
        "(0 = off).")
    neighbour_window: Int64 = Field(
        default=5, ge=1, le=50,
        description="Messages before and after a candidate that count as nearby.")
    candidate_depth: Int64 = Field(
        default=250, ge=1, le=4096,
        description="Candidates each leg of a hybrid session query returns before fusion "
        "and boosts (at least 5 x top_k).")
    context_weight: float = Field(
        default=0.5, ge=0, le=10,
        description="bm25 weight of a chunk's conversational context against its own text (1.0).")
    recency_limit: Int64 = Field(
        default=10, description="Tri-hybrid: most recent messages included.")
    salience_threshold: float = Field(
        default=0.85, description="Tri-hybrid: importance at or above which a message is salient.")
    relevance_threshold: float = Field(
        default=0.655, description="Tri-hybrid: vector similarity a relevant message exceeds.")
    relevance_limit: Int64 = Field(default=5, description="Tri-hybrid: relevant messages included.")
    log_enabled: bool = Field(default=True, description="Record every query in the retrieval log.")


class SummaryConfig(_Section):
    """Rolling summaries (oxydra "Rolling Summarization")."""

    min_turns: Int64 = Field(
        default=4, ge=1, description="Unsummarised messages needed before summarising.")
    trigger_ratio: float = Field(
        default=0.80, gt=0, le=1,
        description="Token use of the budget above which summarising starts.")
    target_ratio: float = Field(
        default=0.50, gt=0, description="Token use summarising brings the history down to.")
    token_budget: Int64 = Field(
        default=8000, ge=64, description="Context window the history must fit, in tokens.")
    backend: Literal["extractive", "http"] = Field(
        default="extractive",
        description='"extractive" (no model) or "http" (OpenAI-compatible chat).')
    base_url: str = Field(
        default="", description="http summarizer: the chat endpoint's base URL (…/v1).")
    model: str = Field(default="", description="http summarizer: the chat model.")
    api_key: str = Field(
        default="", repr=False, description="http summarizer: the API key; use ${ENV_VAR}.")
    timeout_secs: float = Field(
        default=60.0, description="http summarizer: request timeout in seconds.")
    auto: bool = Field(
        default=True,
        description="Check a session for a rolling summary after each store()/append().")
    block_ratio: float = Field(
        default=0.25, gt=0, le=1,
        description="Room a condensation needs for its summary, as a share of the tokens it "
        "condenses.")
    archive_tokens: Int64 = Field(
        default=1500, ge=16,
        description="Size of the summary a compaction writes into its archive.")
    archive_dir: str = Field(
        default="",
        description="Folder for compaction archives as markdown (default: conversations/ beside "
        "the file).")

    @field_validator("target_ratio")
    @classmethod
    def _below_the_trigger(cls, target: float, info: ValidationInfo) -> float:
        # trigger_ratio is declared first, so it is in info.data unless it was refused itself.
        trigger = info.data.get("trigger_ratio")
        if trigger is not None and target >= trigger:
            raise PydanticCustomError("target_ratio", "must be below trigger_ratio ({trigger})",
                                      {"trigger": trigger})
        return target


class ConsolidationConfig(_Section):
    """Periodic consolidation of idle conversations (aidaemon)."""

    interval_hours: float = Field(
        default=6.0, gt=0, description="Hours between consolidation passes.")
    idle_hours: float = Field(
        default=24.0, ge=0, description="A conversation idle this long is consolidated.")
    enabled: bool = Field(
        default=True, description="Run consolidation in the background while the engine is open.")


class NotesConfig(_Section):
    """Notes and their tags (oxydra "Note Metadata", pynchy categories)."""

    max_tags: Int64 = Field(default=16, description="Tags a note may carry.")
    max_tag_chars: Int64 = Field(default=64, description="Characters in one tag.")
    default_category: Literal["core", "daily", "conversation"] = Field(
        default="core", description='"core", "daily" or "conversation".')


class ScratchpadConfig(_Section):
    """The per-session scratchpad (oxydra "Working-Memory Scratchpad")."""

    max_items: Int64 = Field(default=32, description="Items the scratchpad holds.")
    max_item_chars: Int64 = Field(default=240, description="Characters in one item.")


class SchedulerConfig(_Section):
    """Schedules and their runner (oxydra "schedules")."""

    min_interval_secs: Int64 = Field(default=300, description="Shortest gap a cadence may have.")
    keep_runs: Int64 = Field(default=100, description="Run history kept per schedule.")
    max_consecutive_failures: Int64 = Field(
        default=5, description="Failures after which a schedule pauses itself.")
    poll_interval_secs: float = Field(
        default=30.0, description="How often the runner looks for due schedules.")
    command: str = Field(
        default="",
        description="Runner action: a command line run for each due schedule (split like a shell, "
        "never run by one); empty = none.")
    webhook_url: str = Field(
        default="",
        description="Runner action: a URL POSTed each due schedule as JSON instead; empty = none.")
    webhook_token: str = Field(
        default="", repr=False, description="Bearer token sent to webhook_url; use ${ENV_VAR}.")
    action_timeout_secs: float = Field(
        default=300.0, description="A run still going after this long is stopped (timeout).")
    claim_secs: float | None = Field(
        default=None,
        description="How long a runner holds a schedule it took before another may take it "
        "(default: action_timeout_secs + 60).")


class Config(_Section):
    """The whole configuration; every field has the seeds' default."""

    agent: str = Field(
        default="default",
        description="Agent identity recorded on new sessions (nexo-rs per-agent isolation).")
    storage: StorageConfig = Field(default_factory=StorageConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    importance: ImportanceConfig = Field(default_factory=ImportanceConfig)
    short_term: ShortTermConfig = Field(default_factory=ShortTermConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    summary: SummaryConfig = Field(default_factory=SummaryConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    notes: NotesConfig = Field(default_factory=NotesConfig)
    scratchpad: ScratchpadConfig = Field(default_factory=ScratchpadConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)

    def to_dict(self) -> dict[str, Any]:
        """The config as the dict/TOML shape, secrets included (never log this)."""
        return self.model_dump()


def section_model(field: FieldInfo) -> type[_Section] | None:
    """The section model a field of ``Config`` holds, or None for a plain value."""
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, _Section) \
        else None


def describe_fields(model: type[BaseModel] = Config,
                    prefix: str = "") -> list[tuple[str, Any, str]]:
    """Every (dotted key, default, description) of the config, for help text and docs."""
    rows: list[tuple[str, Any, str]] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}.{name}" if prefix else name
        section = section_model(field)
        if section is not None:
            rows.extend(describe_fields(section, key))
        else:
            rows.append((key, field.default, field.description or ""))
    return rows
