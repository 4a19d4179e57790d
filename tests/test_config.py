"""core/config/: seed defaults, TOML/dict/Config/env sources, refusals by name, interpolation."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from core.config import (
    CONFIG_ENV_VAR,
    Config,
    EmbeddingConfig,
    RetrievalConfig,
    describe_fields,
    load_config,
    parse_duration,
)
from core.errors import ConfigError

SECRET = "sk-very-secret-0123456789"


def to_toml(data: dict[str, Any]) -> str:
    """A minimal TOML writer for the config's shape (scalars at top, one table per section)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)  # a JSON string is a valid TOML basic string for plain text
        raise TypeError(f"cannot write {v!r}")

    top = [f"{k} = {value(v)}" for k, v in data.items()
           if not isinstance(v, dict) and v is not None]
    tables = []
    for name, section in data.items():
        if isinstance(section, dict):
            lines = [f"{k} = {value(v)}" for k, v in section.items() if v is not None]
            tables.append(f"[{name}]\n" + "\n".join(lines))
    return "\n".join(top) + "\n\n" + "\n\n".join(tables) + "\n"


# --- defaults ----------------------------------------------------------------------------------


def test_defaults_are_the_seeds_numbers() -> None:
    cfg = load_config({}, environ={})
    assert cfg == Config()
    assert (cfg.embedding.backend, cfg.embedding.model) == ("model2vec",
                                                            "minishlab/potion-base-8M")
    assert (cfg.chunking.max_chars, cfg.chunking.overlap_chars) == (640, 96)
    imp = cfg.importance
    assert (imp.user, imp.assistant, imp.tool, imp.system) == (0.5, 0.5, 0.3, 0.1)
    st_ = cfg.short_term
    assert (st_.max_history_turns, st_.session_ttl, st_.max_sessions) == (50, 86400.0, 10000)
    r = cfg.retrieval
    # Weights are the one measured departure from oxydra's 0.7/0.3 (README "Evaluation").
    assert (r.vector_weight, r.fts_weight, r.default_recall_mode) == (0.3, 0.7, "hybrid")
    assert (r.recency_limit, r.salience_threshold, r.relevance_threshold,
            r.relevance_limit) == (10, 0.85, 0.655, 5)
    s = cfg.summary
    assert (s.min_turns, s.trigger_ratio, s.target_ratio) == (4, 0.80, 0.50)
    assert cfg.consolidation.interval_hours == 6.0
    assert (cfg.notes.max_tags, cfg.notes.max_tag_chars) == (16, 64)
    assert (cfg.scratchpad.max_items, cfg.scratchpad.max_item_chars) == (32, 240)
    assert cfg.storage.reader_pool_size == 5


# --- sources -----------------------------------------------------------------------------------


def test_toml_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "workbench.toml"
    path.write_text(
        'agent = "scout"\n'
        "[embedding]\n"
        'backend = "http"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\ndimensions = 384\n'
        "[chunking]\nmax_chars = 400\noverlap_chars = 40\n"
        '[short_term]\nsession_ttl = "1h30m"\n'
        '[retrieval]\nvector_weight = 1\nfusion = "rrf"\n',
        encoding="utf-8")
    cfg = load_config(path, environ={})
    assert cfg.agent == "scout"
    assert (cfg.embedding.backend, cfg.embedding.dimensions) == ("http", 384)
    assert (cfg.chunking.max_chars, cfg.chunking.overlap_chars) == (400, 40)
    assert cfg.short_term.session_ttl == 5400.0
    assert cfg.retrieval.vector_weight == 1.0 and isinstance(cfg.retrieval.vector_weight, float)
    assert cfg.retrieval.fusion == "rrf"
    assert cfg.retrieval.fts_weight == RetrievalConfig().fts_weight  # untouched: the default
    assert load_config(str(path), environ={}) == cfg  # a str path works like a Path


def test_config_round_trips_through_a_toml_file(tmp_path: Path) -> None:
    changed = Config(agent="ünïcode agent \"quoted\"")
    changed.embedding.dimensions = 48
    changed.embedding.allow_download = False
    changed.chunking.max_chars = 1000
    changed.short_term.session_ttl = 90.0
    changed.retrieval.salience_threshold = 0.9
    changed.summary.api_key = SECRET
    path = tmp_path / "round.toml"
    path.write_text(to_toml(changed.to_dict()), encoding="utf-8")
    assert load_config(path, environ={}) == changed


def test_dict_source_and_config_source() -> None:
    cfg = load_config({"agent": "a1", "notes": {"max_tags": 3}}, environ={})
    assert (cfg.agent, cfg.notes.max_tags) == ("a1", 3)
    given_cfg = Config(agent="as-is")
    assert load_config(given_cfg) is given_cfg


def test_none_without_env_var_is_the_defaults() -> None:
    assert load_config(None, environ={}) == Config()
    assert load_config(None, environ={CONFIG_ENV_VAR: ""}) == Config()


def test_none_reads_the_file_named_by_the_env_var(tmp_path: Path) -> None:
    path = tmp_path / "from-env.toml"
    path.write_text('agent = "env-agent"\n[scratchpad]\nmax_items = 7\n', encoding="utf-8")
    cfg = load_config(None, environ={CONFIG_ENV_VAR: str(path)})
    assert (cfg.agent, cfg.scratchpad.max_items) == ("env-agent", 7)


def test_missing_and_invalid_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "absent.toml", environ={})
    bad = tmp_path / "bad.toml"
    bad.write_text("agent = \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad, environ={})


# --- refusals ----------------------------------------------------------------------------------


def test_unknown_top_level_key_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"embeding": {"backend": "http"}}, environ={})
    message = str(info.value)
    assert "'embeding'" in message and "top level" in message
    for known in ("embedding", "chunking", "retrieval", "agent"):
        assert known in message.split("known keys:")[1]


def test_unknown_key_in_a_section_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('[embedding]\nmodle = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    message = str(info.value)
    assert "'modle'" in message and "[embedding]" in message
    assert "model" in message.split("known keys:")[1]
    assert "base_url" in message


def test_several_unknown_keys_are_all_named() -> None:
    with pytest.raises(ConfigError, match="unknown keys 'aa', 'bb'"):
        load_config({"bb": 1, "aa": 2}, environ={})


@pytest.mark.parametrize(("data", "expected"), [
    ({"chunking": {"max_chars": "640"}}, "chunking.max_chars: expected int"),
    ({"chunking": {"max_chars": 640.0}}, "chunking.max_chars: expected int"),
    ({"storage": {"reader_pool_size": True}}, "storage.reader_pool_size: expected int"),
    ({"embedding": {"allow_download": 1}}, "embedding.allow_download: expected bool"),
    ({"embedding": {"model": 5}}, "embedding.model: expected str"),
    ({"retrieval": {"vector_weight": "high"}}, "retrieval.vector_weight: expected float"),
    ({"retrieval": {"vector_weight": False}}, "retrieval.vector_weight: expected float"),
    ({"embedding": {"dimensions": "8"}}, "embedding.dimensions: expected int"),
    ({"agent": ["x"]}, "agent: expected str"),
    ({"embedding": "http"}, r"\[embedding\]: expected a table"),
])
def test_wrong_types_name_the_dotted_key(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_config(data, environ={})


def test_int_is_accepted_for_a_float_and_none_for_an_optional() -> None:
    cfg = load_config({"retrieval": {"vector_weight": 1, "fts_weight": 0},
                       "embedding": {"dimensions": None}}, environ={})
    assert cfg.retrieval.vector_weight == 1.0 and type(cfg.retrieval.vector_weight) is float
    assert type(cfg.retrieval.fts_weight) is float
    assert cfg.embedding.dimensions is None


# --- interpolation -----------------------------------------------------------------------------


def test_env_var_interpolation_uses_the_given_environ() -> None:
    cfg = load_config({"embedding": {"backend": "http", "api_key": "${MY_KEY}",
                                     "base_url": "http://${HOST}:8080/v1"}},
                      environ={"MY_KEY": SECRET, "HOST": "127.0.0.1"})
    assert cfg.embedding.api_key == SECRET
    assert cfg.embedding.base_url == "http://127.0.0.1:8080/v1"


def test_file_interpolation_reads_and_strips_the_file(tmp_path: Path) -> None:
    key_file = tmp_path / "key.txt"
    key_file.write_text(f"  {SECRET}\n", encoding="utf-8")
    cfg = load_config({"summary": {"api_key": f"${{file:{key_file}}}"}}, environ={})
    assert cfg.summary.api_key == SECRET
    with pytest.raises(ConfigError, match=r"summary\.api_key: cannot read"):
        load_config({"summary": {"api_key": f"${{file:{tmp_path / 'none.txt'}}}"}}, environ={})


def test_missing_env_var_names_the_variable_and_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"embedding": {"api_key": "${NOT_SET_ANYWHERE}"}}, environ={"OTHER": "1"})
    message = str(info.value)
    assert "NOT_SET_ANYWHERE" in message and "embedding.api_key" in message


def test_env_var_interpolation_in_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "env.toml"
    path.write_text('[embedding]\napi_key = "${TOKEN}"\n', encoding="utf-8")
    assert load_config(path, environ={"TOKEN": SECRET}).embedding.api_key == SECRET


# --- durations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [
    ("24h", 86400.0), ("1h30m", 5400.0), ("90s", 90.0), ("90m", 5400.0), ("1d", 86400.0),
    ("1.5h", 5400.0), ("500ms", 0.5), (" 2h 15m ", 8100.0), ("3600", 3600.0),
    (3600, 3600.0), (2.5, 2.5),
])
def test_durations(value: Any, seconds: float) -> None:
    cfg = load_config({"short_term": {"session_ttl": value}}, environ={})
    assert cfg.short_term.session_ttl == seconds
    assert type(cfg.short_term.session_ttl) is float


@pytest.mark.parametrize(("value", "words"), [
    ("soon", "cannot read 'soon' as a duration"),
    ("", "as a duration"),
    ("24x", "as a duration"),
    ("h24", "as a duration"),
    ("10h soon", "as a duration"),
    (True, "expected a duration"),
    ("0s", "must be longer than 0 s"),
    (0, "must be longer than 0 s"),
    (-5, "must be longer than 0 s"),
])
def test_bad_durations_are_refused(value: Any, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        load_config({"short_term": {"session_ttl": value}}, environ={})
    assert "session_ttl" in str(info.value)


def test_parse_duration_names_its_key() -> None:
    assert parse_duration("2w") == 1209600.0
    with pytest.raises(ConfigError, match="^my.key: "):
        parse_duration("later", "my.key")


# --- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), [
    ({"embedding": {"backend": "openai"}}, "embedding.backend: 'openai'"),
    ({"retrieval": {"default_recall_mode": "semantic"}}, "retrieval.default_recall_mode"),
    ({"retrieval": {"fusion": "sum"}}, "retrieval.fusion"),
    ({"summary": {"backend": "gpt"}}, "summary.backend"),
    ({"notes": {"default_category": "misc"}}, "notes.default_category"),
    ({"storage": {"synchronous": "OFF"}}, "storage.synchronous"),
    ({"storage": {"mmap_mb": -1}}, "storage.mmap_mb"),
    ({"storage": {"reader_pool_size": 0}}, "storage.reader_pool_size"),
    ({"embedding": {"batch_size": 0}}, "embedding.batch_size"),
    ({"embedding": {"dimensions": 0}}, "embedding.dimensions"),
    ({"retrieval": {"fts_weight": -0.1}}, "retrieval.fts_weight"),
    ({"short_term": {"max_history_turns": 0}}, "short_term.max_history_turns"),
    ({"short_term": {"max_sessions": -1}}, "short_term.max_sessions"),
    ({"chunking": {"max_chars": 8, "overlap_chars": 0}}, "chunking.max_chars"),
    ({"chunking": {"max_chars": 100, "overlap_chars": 50}}, "chunking.overlap_chars"),
    ({"chunking": {"max_chars": 100, "overlap_chars": 80}}, "chunking.overlap_chars"),
    ({"chunking": {"overlap_chars": -1}}, "chunking.overlap_chars"),
])
def test_validation_names_the_key(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_config(data, environ={})


def test_overlap_just_under_half_is_accepted_and_problems_are_all_listed() -> None:
    cfg = load_config({"chunking": {"max_chars": 100, "overlap_chars": 49}}, environ={})
    assert cfg.chunking.overlap_chars == 49
    with pytest.raises(ConfigError) as info:
        load_config({"embedding": {"backend": "x"}, "retrieval": {"fusion": "y"}}, environ={})
    assert "embedding.backend" in str(info.value) and "retrieval.fusion" in str(info.value)


def test_valid_choices_are_accepted() -> None:
    for backend in ("model2vec", "http", "deterministic"):
        assert load_config({"embedding": {"backend": backend}}, environ={}).embedding.backend \
            == backend
    for mode in ("keyword", "vector", "hybrid"):
        load_config({"retrieval": {"default_recall_mode": mode}}, environ={})
    for fusion in ("minmax", "rrf", "dbsf"):
        load_config({"retrieval": {"fusion": fusion}}, environ={})
    load_config({"storage": {"synchronous": "full"}}, environ={})  # case-insensitive


# --- secrets and docs --------------------------------------------------------------------------


def test_api_keys_never_appear_in_repr() -> None:
    cfg = load_config({"embedding": {"api_key": "${K}"}, "summary": {"api_key": "${K}"}},
                      environ={"K": SECRET})
    assert cfg.embedding.api_key == SECRET
    for text in (repr(cfg), str(cfg), repr(cfg.embedding), repr(cfg.summary),
                 repr(EmbeddingConfig(api_key=SECRET))):
        assert SECRET not in text


def test_describe_fields_documents_every_field() -> None:
    rows = describe_fields()
    keys = [key for key, _, _ in rows]
    assert len(keys) == len(set(keys))
    for key, _default, text in rows:
        assert isinstance(text, str) and text.strip(), f"{key} has no doc"
    expected = set()
    for name, f in Config.model_fields.items():
        section = f.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            expected |= {f"{name}.{inner}" for inner in section.model_fields}
        else:
            expected.add(name)
    assert set(keys) == expected
    by_key = {key: default for key, default, _ in rows}
    assert by_key["chunking.max_chars"] == 640
    assert by_key["embedding.backend"] == "model2vec"
    assert by_key["short_term.session_ttl"] == 86400.0


# --- junk never escapes as anything but ConfigError ---------------------------------------------

KNOWN_NAMES = sorted({key.split(".")[-1] for key, _, _ in describe_fields()}
                     | {key.split(".")[0] for key, _, _ in describe_fields()})

keys = st.one_of(st.text(max_size=12), st.sampled_from(KNOWN_NAMES))
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),  # what TOML can hold
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["24h", "1h30m", "0s", "soon", "http", "hybrid", "rrf", "${UNSET_VAR}",
                     "${SET_VAR}", "${file:/no/such/file}", "${file:}", "${}", "${ }"]),
)
json_ish = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(keys, children, max_size=4)),
    max_leaves=12,
)


def _plausible(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of roughly the field's type, so examples get past the first key to later ones."""
    text = str(annotation)
    if "bool" in text:
        return st.booleans()
    if "int" in text:
        return st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
    if "float" in text:
        return st.one_of(st.floats(), st.integers(min_value=-10, max_value=10 ** 6),
                         st.text(max_size=8))
    return st.text(max_size=20)


def _schema_shaped(cls: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts whose keys are mostly the real ones of ``cls``, with junk values mixed in."""
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, f in cls.model_fields.items():
        hint = f.annotation
        is_section = isinstance(hint, type) and issubclass(hint, BaseModel)
        inner = _schema_shaped(hint) if is_section else _plausible(hint)  # type: ignore[arg-type]
        optional[name] = st.one_of(inner, json_ish) if is_section \
            else st.one_of(inner, inner, json_ish)
    shaped = st.fixed_dictionaries({}, optional=optional)
    extra = st.dictionaries(keys, json_ish, max_size=1)
    return st.one_of(shaped, shaped, st.tuples(shaped, extra).map(lambda p: {**p[0], **p[1]}))


junk = st.one_of(st.dictionaries(keys, json_ish, max_size=6), _schema_shaped(Config))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk)
def test_junk_only_ever_raises_config_error(data: dict[str, Any]) -> None:
    try:
        cfg = load_config(data, environ={"SET_VAR": "value"})
    except ConfigError as exc:
        assert str(exc)
    else:
        assert isinstance(cfg, Config)


# --- inputs that once escaped as other exceptions ---------------------------------------------


@pytest.mark.parametrize("value", [None, [1]])
def test_non_string_duration_is_a_config_error(value: Any) -> None:
    with pytest.raises(ConfigError, match="session_ttl"):
        load_config({"short_term": {"session_ttl": value}}, environ={})


def test_toml_date_duration_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "date.toml"
    path.write_text("[short_term]\nsession_ttl = 1979-05-27\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="session_ttl"):
        load_config(path, environ={})


def test_superscript_digit_duration_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="session_ttl"):
        load_config({"short_term": {"session_ttl": "²"}}, environ={})


def test_huge_int_for_a_float_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="retrieval.vector_weight"):
        load_config({"retrieval": {"vector_weight": 10 ** 400}}, environ={})


def test_nul_in_a_file_reference_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="agent"):
        load_config({"agent": "${file:a\x00b}"}, environ={})


@pytest.mark.parametrize("data", [
    {"short_term": {"session_ttl": math.nan}},
    {"retrieval": {"vector_weight": math.nan}},
])
def test_nan_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        load_config(data, environ={})


def test_env_values_fill_numeric_and_boolean_fields() -> None:
    environ = {"DIMS": "384", "WEIGHT": "0.4", "DL": "false", "NAME": "bot"}
    cfg = load_config({"agent": "${NAME}-1", "embedding": {"dimensions": "${DIMS}",
                                                         "allow_download": "${DL}"},
                       "retrieval": {"vector_weight": "${WEIGHT}"}}, environ=environ)
    assert cfg.embedding.dimensions == 384 and cfg.embedding.allow_download is False
    assert cfg.retrieval.vector_weight == 0.4 and cfg.agent == "bot-1"
    with pytest.raises(ConfigError, match="embedding.dimensions: expected int"):
        load_config({"embedding": {"dimensions": "${NAME}"}}, environ=environ)


def test_a_relative_model_folder_is_read_from_the_config_files_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf" / "models" / "mine").mkdir(parents=True)
    config_file = tmp_path / "conf" / "workbench.toml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for written in ("models/mine", "./models/mine"):
        config_file.write_text(f'[embedding]\nmodel = "{written}"\n')
        assert load_config(config_file).embedding.model == str(tmp_path / "conf" / "models"
                                                               / "mine")
    config_file.write_text('[embedding]\nmodel = "minishlab/potion-base-8M"\n')
    assert load_config(config_file).embedding.model == "minishlab/potion-base-8M"
