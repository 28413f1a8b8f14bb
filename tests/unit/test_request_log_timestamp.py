"""The request log's timestamp: the text `datetime.isoformat(timespec="milliseconds")` writes, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

from gravimeta.api import request_log


def test_the_timestamp_reads_as_isoformat_in_milliseconds_and_utc():
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = request_log.timestamp()
    after = datetime.now(UTC)
    assert len(stamp) == len(after.isoformat(timespec="milliseconds")) and stamp.endswith("+00:00")
    assert before <= datetime.fromisoformat(stamp) <= after


def test_the_timestamp_follows_the_clock_across_seconds(monkeypatch):
    for ns, expected in ((1_700_000_000_999_999_999, "2023-11-14T22:13:20.999+00:00"),
                         (1_700_000_001_000_000_000, "2023-11-14T22:13:21.000+00:00"),
                         (1_700_000_001_042_000_000, "2023-11-14T22:13:21.042+00:00")):
        monkeypatch.setattr(request_log.time, "time_ns", lambda ns=ns: ns)
        assert request_log.timestamp() == expected
        assert expected == datetime.fromtimestamp(ns // 1000 / 1e6, UTC).isoformat(timespec="milliseconds")
