"""The operator endpoints (/api/admin/locks, /metrics, /prometheus/metrics) are closed to all but
service admins whenever authorization is on, also when no authenticator is configured (every caller
is then `anonymous`; before, the door let anyone in when no caller could be authenticated). And the
stats page of HAProxy (every replica's address and state) is never on the public frontend: both the
`gravimeta cluster` configuration and deploy/haproxy.cfg put it on a loopback-only admin listener."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gravimeta.cluster import Proc, haproxy_config

OPERATOR_PATHS = ("/api/admin/locks", "/metrics", "/prometheus/metrics")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("authenticators", ["", "simple"])
def test_with_authorization_on_only_service_admins_reach_operator_endpoints(make_app, authenticators):
    client = make_app(authorization_enabled=True, service_admins="root", authenticators=authenticators).test_client()
    for path in OPERATOR_PATHS:
        response = client.get(path)
        assert response.status_code in (401, 403), (path, response.status_code, response.data[:200])
        assert response.get_json()["type"] in ("UnauthorizedException", "ForbiddenException"), response.get_json()
    if authenticators:
        import base64

        root = {"Authorization": "Basic " + base64.b64encode(b"root:x").decode()}
        bob = {"Authorization": "Basic " + base64.b64encode(b"bob:x").decode()}
        for path in OPERATOR_PATHS:
            assert client.get(path, headers=bob).status_code == 403, path
            assert client.get(path, headers=root).status_code == 200, path


def sections(cfg: str) -> dict[str, str]:
    """HAProxy configuration sections by their header line (`frontend gravimeta`, `listen stats`)."""
    found: dict[str, str] = {}
    header = None
    for line in cfg.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            header = line.strip()
            found[header] = ""
        elif header is not None:
            found[header] += line.split("#", 1)[0] + "\n"
    return found


@pytest.mark.parametrize("source", ["cluster", "deploy"])
def test_haproxy_stats_page_is_on_a_loopback_admin_port_only(source):
    if source == "cluster":
        cfg = haproxy_config(25300, [Proc("replica-1", 1, 25301, "r1.log")], 25302)
    else:
        cfg = (REPO / "deploy" / "haproxy.cfg").read_text()
    parts = sections(cfg)
    frontends = [body for head, body in parts.items() if head.startswith("frontend")]
    assert frontends
    for body in frontends:
        assert "stats" not in body, body
    stats = [body for head, body in parts.items() if head.startswith("listen") and "stats uri" in body]
    assert len(stats) == 1, parts
    binds = re.findall(r"^\s*bind\s+(\S+)", stats[0], re.M)
    assert binds and all(b.startswith("127.0.0.1:") for b in binds), binds
    if source == "cluster":
        assert binds == ["127.0.0.1:25302"]
