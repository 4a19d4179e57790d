"""Typed configuration: one TOML file, every seed default, ``${ENV_VAR}`` interpolation.

The dict form passed to ``Engine.open(config=...)`` mirrors the TOML file section by
section. Unknown keys are refused by name (a typo must never be silently ignored), and each
field carries a one-line doc that ``workbench doctor`` and the README draw from.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.inputs import shown as _shown

CONFIG_ENV_VAR = "WORKBENCH_CONFIG"


def doc(text: str, default: Any = dataclasses.MISSING, **kwargs: Any) -> Any:
    """A dataclass field with a one-line description kept in its metadata."""
    return field(default=default, metadata={"doc": text}, **kwargs)


@dataclass
class StorageConfig:
    """How the SQLite file is opened (DESIGN.md "Storage")."""

    reader_pool_size: int = doc(
        "Read connections kept open beside the one writer (seed 000: 5).", 5)
    busy_timeout_ms: int = doc("How long a statement waits for another process's lock.", 15000)
    synchronous: str = doc(
        '"NORMAL" survives a process crash; "FULL" also survives power loss, slower.', "NORMAL")
    mmap_mb: int = doc(
        "MiB of the file each connection reads through memory mapping (0: off).", 1024)


@dataclass
class EmbeddingConfig:
    """Which model turns chunks into vectors (seed 001 "Embedding Pipeline", seed 003)."""

    backend: str = doc('"model2vec", "http" (OpenAI-compatible) or "deterministic".', "model2vec")
    model: str = doc(
        "model2vec hub id or local folder; for http the remote model name.",
        "minishlab/potion-base-8M",
    )
    base_url: str = doc("http backend: the embeddings endpoint's base URL (…/v1).", "")
    api_key: str = doc("http backend: the API key; use ${ENV_VAR} rather than the key.", "",
                       repr=False)
    dimensions: int | None = doc(
        "Expected vector size; a mismatch with the model aborts start-up (seed 003).", None)
    timeout_secs: float = doc("http backend: request timeout in seconds.", 30.0)
    batch_size: int = doc("Chunks embedded per batch by the background worker.", 512)
    max_attempts: int = doc("Times a failing chunk is retried before it stays in error.", 5)
    allow_download: bool = doc("Let model2vec fetch a hub model that is not cached.", True)
    download_timeout_secs: float = doc("Give up on a model download after this long.", 20.0)
    fallback_dimensions: int = doc(
        "Vector size of the deterministic backend when the file has none yet.", 256)


@dataclass
class ChunkingConfig:
    """How extracted text is cut into indexable chunks (seed 001 step 6)."""

    max_chars: int = doc("Longest chunk, in characters.", 640)
    overlap_chars: int = doc("Characters shared by neighbouring chunks.", 96)
    context_messages: int = doc(
        "Earlier messages of the conversation indexed (and embedded) with each chunk as its "
        "context; 0 turns it off.", 2)
    context_chars: int = doc("Characters of each earlier message kept in a chunk's context.",
                             400)


@dataclass
class ImportanceConfig:
    """Default importance of an event by role (seed 000); a payload may set its own."""

    user: float = doc("Importance of a user message.", 0.5)
    assistant: float = doc("Importance of an assistant message.", 0.5)
    tool: float = doc("Importance of a tool result.", 0.3)
    system: float = doc("Importance of a system message.", 0.1)


@dataclass
class ShortTermConfig:
    """The in-memory working memory per session (seed 000 and seed 003 ``short_term``)."""

    max_history_turns: int = doc("Turns kept in working memory per session.", 50)
    session_ttl: float = doc('Idle time before a session is evicted ("24h", "90m" or seconds).',
                             86400.0)
    max_sessions: int = doc("Sessions held at once; the oldest-idle is evicted. 0 = unbounded.",
                            10000)


@dataclass
class RetrievalConfig:
    """Hybrid retrieval defaults (seed 001 "Hybrid Retrieval", seed 000, seed 003)."""

    default_recall_mode: str = doc('"keyword", "vector" or "hybrid".', "hybrid")
    vector_weight: float = doc(
        "Weight of the vector leg in fusion (seed 001 says 0.7; measured best 0.3).", 0.3)
    fts_weight: float = doc(
        "Weight of the FTS5 leg in fusion (seed 001 says 0.3; measured best 0.7).", 0.7)
    top_k: int = doc("Results returned when a query does not say.", 10)
    fusion: str = doc('"minmax", "rrf" or "dbsf".', "minmax")
    rrf_k: int = doc("Reciprocal-rank fusion constant.", 60)
    context_weight: float = doc(
        "bm25 weight of a chunk's conversational context against its own text (1.0).", 0.5)
    recency_limit: int = doc("Tri-hybrid: most recent messages included.", 10)
    salience_threshold: float = doc(
        "Tri-hybrid: importance at or above which a message is salient.", 0.85)
    relevance_threshold: float = doc("Tri-hybrid: vector similarity a relevant message exceeds.",
                                     0.655)
    relevance_limit: int = doc("Tri-hybrid: relevant messages included.", 5)
    log_enabled: bool = doc("Record every query in the retrieval log.", True)


@dataclass
class SummaryConfig:
    """Rolling summaries (seed 001 "Rolling Summarization")."""

    min_turns: int = doc("Unsummarised messages needed before summarising.", 4)
    trigger_ratio: float = doc("Token use of the budget above which summarising starts.", 0.80)
    target_ratio: float = doc("Token use summarising brings the history down to.", 0.50)
    token_budget: int = doc("Context window the history must fit, in tokens.", 8000)
    backend: str = doc('"extractive" (no model) or "http" (OpenAI-compatible chat).', "extractive")
    base_url: str = doc("http summarizer: the chat endpoint's base URL (…/v1).", "")
    model: str = doc("http summarizer: the chat model.", "")
    api_key: str = doc("http summarizer: the API key; use ${ENV_VAR}.", "", repr=False)
    timeout_secs: float = doc("http summarizer: request timeout in seconds.", 60.0)
    auto: bool = doc("Check a session for a rolling summary after each store()/append().", True)
    block_ratio: float = doc(
        "Room a condensation needs for its summary, as a share of the tokens it condenses.",
        0.25)
    archive_tokens: int = doc("Size of the summary a compaction writes into its archive.", 1500)
    archive_dir: str = doc(
        "Folder for compaction archives as markdown (default: conversations/ beside the file).",
        "")


@dataclass
class ConsolidationConfig:
    """Periodic consolidation of idle conversations (seed 000)."""

    interval_hours: float = doc("Hours between consolidation passes.", 6.0)
    idle_hours: float = doc("A conversation idle this long is consolidated.", 24.0)
    enabled: bool = doc("Run consolidation in the background while the engine is open.", True)


@dataclass
class NotesConfig:
    """Notes and their tags (seed 001 "Note Metadata", seed 002 categories)."""

    max_tags: int = doc("Tags a note may carry.", 16)
    max_tag_chars: int = doc("Characters in one tag.", 64)
    default_category: str = doc('"core", "daily" or "conversation".', "core")


@dataclass
class ScratchpadConfig:
    """The per-session scratchpad (seed 001 "Working-Memory Scratchpad")."""

    max_items: int = doc("Items the scratchpad holds.", 32)
    max_item_chars: int = doc("Characters in one item.", 240)


@dataclass
class SchedulerConfig:
    """Schedules and their runner (seed 001 "schedules")."""

    min_interval_secs: int = doc("Shortest gap a cadence may have.", 300)
    keep_runs: int = doc("Run history kept per schedule.", 100)
    max_consecutive_failures: int = doc("Failures after which a schedule pauses itself.", 5)
    poll_interval_secs: float = doc("How often the runner looks for due schedules.", 30.0)
    command: str = doc(
        "Runner action: a command line run for each due schedule (split like a shell, never "
        "run by one); empty = none.", "")
    webhook_url: str = doc(
        "Runner action: a URL POSTed each due schedule as JSON instead; empty = none.", "")
    webhook_token: str = doc("Bearer token sent to webhook_url; use ${ENV_VAR}.", "",
                             repr=False)
    action_timeout_secs: float = doc("A run still going after this long is stopped (timeout).",
                                     300.0)
    claim_secs: float | None = doc(
        "How long a runner holds a schedule it took before another may take it "
        "(default: action_timeout_secs + 60).", None)


@dataclass
class Config:
    """The whole configuration; every field has the seeds' default."""

    agent: str = doc("Agent identity recorded on new sessions (seed 003 per-agent isolation).",
                     "default")
    storage: StorageConfig = field(default_factory=StorageConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    importance: ImportanceConfig = field(default_factory=ImportanceConfig)
    short_term: ShortTermConfig = field(default_factory=ShortTermConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    summary: SummaryConfig = field(default_factory=SummaryConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    notes: NotesConfig = field(default_factory=NotesConfig)
    scratchpad: ScratchpadConfig = field(default_factory=ScratchpadConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)

    def to_dict(self) -> dict[str, Any]:
        """The config as the dict/TOML shape, secrets included (never log this)."""
        return dataclasses.asdict(self)


_ENV_PATTERN = re.compile(r"\$\{([^}]+)\}")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION_FIELDS = {"session_ttl"}


def parse_duration(value: str | int | float, key: str = "duration") -> float:
    """Seconds from humantime-like text ("24h", "1h30m", "90s") or a plain number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return _finite(float(value), key)
        except OverflowError:
            raise ConfigError(f"{key}: {_shown(value)} is too large") from None
    if not isinstance(value, str):
        raise ConfigError(f'{key}: expected a duration like "24h", got '
                          f"{type(value).__name__} {_shown(value)}")
    text = value.strip().replace(" ", "")
    if text and text.replace(".", "", 1).isdecimal():
        return _finite(float(text), key)
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if not text or pos != len(text):
        raise ConfigError(f'{key}: cannot read {_shown(value)} as a duration; write e.g. '
                          '"24h", "90m"')
    return _finite(total, key)


def _finite(value: float, key: str) -> float:
    if not math.isfinite(value):
        raise ConfigError(f"{key}: must be a finite number, got {value!r}")
    return value


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


class _SourceError(ConfigError):
    """A ``${…}`` that names a variable that is not set or a file that cannot be read."""


def _interpolate(value: str, key: str, environ: typing.Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        if name.startswith("file:"):
            path = Path(os.path.expanduser(name[5:]))
            try:
                return path.read_text(encoding="utf-8").strip()
            except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
                reason = getattr(exc, "strerror", None) or str(exc)
                raise _SourceError(f"{key}: cannot read {path!r} ({reason})") from None
        if name not in environ:
            shown = name if name.isprintable() and len(name) <= 60 else _shown(name)
            raise _SourceError(f"{key}: environment variable {shown} is not set")
        return environ[name]

    return _ENV_PATTERN.sub(replace, value)


def _from_env_text(text: str, annotation: Any) -> Any:
    """An interpolated value read as its field's type, so "${DIMS}" can fill an int."""
    allowed = typing.get_args(annotation) or (annotation,)
    if bool in allowed and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    for kind in (int, float):
        if kind in allowed:
            try:
                return kind(text.strip())
            except ValueError:
                pass
    return text


def _coerce(value: Any, annotation: Any, key: str, environ: typing.Mapping[str, str]) -> Any:
    """Check one value against its field type, interpolating env vars in strings."""
    if isinstance(value, str) and _ENV_PATTERN.search(value):
        value = _from_env_text(_interpolate(value, key, environ), annotation)
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        allowed = typing.get_args(annotation)
        if value is None and type(None) in allowed:
            return None
        annotation = next(a for a in allowed if a is not type(None))
    if key.rsplit(".", 1)[-1] in _DURATION_FIELDS:
        return parse_duration(value, key)
    if annotation is bool:
        if isinstance(value, bool):
            return value
    elif annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if not -(2**63) <= value < 2**63:
                raise ConfigError(f"{key}: {_shown(value)} is outside the 64-bit integer range")
            return value
    elif annotation is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return _finite(float(value), key)
            except OverflowError:
                raise ConfigError(f"{key}: {_shown(value)} is too large") from None
    elif annotation is str and isinstance(value, str):
        return value
    type_name = getattr(annotation, "__name__", str(annotation))
    raise ConfigError(f"{key}: expected {type_name}, got {type(value).__name__} "
                      f"{_shown(value)}")


def _build(cls: type, data: typing.Mapping[str, Any], prefix: str,
           environ: typing.Mapping[str, str]) -> Any:
    if not isinstance(data, typing.Mapping):
        raise ConfigError(f"[{prefix or 'top level'}]: expected a table, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known), key=str)
    if unknown:
        where = f"[{prefix}]" if prefix else "the top level"
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(_shown(key, 40) for key in unknown[:5])}"
            f"{f' and {len(unknown) - 5} more' if len(unknown) > 5 else ''} in "
            f"{where}; known keys: {', '.join(sorted(known))}"
        )
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else name
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value, key, environ)
            continue
        hidden = not known[name].repr or (isinstance(value, str)
                                          and _ENV_PATTERN.search(value) is not None)
        try:
            kwargs[name] = _coerce(value, hint, key, environ)
            continue
        except _SourceError:
            raise  # names the variable or file, never its value
        except ConfigError:
            if not hidden:
                raise
        # Raised here, outside the except block, so the refusal that quoted the value is
        # not kept as this one's context either.
        raise _unquoted_refusal(key, value, hint)
    return cls(**kwargs)


def _unquoted_refusal(key: str, value: Any, hint: Any) -> ConfigError:
    """A refusal of a secret field's value, or of text from ``${…}`` (which may be a key
    put in the wrong field), that does not quote what it refused."""
    source = (f"the value of {value!r}" if isinstance(value, str)
              else f"the {type(value).__name__} given")
    expected = " or ".join(getattr(a, "__name__", str(a)) for a in typing.get_args(hint)
                           if a is not type(None)) or getattr(hint, "__name__", str(hint))
    return ConfigError(f"{key}: expected {expected}, but {source} is not one (not shown: "
                       "it may be a secret)")


def _validate(config: Config) -> None:
    """Refuse values that parse but make no sense, naming the key."""
    problems = []
    if config.embedding.backend not in ("model2vec", "http", "deterministic"):
        problems.append(f'embedding.backend: {_shown(config.embedding.backend)} is not one '
                        'of "model2vec", "http", "deterministic"')
    if config.retrieval.default_recall_mode not in ("keyword", "vector", "hybrid"):
        problems.append("retrieval.default_recall_mode: must be keyword, vector or hybrid")
    if config.retrieval.fusion not in ("minmax", "rrf", "dbsf"):
        problems.append("retrieval.fusion: must be minmax, rrf or dbsf")
    if config.summary.backend not in ("extractive", "http"):
        problems.append("summary.backend: must be extractive or http")
    summary = config.summary
    if summary.min_turns < 1:
        problems.append("summary.min_turns: must be at least 1")
    if not 0 < summary.target_ratio < summary.trigger_ratio <= 1:
        problems.append("summary.target_ratio and trigger_ratio: need 0 < target < trigger <= 1")
    if summary.token_budget < 64:
        problems.append("summary.token_budget: must be at least 64")
    if not 0 < summary.block_ratio <= 1:
        problems.append("summary.block_ratio: must be above 0 and at most 1")
    if summary.archive_tokens < 16:
        problems.append("summary.archive_tokens: must be at least 16")
    if config.consolidation.interval_hours <= 0 or config.consolidation.idle_hours < 0:
        problems.append("consolidation: interval_hours must be above 0, idle_hours at least 0")
    if config.notes.default_category not in ("core", "daily", "conversation"):
        problems.append("notes.default_category: must be core, daily or conversation")
    if config.chunking.max_chars < 16:
        problems.append("chunking.max_chars: must be at least 16")
    if not 0 <= config.chunking.overlap_chars < config.chunking.max_chars // 2:
        problems.append("chunking.overlap_chars: must be at least 0 and under half of max_chars")
    if not 0 <= config.chunking.context_messages <= 16:
        problems.append("chunking.context_messages: must be from 0 to 16")
    if config.chunking.context_chars < 1:
        problems.append("chunking.context_chars: must be at least 1")
    if not 0 <= config.retrieval.context_weight <= 10:
        problems.append("retrieval.context_weight: must be from 0 to 10")
    if config.storage.synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
        problems.append("storage.synchronous: must be NORMAL, FULL or EXTRA")
    if config.storage.mmap_mb < 0:
        problems.append("storage.mmap_mb: must be 0 (off) or more")
    if config.short_term.session_ttl <= 0:
        problems.append("short_term.session_ttl: must be longer than 0 s")
    if config.short_term.max_history_turns < 1:
        problems.append("short_term.max_history_turns: must be at least 1")
    if config.short_term.max_sessions < 0:
        problems.append("short_term.max_sessions: must be 0 (unbounded) or more")
    if config.storage.reader_pool_size < 1:
        problems.append("storage.reader_pool_size: must be at least 1")
    if config.embedding.batch_size < 1:
        problems.append("embedding.batch_size: must be at least 1")
    if config.embedding.dimensions is not None and config.embedding.dimensions < 1:
        problems.append("embedding.dimensions: must be a positive number")
    for name in ("vector_weight", "fts_weight"):
        if getattr(config.retrieval, name) < 0:
            problems.append(f"retrieval.{name}: must not be negative")
    if problems:
        raise ConfigError("; ".join(problems))


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
        try:
            path = Path(source).expanduser()
        except RuntimeError:  # ~name of a user this machine does not know
            raise ConfigError(f"config file {_shown(str(source))}: no home directory for "
                              "its ~user") from None
        try:
            with path.open("rb") as handle:
                data = tomllib.load(handle)
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            exc.__traceback__ = None  # its frames hold the file's text, any key in it too
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start})"
                              ) from None
        except RecursionError:
            raise ConfigError(f"config file {path} nests arrays or tables too deeply") from None
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        except ValueError as exc:  # a NUL or a lone surrogate in the path
            raise ConfigError(f"cannot read config file {_shown(str(path))}: {exc}") from None
    elif isinstance(source, typing.Mapping):
        data = dict(source)
    else:
        raise ConfigError("a config is a TOML file's path, a dict or a Config; got "
                          f"{type(source).__name__}")
    config = _build(Config, data, "", environ)
    _validate(config)
    return config


def describe_fields(cls: type = Config, prefix: str = "") -> list[tuple[str, Any, str]]:
    """Every (dotted key, default, doc) of the config, for help text and docs."""
    rows: list[tuple[str, Any, str]] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(hints[f.name]):
            rows.extend(describe_fields(hints[f.name], key))
        else:
            rows.append((key, f.default, f.metadata.get("doc", "")))
    return rows
