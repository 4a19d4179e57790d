"""Typed configuration: one TOML file, every seed default, ``${ENV_VAR}`` interpolation.

The dict form passed to ``Engine.open(config=...)`` mirrors the TOML file section by
section. ``sections`` holds every key with its default, bounds and description;
``loading`` reads a file, a dict or ``$WORKBENCH_CONFIG`` into a validated ``Config`` and
turns every problem into one ``ConfigError``.
"""

from __future__ import annotations

from core.config.loading import CONFIG_ENV_VAR, load_config
from core.config.sections import (
    ChunkingConfig,
    Config,
    ConsolidationConfig,
    EmbeddingConfig,
    ImportanceConfig,
    NotesConfig,
    RetrievalConfig,
    SchedulerConfig,
    ScratchpadConfig,
    ShortTermConfig,
    StorageConfig,
    SummaryConfig,
    describe_fields,
    parse_duration,
)

__all__ = [
    "CONFIG_ENV_VAR",
    "ChunkingConfig",
    "Config",
    "ConsolidationConfig",
    "EmbeddingConfig",
    "ImportanceConfig",
    "NotesConfig",
    "RetrievalConfig",
    "ScratchpadConfig",
    "SchedulerConfig",
    "ShortTermConfig",
    "StorageConfig",
    "SummaryConfig",
    "describe_fields",
    "load_config",
    "parse_duration",
]
