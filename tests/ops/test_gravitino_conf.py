"""A real gravitino.conf is read, not silently ignored: Gravitino 1.3's JDBC store keys name the store
(PostgreSQL and MySQL/MariaDB; H2 refused), a misspelt key in gravimeta's own namespaces is refused and
other unknown gravitino.* keys are reported at start; `serve` on a store that is missing or not migrated
names it and the exact command, and creates nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from gravimeta.config import load_settings
from tests.conftest import require_backend
from tests.ops.test_store_target import gravimeta
from tests.support.databases import fresh_database

#: the store part of Gravitino 1.3's gravitino.conf, with some of its other settings
GRAVITINO_CONF = """\
gravitino.server.shutdown.timeout = 3000
gravitino.server.webserver.host = 127.0.0.1
gravitino.server.webserver.httpPort = 8090
gravitino.server.webserver.minThreads = 24
gravitino.entity.store = relational
gravitino.entity.store.relational = JDBCBackend
gravitino.entity.store.relational.jdbcUrl = {jdbc}
gravitino.entity.store.relational.jdbcDriver = {driver}
gravitino.entity.store.relational.jdbcUser = {user}
gravitino.entity.store.relational.jdbcPassword = {password}
gravitino.catalog.cache.evictionIntervalMs = 3600000
"""


def conf(tmp_path: Path, text: str, name: str = "gravitino.conf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_gravitinos_jdbc_store_keys_name_the_store(tmp_path, caplog):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        database = url.rsplit("/", 1)[1]
        path = conf(tmp_path, GRAVITINO_CONF.format(jdbc=f"jdbc:postgresql://127.0.0.1:5432/{database}?sslmode=disable",
                                                    driver="org.postgresql.Driver", user="postgres", password=""))
        with caplog.at_level(logging.WARNING):
            settings = load_settings(path, environ={})
        assert settings.store_url == f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}?sslmode=disable"
        ignored = [r.getMessage() for r in caplog.records if "mean nothing to gravimeta" in r.getMessage()]
        assert len(ignored) == 1 and "gravitino.server.webserver.minThreads" in ignored[0], ignored
        assert "jdbcUrl" not in ignored[0] and "httpPort" not in ignored[0]

        listed = gravimeta("--config", str(path), "locks", cwd=tmp_path)  # the CLI uses that store, not ./var
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith(f"store postgresql+psycopg://postgres@127.0.0.1:5432/{database}"), listed.stdout
    assert not (tmp_path / "var").exists()


@pytest.mark.parametrize(("jdbc", "expected", "dropped"), [
    ("jdbc:mysql://db.example:3306/gravitino?useSSL=false", "mysql+pymysql://gravitino:p%40ss@db.example:3306/gravitino",
     "useSSL"),
    ("jdbc:mariadb://db.example/gravitino", "mysql+pymysql://gravitino:p%40ss@db.example/gravitino", None),
])
def test_mysql_and_mariadb_jdbc_urls(tmp_path, caplog, jdbc, expected, dropped):
    path = conf(tmp_path, GRAVITINO_CONF.format(jdbc=jdbc, driver="com.mysql.cj.jdbc.Driver", user="gravitino",
                                                password="p@ss"))
    with caplog.at_level(logging.WARNING):
        assert load_settings(path, environ={}).store_url == expected
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert (dropped is None and left_out == []) or (dropped is not None and dropped in left_out[0])
    # the environment and --store-url still come first
    assert load_settings(path, environ={"GRAVIMETA_STORE_URL": "sqlite:///x.db"}).store_url == "sqlite:///x.db"


@pytest.mark.parametrize(("jdbc", "expected", "dropped"), [
    ("jdbc:postgresql://h1:5432,h2:5433,h3/gravitino?targetServerType=primary&connectTimeout=2&ApplicationName=g",
     "postgresql+psycopg://gravitino:p%40ss@/gravitino?connect_timeout=2&host=h1%3A5432&host=h2%3A5433&host=h3"
     "&target_session_attrs=read-write", "ApplicationName"),
    ("jdbc:postgresql://h1,h2/gravitino?targetServerType=master&sslmode=require",
     "postgresql+psycopg://gravitino:p%40ss@/gravitino?host=h1&host=h2&sslmode=require&target_session_attrs=read-write",
     None),
    ("jdbc:postgresql://h1:5432/gravitino?targetServerType=any", "postgresql+psycopg://gravitino:p%40ss@h1:5432/gravitino",
     None),
])
def test_a_postgresql_jdbc_failover_list_becomes_a_multi_host_url(tmp_path, caplog, jdbc, expected, dropped):
    """pgjdbc's host list and targetServerType (Gravitino on a Patroni cluster, docs/ha.md) become libpq's
    multi-host URL with target_session_attrs=read-write: gravimeta follows the primary as Gravitino did."""
    path = conf(tmp_path, GRAVITINO_CONF.format(jdbc=jdbc, driver="org.postgresql.Driver", user="gravitino",
                                                password="p@ss"))
    with caplog.at_level(logging.WARNING):
        assert load_settings(path, environ={}).store_url == expected
    left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert (dropped is None and left_out == []) or (dropped is not None and left_out[0].endswith(dropped))


def test_a_jdbc_failover_list_reaches_the_server_that_answers(tmp_path):
    """The first host refuses (port 1), the second is the machine's PostgreSQL: the translated URL connects."""
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path) as url:
        database = url.rsplit("/", 1)[1]
        path = conf(tmp_path, GRAVITINO_CONF.format(
            jdbc=f"jdbc:postgresql://127.0.0.1:1,127.0.0.1:5432/{database}?targetServerType=primary&connectTimeout=2",
            driver="org.postgresql.Driver", user="postgres", password=""))
        engine = create_engine(load_settings(path, environ={}).store_url)
        try:
            with engine.connect() as conn:
                assert conn.exec_driver_sql("SELECT current_database(), pg_is_in_recovery()").one() == (database, False)
        finally:
            engine.dispose()


@pytest.mark.parametrize(("jdbc", "refusal"), [
    ("jdbc:postgresql://h1,h2/g?targetServerType=secondary", "would send gravimeta's writes to a standby"),
    ("jdbc:postgresql://h1,h2/g?targetServerType=preferSecondary", "would send gravimeta's writes to a standby"),
    ("jdbc:postgresql://h1,h2/g?connectTimeout=soon", "connectTimeout=soon is not a number of seconds"),
    ("jdbc:mysql://h1,h2/g", "a failover list is read for PostgreSQL only"),
    ("jdbc:postgresql://h1,,h2/g", "no empty host"),
])
def test_a_jdbc_failover_list_gravimeta_cannot_follow_is_refused(tmp_path, jdbc, refusal):
    path = conf(tmp_path, GRAVITINO_CONF.format(jdbc=jdbc, driver="org.postgresql.Driver", user="g", password="p"))
    with pytest.raises(ValueError, match=refusal):
        load_settings(path, environ={})


def test_h2_is_refused_with_what_to_do_instead(tmp_path):
    path = conf(tmp_path, GRAVITINO_CONF.format(jdbc="jdbc:h2:file:/tmp/gravitino_h2_db;DB_CLOSE_DELAY=-1;MODE=MYSQL",
                                                driver="org.h2.Driver", user="gravitino", password="gravitino"))
    with pytest.raises(ValueError, match="is an H2 database .* which gravimeta cannot open"):
        load_settings(path, environ={})
    served = gravimeta("--config", str(path), "serve", cwd=tmp_path)
    assert served.returncode == 2 and "H2 database" in served.stderr and "Traceback" not in served.stderr
    assert not (tmp_path / "var").exists()


def test_a_misspelt_key_of_gravimetas_own_is_refused(tmp_path):
    path = conf(tmp_path, "gravitino.metadata.distributed-lock.enabeld = true\n")
    with pytest.raises(ValueError, match=r"gravitino.metadata.distributed-lock.enabeld \(did you mean "
                                         r"gravitino.metadata.distributed-lock.enabled\?\)"):
        load_settings(path, environ={})
    with pytest.raises(ValueError, match="gravimeta.server.worker "):
        load_settings(conf(tmp_path, "gravimeta.server.worker = 4\n", "b.conf"), environ={})
    started = gravimeta("--config", str(path), "db", "current", cwd=tmp_path)
    assert started.returncode == 2 and "unknown setting(s)" in started.stderr, started.stderr


def test_an_unknown_gravitino_key_is_reported_with_the_near_miss(tmp_path, caplog):
    path = conf(tmp_path, "gravitino.server.webserver.httpPrt = 9000\n")
    with caplog.at_level(logging.WARNING):
        assert load_settings(path, environ={}).port == 8090
    [warning] = [r.getMessage() for r in caplog.records if "mean nothing" in r.getMessage()]
    assert "gravitino.server.webserver.httpPrt (did you mean gravitino.server.webserver.httpPort?)" in warning


def test_serve_on_a_missing_store_names_it_and_the_command_and_creates_nothing(tmp_path):
    store = f"sqlite:///{tmp_path / 'nothing-here.db'}"
    served = gravimeta("--store-url", store, "serve", cwd=tmp_path)
    assert served.returncode == 2, served.stdout + served.stderr
    assert f"no gravimeta store at {store}" in served.stderr
    assert f"gravimeta --store-url {store} db upgrade" in served.stderr
    assert not (tmp_path / "nothing-here.db").exists()
    default = gravimeta("serve", cwd=tmp_path)  # the default store, ./var/gravimeta.db
    assert default.returncode == 2 and "var/gravimeta.db db upgrade" in default.stderr, default.stderr
    assert not (tmp_path / "var").exists()


def test_serve_on_an_unmigrated_store_gives_the_command_with_its_store_url(tmp_path):
    require_backend("postgresql")
    with fresh_database("postgresql", tmp_path, migrate=False) as empty:
        served = gravimeta("--store-url", empty, "serve", cwd=tmp_path)
        assert served.returncode == 2, served.stdout + served.stderr
        assert "has no gravimeta schema" in served.stderr
        assert f"gravimeta --store-url {empty} db upgrade" in served.stderr
        engine = create_engine(empty)
        try:
            assert inspect(engine).get_table_names() == []
        finally:
            engine.dispose()
