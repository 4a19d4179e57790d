"""Memory locations: a path is SQLite, a postgresql:// URL is the team backend, any other
scheme is refused; a URL's password never shows."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from core.errors import InvalidInput
from core.locations import parse_location, redact_url, scrub


@pytest.mark.parametrize("value", ["memory.db", "/var/lib/agent/memory.db", "dir/with:colon.db",
                                   "C://folder/memory.db", "file-without-scheme"])
def test_a_string_without_a_url_scheme_is_a_sqlite_file(value: str) -> None:
    location = parse_location(value)
    assert location.kind == "sqlite"
    assert location.path == Path(value)
    assert str(location) == value


def test_a_path_object_is_a_sqlite_file_even_if_it_looks_like_a_url() -> None:
    location = parse_location(Path("postgresql:") / "x.db")
    assert location.kind == "sqlite"


@pytest.mark.parametrize("url", ["postgresql://agent@db.internal:5432/memory",
                                 "postgres://agent@db/memory", "PostgreSQL://agent@db/memory",
                                 "postgresql:///memory?host=/run/postgresql"])
def test_postgres_urls_are_the_team_backend(url: str) -> None:
    location = parse_location(url)
    assert location.is_postgres
    assert location.target == url
    with pytest.raises(ValueError, match="not a file"):
        _ = location.path


@pytest.mark.parametrize("url", ["mysql://root:hunter2@db/memory", "sqlite:///memory.db",
                                 "postgressql://agent@db/memory", "file:///tmp/memory.db"])
def test_other_schemes_are_refused_naming_the_supported_ones(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_location(url)
    message = str(refused.value)
    assert "postgresql://" in message and "SQLite file path" in message
    assert "hunter2" not in message


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://agent:hunter2@db:5432/memory", "postgresql://agent:***@db:5432/memory"),
    ("postgresql://agent@db/memory", "postgresql://agent@db/memory"),
    ("postgresql://agent:p@ss@db/memory", "postgresql://agent:***@db/memory"),
    ("postgresql://agent:p%40ss@db/memory?sslmode=require",
     "postgresql://agent:***@db/memory?sslmode=require"),
    ("postgresql://db/memory?user=agent&password=hunter2&sslmode=require",
     "postgresql://db/memory?user=agent&sslmode=require"),
    ("postgresql://db/memory?PASSWORD=hunter2", "postgresql://db/memory"),
    ("postgresql://db/memory?sslpassword=keypass", "postgresql://db/memory"),
    ("postgresql://agent:hunter2@h1:5432,h2:5433/memory", "postgresql://agent:***@h1:5432,h2:5433/memory"),
    ("postgresql://agent:hunter2@[bad/memory", "postgresql://***"),
])
def test_redact_url_removes_every_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_a_location_never_prints_its_password() -> None:
    location = parse_location("postgresql://agent:hunter2@db/memory?password=other")
    for text in (str(location), repr(location), f"{location}", location.display):
        assert "hunter2" not in text and "other" not in text
    assert set(location.secrets) == {"hunter2", "other"}


def test_scrub_replaces_the_password_as_written_and_decoded() -> None:
    location = parse_location("postgresql://agent:p%40ss@db/memory")
    driver_message = 'invalid dsn "postgresql://agent:p%40ss@db/memory" (password p@ss)'
    scrubbed = scrub(driver_message, location.secrets)
    assert "p%40ss" not in scrubbed and "p@ss" not in scrubbed
    assert scrubbed.count("***") == 2


_PASSWORD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"),
                                  exclude_characters="*"), min_size=6, max_size=24)


@given(password=_PASSWORD)
def test_no_password_survives_redaction(password: str) -> None:
    shown_parts = "postgresql://agent:***@db/memory?sslmode=prefer"
    assume(password not in shown_parts)
    for url in (f"postgresql://agent:{quote(password, safe='')}@db/memory?sslmode=prefer",
                f"postgresql://agent@db/memory?password={quote(password, safe='')}"
                "&sslmode=prefer"):
        location = parse_location(url)
        assert password not in location.display
        assert password not in scrub(f"failed for {url} ({password})", location.secrets)


@pytest.mark.parametrize("url", ["postgresql://agent:hunter2@[unclosed/memory",
                                 "postgresql://agent@[unclosed/memory?password=hunter2"])
def test_an_unsplittable_url_still_gives_up_its_password_for_scrubbing(url: str) -> None:
    location = parse_location(url)
    assert location.secrets == ("hunter2",)
    assert location.display == "postgresql://***"


@pytest.mark.parametrize("url", ["mysql://root:hunter2@db/memory", "sqlite:///memory.db"])
async def test_engine_open_refuses_another_scheme_and_makes_no_folder(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core import Engine

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="postgresql://"):
        async with Engine.open(url):
            pass
    assert list(tmp_path.iterdir()) == []
