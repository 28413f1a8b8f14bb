"""gravimeta.server.graceful-timeout-ms: gunicorn's graceful timeout, in whole seconds."""

from __future__ import annotations

import pytest

from gravimeta.config import load_settings


def test_the_graceful_timeout_is_rounded_up_to_whole_seconds():
    assert load_settings(environ={}).graceful_timeout_s() == 30
    assert load_settings(environ={"GRAVIMETA_GRACEFUL_TIMEOUT_MS": "2500"}).graceful_timeout_s() == 3
    assert load_settings(environ={"GRAVIMETA_GRACEFUL_TIMEOUT_MS": "1"}).graceful_timeout_s() == 1


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_graceful_timeout_that_is_not_positive_is_refused(value):
    with pytest.raises(ValueError, match="graceful-timeout-ms must be a positive"):
        load_settings(environ={"GRAVIMETA_GRACEFUL_TIMEOUT_MS": value})
