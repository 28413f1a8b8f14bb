"""The store URL of a PostgreSQL failover cluster: libpq's multi-host form becomes the one SQLAlchemy parses."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from gravimeta.config import load_settings, multi_host_url

COMMA = "postgresql+psycopg://gm:s%40cret@127.0.0.1:25432,127.0.0.1:25433/gravimeta?target_session_attrs=read-write"


def test_the_comma_form_becomes_one_host_parameter_per_member_and_keeps_the_rest():
    url = make_url(multi_host_url(COMMA))
    assert url.query["host"] == ("127.0.0.1:25432", "127.0.0.1:25433")
    assert url.query["target_session_attrs"] == "read-write"
    assert (url.username, url.password, url.database, url.host) == ("gm", "s@cret", "gravimeta", None)


def test_without_credentials_or_query_and_with_three_members():
    url = make_url(multi_host_url("postgresql://h1:1,h2:2,h3:3/db"))
    assert url.query["host"] == ("h1:1", "h2:2", "h3:3") and url.database == "db" and url.username is None


def test_other_urls_are_left_alone():
    for url in ("postgresql+psycopg://u@127.0.0.1:5432/test", "sqlite:////tmp/a,b.db", "mysql+pymysql://root@h:3306/t",
                "postgresql+psycopg://u@/db?host=a:1&host=b:2", ""):
        assert multi_host_url(url) == url


def test_the_settings_carry_the_parsed_form():
    settings = load_settings(environ={"GRAVIMETA_STORE_URL": COMMA})
    assert make_url(settings.store_url).query["host"] == ("127.0.0.1:25432", "127.0.0.1:25433")


def test_alembic_takes_a_url_with_percent_escapes():
    from sqlalchemy import create_engine

    from gravimeta.store.migrations import alembic_config

    url = multi_host_url(COMMA)
    config = alembic_config(create_engine(url))
    assert make_url(config.get_main_option("sqlalchemy.url")) == make_url(url)
