"""Typed configuration: one TOML file, every seed default, ``${ENV_VAR}`` interpolation.

The dict form passed to ``Engine.open(config=...)`` mirrors the TOML file section by
section: one pydantic model per section, each field with its bounds and a one-line
description that ``workbench doctor`` and the README draw from. Unknown keys are refused by
name (a typo must never be silently ignored) and nothing is coerced from the wrong type, so
``"640"`` is not a number. Every problem found is reported at once, in one ``ConfigError``.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

from core.errors import ConfigError
from core.inputs import shown as _shown

CONFIG_ENV_VAR = "WORKBENCH_CONFIG"

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
    """How the SQLite file is opened (DESIGN.md "Storage")."""

    reader_pool_size: Int64 = Field(
        default=5, ge=1,
        description="Read connections kept open beside the one writer (aidaemon: 5).")
    busy_timeout_ms: Int64 = Field(
        default=15000, description="How long a statement waits for another process's lock.")
    synchronous: str = Field(
        default="NORMAL",
        description='"NORMAL" survives a process crash; "FULL" also survives power loss, slower.')
    mmap_mb: Int64 = Field(
        default=1024, ge=0,
        description="MiB of the file each connection reads through memory mapping "
        "(0: off).")

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
    model: str = Field(default="minishlab/potion-base-8M",
                       description="model2vec hub id or local folder; for http the remote "
                       "model name.")
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


class ChunkingConfig(_Section):
    """How extracted text is cut into indexable chunks (oxydra step 6)."""

    max_chars: Int64 = Field(default=640, ge=16, description="Longest chunk, in characters.")
    overlap_chars: Int64 = Field(
        default=96, ge=0, description="Characters shared by neighbouring chunks.")
    context_messages: Int64 = Field(
        default=2, ge=0, le=16,
        description="Earlier messages of the conversation indexed (and embedded) with each "
        "chunk as its context; 0 turns it off.")
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
    context_weight: float = Field(
        default=0.5, ge=0, le=10,
        description="bm25 weight of a chunk's conversational context against its own text "
        "(1.0).")
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
        description="Folder for compaction archives as markdown (default: conversations/ "
        "beside the file).")

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
        description="Runner action: a command line run for each due schedule (split like a "
        "shell, never run by one); empty = none.")
    webhook_url: str = Field(
        default="", description="Runner action: a URL POSTed each due schedule as JSON instead; "
        "empty = none.")
    webhook_token: str = Field(
        default="", repr=False, description="Bearer token sent to webhook_url; use ${ENV_VAR}.")
    action_timeout_secs: float = Field(
        default=300.0, description="A run still going after this long is stopped (timeout).")
    claim_secs: float | None = Field(
        default=None,
        description="How long a runner holds a schedule it took before another may take "
        "it (default: action_timeout_secs + 60).")


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


def _section_model(field: FieldInfo) -> type[_Section] | None:
    """The section model a top-level field holds, or None for a plain value."""
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, _Section) \
        else None


def _field_at(location: tuple[int | str, ...]) -> FieldInfo | None:
    """The field a validation error's location points at, when it is a known one."""
    fields: dict[str, FieldInfo] = Config.model_fields
    field = None
    for part in location:
        if not isinstance(part, str) or part not in fields:
            return None
        field = fields[part]
        section = _section_model(field)
        fields = section.model_fields if section is not None else {}
    return field


# --- ${…} interpolation --------------------------------------------------------------------

_ENV_PATTERN = re.compile(r"\$\{([^}]+)\}")


class _Environment(typing.Mapping[str, str]):
    """The environment ``${…}`` reads, shown as its size only: a crash report that prints
    each frame's variables would otherwise print every key kept in the environment."""

    def __init__(self, values: typing.Mapping[str, str]) -> None:
        self._values = values

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> typing.Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<environment: {len(self._values)} variables, not shown>"


def _interpolate(value: str, key: str, environ: typing.Mapping[str, str]) -> str:
    """``value`` with each ``${NAME}`` / ``${file:path}`` replaced; ``ConfigError`` naming
    the variable or file (never its value) when one cannot be read."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        if name.startswith("file:"):
            path = Path(os.path.expanduser(name[5:]))
            try:
                return path.read_text(encoding="utf-8").strip()
            except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
                reason = getattr(exc, "strerror", None) or str(exc)
                raise ConfigError(f"{key}: cannot read {path!r} ({reason})") from None
        if name not in environ:
            shown = name if name.isprintable() and len(name) <= 60 else _shown(name)
            raise ConfigError(f"{key}: environment variable {shown} is not set")
        return environ[name]

    return _ENV_PATTERN.sub(replace, value)


def _from_env_text(text: str, annotation: Any) -> Any:
    """An interpolated value read as its field's type, so "${DIMS}" can fill an int."""
    allowed = [typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a
               for a in typing.get_args(annotation) or (annotation,)]
    if bool in allowed and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    for kind in (int, float):
        if kind in allowed:
            try:
                return kind(text.strip())
            except ValueError:
                pass
    return text


class _Interpolated(typing.NamedTuple):
    data: dict[Any, Any]
    raw: dict[str, str]  # dotted key -> the text before interpolation, quoted in refusals
    problems: list[str]


def _interpolated(data: typing.Mapping[Any, Any], environ: typing.Mapping[str, str]
                  ) -> _Interpolated:
    """A copy of ``data`` with ``${…}`` filled in the known fields' strings.

    A value that cannot be filled is left out of the copy and its problem kept, so the
    refusal names the variable instead of the type of the text that was not replaced.
    """
    raw: dict[str, str] = {}
    problems: list[str] = []

    def fill(values: typing.Mapping[Any, Any], fields: dict[str, FieldInfo],
             prefix: str) -> dict[Any, Any]:
        filled: dict[Any, Any] = {}
        for name, value in values.items():
            field = fields.get(name) if isinstance(name, str) else None
            key = f"{prefix}{name}"
            section = _section_model(field) if field is not None else None
            if section is not None and isinstance(value, typing.Mapping):
                filled[name] = fill(value, section.model_fields, f"{key}.")
            elif field is not None and isinstance(value, str) and _ENV_PATTERN.search(value):
                try:
                    filled[name] = _from_env_text(_interpolate(value, key, environ),
                                                  field.annotation)
                    raw[key] = value
                except ConfigError as exc:
                    problems.append(str(exc))
            else:
                filled[name] = value
        return filled

    return _Interpolated(fill(data, Config.model_fields, ""), raw, problems)


# --- pydantic's errors as one line per problem ---------------------------------------------

_TYPE_NAMES = {"int_type": "int", "int_parsing": "int", "int_from_float": "int",
               "float_type": "float", "float_parsing": "float", "bool_type": "bool",
               "bool_parsing": "bool", "string_type": "str"}
_BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}
# Own errors whose message does not quote the value, safe to show for a secret too.
_UNQUOTED = {"duration_not_positive", "synchronous", "overlap", "target_ratio"}
_MAX_PROBLEMS = 12


def _bounds(field: FieldInfo | None) -> str:
    """A field's bounds in words: "at least 1", "from 0 to 16", "above 0 and at most 1"."""
    lower = upper = None
    for bound in field.metadata if field is not None else ():
        if getattr(bound, "ge", None) is not None:
            lower = ("ge", bound.ge)
        elif getattr(bound, "gt", None) is not None:
            lower = ("gt", bound.gt)
        elif getattr(bound, "le", None) is not None:
            upper = ("le", bound.le)
        elif getattr(bound, "lt", None) is not None:
            upper = ("lt", bound.lt)
    if lower and upper and lower[0] == "ge" and upper[0] == "le":
        return f"from {lower[1]} to {upper[1]}"
    words = {"ge": "at least", "gt": "above", "le": "at most", "lt": "below"}
    return " and ".join(f"{words[bound[0]]} {bound[1]}" for bound in (lower, upper) if bound)


def _unknown_keys(location: tuple[int | str, ...], names: list[Any]) -> str:
    section = _field_at(location)
    model = _section_model(section) if section is not None else Config
    known = sorted(model.model_fields) if model is not None else []
    where = f"[{'.'.join(map(str, location))}]" if location else "the top level"
    names = sorted(names, key=str)
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return (f"unknown key{'s' if len(names) > 1 else ''} "
            f"{', '.join(_shown(name, 40) for name in names[:5])}{more} in {where}; "
            f"known keys: {', '.join(known)}")


def _problem(error: ErrorDetails, raw: dict[str, str]) -> str:
    """One validation error as "dotted.key: what is wrong", quoting no secret."""
    location, kind, value = error["loc"], error["type"], error["input"]
    key = ".".join(map(str, location))
    if kind == "model_type":
        return f"[{key}]: expected a table, got {type(value).__name__}"
    field = _field_at(location)
    if kind in _BOUNDS:
        return f"{key}: must be {_bounds(field)}"
    if kind in _UNQUOTED:
        return f"{key}: {error['msg']}"
    hidden = key in raw or (field is not None and not field.repr)
    if kind == "int64_range":
        return f"{key}: {'' if hidden else _shown(value) + ' '}{error['msg']}"
    if hidden:
        # A secret, or text from ${…} (which may be a key put in the wrong field).
        source = (f"the value of {_shown(raw[key], 80)}" if key in raw
                  else f"the {type(value).__name__} given")
        expected = _TYPE_NAMES.get(kind, "one of the allowed values")
        if kind == "duration":
            expected = 'a duration like "24h"'
        elif kind == "literal_error":
            expected = error.get("ctx", {}).get("expected", expected)
        return (f"{key}: expected {expected}, but {source} is not one (not shown: it may be "
                "a secret)")
    if kind == "float_type" and isinstance(value, int) and not isinstance(value, bool):
        return f"{key}: {_shown(value)} is too large"
    if kind in _TYPE_NAMES:
        return f"{key}: expected {_TYPE_NAMES[kind]}, got {type(value).__name__} {_shown(value)}"
    if kind == "finite_number":
        return f"{key}: must be a finite number, got {value!r}"
    if kind == "literal_error":
        return f"{key}: {_shown(value)} is not one of {error.get('ctx', {}).get('expected')}"
    return f"{key}: {error['msg']}"


def _problems(exc: ValidationError, raw: dict[str, str]) -> list[str]:
    """Every problem of a ValidationError, unknown keys grouped by section."""
    unknown: dict[tuple[int | str, ...], list[Any]] = {}
    problems = []
    for error in exc.errors(include_url=False):
        if error["type"] in ("extra_forbidden", "invalid_key"):
            unknown.setdefault(tuple(error["loc"][:-1]), []).append(error["loc"][-1])
        else:
            problems.append(_problem(error, raw))
    return [_unknown_keys(where, names) for where, names in unknown.items()] + problems


def _validated(data: typing.Mapping[Any, Any],
               environ: typing.Mapping[str, str]) -> Config | list[str]:
    """The Config, or every problem found. The caller raises: this frame's variables hold
    the interpolated values, and a crash report that prints the refusal's frames would
    print any key among them."""
    filled = _interpolated(data, environ)
    try:
        config = Config.model_validate(filled.data)
    except ValidationError as exc:
        return filled.problems + _problems(exc, filled.raw)
    return filled.problems or config


def load_config(source: str | os.PathLike[str] | typing.Mapping[str, Any] | Config | None = None,
                environ: typing.Mapping[str, str] | None = None) -> Config:
    """A validated Config from a TOML path, a dict, a Config, or the environment.

    With ``None`` the file named by ``$WORKBENCH_CONFIG`` is read when set, else defaults.
    """
    environ = _Environment(os.environ if environ is None else environ)
    if isinstance(source, Config):
        return source
    if source is None:
        env_path = environ.get(CONFIG_ENV_VAR)
        if not env_path:
            return Config()
        source = env_path
    if isinstance(source, str | os.PathLike):
        data = _read_toml(source)
    elif isinstance(source, typing.Mapping):
        data = dict(source)
    else:
        raise ConfigError("a config is a TOML file's path, a dict or a Config; got "
                          f"{type(source).__name__}")
    checked = _validated(data, environ)
    if isinstance(checked, list):
        more = len(checked) - _MAX_PROBLEMS
        raise ConfigError("; ".join(checked[:_MAX_PROBLEMS])
                          + (f"; and {more} more problems" if more > 0 else ""))
    return checked


def _read_toml(source: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML file's tables, or a ConfigError that says why it cannot be read."""
    try:
        path = Path(source).expanduser()
    except RuntimeError:  # ~name of a user this machine does not know
        raise ConfigError(f"config file {_shown(str(source))}: no home directory for "
                          "its ~user") from None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        exc.__traceback__ = None  # its frames hold the file's text, any key in it too
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ConfigError(f"config file {path} nests arrays or tables too deeply") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except ValueError as exc:  # a NUL or a lone surrogate in the path
        raise ConfigError(f"cannot read config file {_shown(str(path))}: {exc}") from None


def describe_fields(model: type[BaseModel] = Config,
                    prefix: str = "") -> list[tuple[str, Any, str]]:
    """Every (dotted key, default, description) of the config, for help text and docs."""
    rows: list[tuple[str, Any, str]] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}.{name}" if prefix else name
        section = _section_model(field)
        if section is not None:
            rows.extend(describe_fields(section, key))
        else:
            rows.append((key, field.default, field.description or ""))
    return rows
