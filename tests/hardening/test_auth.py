"""Authentication like Gravitino's: simple (Basic user), oauth (signed JWT bearer tokens), service
admins for the operator endpoints, and for metalake create once authorization is on (off, anyone may,
as under Gravitino's PassThroughAuthorizer); 401 UnauthorizedException (1011) with a
WWW-Authenticate challenge; the audit creator/lastModifier is the authenticated user."""

from __future__ import annotations

import base64
import time
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gravitino import Catalog, GravitinoAdminClient, GravitinoClient
from gravitino.auth.oauth2_token_provider import OAuth2TokenProvider
from gravitino.auth.simple_auth_provider import SimpleAuthProvider

from tests.hardening.conftest import assert_error_body

SECRET = b"a-test-secret-that-is-long-enough-for-hs256"
SECRET_B64 = base64.b64encode(SECRET).decode()


def basic(user: str, password: str = "dummy") -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def hs_token(sub: str = "alice", aud: str = "GravitinoServer", key: bytes = SECRET, **claims) -> str:
    return jwt.encode({"sub": sub, "aud": aud, "exp": int(time.time()) + 600, **claims}, key, algorithm="HS256")


def name() -> str:
    return f"ml_{uuid.uuid4().hex[:8]}"


# ------------------------------------------------------------------ off by default


def test_without_authenticators_every_request_is_anonymous_and_admin_endpoints_are_open(make_app):
    client = make_app(authenticators="").test_client()
    created = client.post("/api/metalakes", json={"name": name()}, headers=basic("root"))
    assert created.status_code == 200
    assert created.get_json()["metalake"]["audit"]["creator"] == "anonymous"  # the header is not read
    assert client.get("/api/admin/locks").status_code == 200


def test_simple_is_the_default_like_gravitino_and_names_the_creator(make_app):
    client = make_app().test_client()
    created = client.post("/api/metalakes", json={"name": name()}, headers=basic("carol"))
    assert created.get_json()["metalake"]["audit"]["creator"] == "carol"
    anonymous = client.post("/api/metalakes", json={"name": name()})
    assert anonymous.get_json()["metalake"]["audit"]["creator"] == "anonymous"


def test_without_service_admins_the_admin_endpoints_stay_open(make_app):
    client = make_app(authenticators="simple").test_client()  # nobody could pass a check of an empty list
    assert client.post("/api/metalakes", json={"name": name()}, headers=basic("bob")).status_code == 200
    assert client.get("/api/admin/locks").status_code == 200


def test_authorization_needs_service_admins(make_app):
    with pytest.raises(ValueError, match="serviceAdmins"):
        make_app(authorization_enabled=True)


# ------------------------------------------------------------------ simple


@pytest.fixture
def simple(make_app):
    return make_app(authenticators="simple", service_admins="root, ops").test_client()


def test_simple_takes_the_user_from_basic_credentials_for_the_audit(simple):
    ml = name()
    assert simple.post("/api/metalakes", json={"name": ml}, headers=basic("root")).status_code == 200
    altered = simple.put(f"/api/metalakes/{ml}", headers=basic("bob"),
                         json={"updates": [{"@type": "setProperty", "property": "k", "value": "v"}]})
    audit = altered.get_json()["metalake"]["audit"]
    assert (audit["creator"], audit["lastModifier"]) == ("root", "bob")


def test_simple_without_credentials_is_anonymous_like_gravitino(simple):
    assert simple.get("/api/metalakes").status_code == 200


def test_simple_rejects_a_scheme_it_does_not_support_with_401_and_a_challenge(simple):
    response = simple.get("/api/metalakes", headers=bearer("x"))
    assert response.status_code == 401
    assert_error_body(response.get_json(), 1011)
    assert response.get_json()["type"] == "UnauthorizedException"
    assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_simple_can_require_credentials(make_app):
    client = make_app(authenticators="simple", simple_allow_anonymous=False).test_client()
    response = client.get("/api/metalakes")
    assert response.status_code == 401 and "Basic" in response.headers["WWW-Authenticate"]
    assert_error_body(response.get_json(), 1011)
    assert client.get("/api/metalakes", headers={"Authorization": "Basic !!notbase64"}).status_code == 401
    assert client.get("/api/metalakes", headers=basic("carol")).status_code == 200


def test_with_authorization_off_anyone_creates_and_drops_a_metalake_like_gravitinos_pass_through(simple):
    ml = name()
    created = simple.post("/api/metalakes", json={"name": ml}, headers=basic("bob"))
    assert created.status_code == 200 and created.get_json()["metalake"]["audit"]["creator"] == "bob"
    assert simple.delete(f"/api/metalakes/{ml}?force=true", headers=basic("carol")).get_json()["dropped"] is True


@pytest.fixture
def authorized(make_app):
    return make_app(authenticators="simple", service_admins="root, ops", authorization_enabled=True).test_client()


def test_with_authorization_on_a_metalake_is_created_by_a_service_admin_and_dropped_by_its_owner(authorized):
    ml = name()
    denied = authorized.post("/api/metalakes", json={"name": ml}, headers=basic("bob"))
    assert denied.status_code == 403
    assert_error_body(denied.get_json(), 1008)
    assert denied.get_json()["type"] == "ForbiddenException"
    assert authorized.get(f"/api/metalakes/{ml}", headers=basic("root")).status_code == 404  # nothing was written
    assert authorized.post("/api/metalakes", json={"name": ml}, headers=basic("ops")).status_code == 200
    assert authorized.delete(f"/api/metalakes/{ml}?force=true", headers=basic("bob")).status_code == 403
    assert authorized.delete(f"/api/metalakes/{ml}?force=true", headers=basic("ops")).get_json()["dropped"] is True


def test_an_anonymous_caller_of_an_admin_endpoint_is_asked_to_authenticate(simple, authorized):
    for response in (simple.get("/api/admin/locks"), authorized.post("/api/metalakes", json={"name": name()})):
        assert response.status_code == 401 and response.headers["WWW-Authenticate"].startswith("Basic")
        assert_error_body(response.get_json(), 1011)


def test_lock_inspection_and_metrics_need_a_service_admin(simple):
    assert simple.get("/api/admin/locks", headers=basic("bob")).status_code == 403
    assert simple.get("/metrics", headers=basic("bob")).status_code == 403
    assert simple.get("/api/admin/locks", headers=basic("root")).status_code == 200
    assert simple.get("/metrics", headers=basic("root")).status_code == 200


def test_version_health_close_and_the_openapi_document_stay_open(make_app):
    client = make_app(authenticators="oauth", oauth_sign_key=SECRET_B64, oauth_algorithm="HS256").test_client()
    assert client.get("/api/version").status_code == 200
    assert client.get("/health/live").status_code == 200
    assert client.open("/", method="CLOSE").status_code == 200
    assert client.get("/api/openapi.json").status_code == 200
    assert client.get("/api/metalakes").status_code == 401


# ------------------------------------------------------------------ oauth


@pytest.fixture
def oauth(make_app):
    return make_app(authenticators="oauth", oauth_sign_key=SECRET_B64, oauth_algorithm="HS256",
                    service_admins="alice").test_client()


def test_oauth_takes_the_user_from_the_tokens_subject(oauth):
    ml = name()
    created = oauth.post("/api/metalakes", json={"name": ml}, headers=bearer(hs_token("alice")))
    assert created.status_code == 200, created.get_json()
    assert created.get_json()["metalake"]["audit"]["creator"] == "alice"
    assert oauth.get(f"/api/metalakes/{ml}", headers=bearer(hs_token("dave"))).status_code == 200
    assert oauth.get("/api/admin/locks", headers=bearer(hs_token("dave"))).status_code == 403


@pytest.mark.parametrize("case", ["missing", "expired", "bad-signature", "wrong-audience", "no-audience",
                                  "garbage", "empty", "no-subject", "alg-none", "basic"])
def test_oauth_rejects_bad_tokens_with_401(oauth, case):
    now = int(time.time())
    headers = {
        "missing": {},
        "expired": bearer(hs_token(exp=now - 60)),
        "bad-signature": bearer(hs_token(key=b"another-secret-that-is-long-enough-for-hs256")),
        "wrong-audience": bearer(hs_token(aud="someone-else")),
        "no-audience": bearer(jwt.encode({"sub": "alice", "exp": now + 60}, SECRET, algorithm="HS256")),
        "garbage": bearer("not.a.jwt"),
        "empty": {"Authorization": "Bearer "},
        "no-subject": bearer(jwt.encode({"aud": "GravitinoServer", "exp": now + 60}, SECRET, algorithm="HS256")),
        "alg-none": bearer(jwt.encode({"sub": "alice", "aud": "GravitinoServer"}, None, algorithm="none")),
        "basic": basic("alice"),
    }[case]
    response = oauth.get("/api/metalakes", headers=headers)
    assert response.status_code == 401, response.get_json()
    assert_error_body(response.get_json(), 1011)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_oauth_verifies_rs256_tokens_with_a_configured_public_key(make_app):
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    der = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    client = make_app(authenticators="oauth", oauth_sign_key=base64.b64encode(der).decode()).test_client()
    exp = int(time.time()) + 600
    token = jwt.encode({"sub": "erin", "aud": "GravitinoServer", "exp": exp}, private, algorithm="RS256")
    assert client.get("/api/metalakes", headers=bearer(token)).status_code == 200
    forged = jwt.encode({"sub": "erin", "aud": "GravitinoServer", "exp": exp}, SECRET, algorithm="HS256")
    assert client.get("/api/metalakes", headers=bearer(forged)).status_code == 401


def test_simple_and_oauth_together_pick_the_authenticator_by_scheme(make_app):
    client = make_app(authenticators="oauth,simple", oauth_sign_key=SECRET_B64, oauth_algorithm="HS256").test_client()
    assert client.get("/api/metalakes", headers=bearer(hs_token())).status_code == 200
    assert client.get("/api/metalakes", headers=basic("frank")).status_code == 200
    assert client.get("/api/metalakes", headers=bearer(hs_token(exp=1))).status_code == 401


def test_a_bad_authenticator_configuration_fails_at_startup(make_app):
    with pytest.raises(ValueError, match="defaultSignKey"):
        make_app(authenticators="oauth")
    with pytest.raises(ValueError, match="unknown authenticator"):
        make_app(authenticators="kerberos")


# ------------------------------------------------------------------ the official client, real server


class StaticTokenProvider(OAuth2TokenProvider):
    """The client's token-provider SPI with a token minted here instead of by an OAuth server."""

    def __init__(self, uri: str, token: str):
        super().__init__(uri)
        self._token = token

    def _get_access_token(self) -> str:
        return self._token

    def validate(self) -> None:
        pass


def test_the_official_client_authenticates_with_simple_and_with_a_bearer_token(start_server, monkeypatch):
    server = start_server(env={
        "GRAVIMETA_AUTHENTICATORS": "simple,oauth", "GRAVIMETA_OAUTH_SIGN_KEY": SECRET_B64,
        "GRAVIMETA_OAUTH_ALGORITHM": "HS256", "GRAVIMETA_SERVICE_ADMINS": "root",
    })
    monkeypatch.setenv("GRAVITINO_USER", "root")
    admin = GravitinoAdminClient(uri=server.url, auth_data_provider=SimpleAuthProvider())
    ml = name()
    assert admin.create_metalake(ml, "by root", {}).audit_info().creator() == "root"

    token = StaticTokenProvider(server.url, hs_token("grace"))
    client = GravitinoClient(uri=server.url, metalake_name=ml, auth_data_provider=token)
    catalog = client.create_catalog("cat", Catalog.Type.RELATIONAL, "memory", "c", {})
    assert catalog.audit_info().creator() == "grace"

    monkeypatch.setenv("GRAVITINO_USER", "mallory")
    outsider = GravitinoAdminClient(uri=server.url, auth_data_provider=SimpleAuthProvider())
    other = name()  # authorization is off: anyone may create a metalake, as in Gravitino
    assert outsider.create_metalake(other, "by mallory", {}).audit_info().creator() == "mallory"
    assert outsider.drop_metalake(other, force=True) is True
    assert admin.drop_metalake(ml, force=True) is True
    for c in (admin, client, outsider):
        c.close()


def test_the_official_client_with_an_expired_token_gets_an_error_not_data(start_server):
    server = start_server(env={"GRAVIMETA_AUTHENTICATORS": "oauth", "GRAVIMETA_OAUTH_SIGN_KEY": SECRET_B64,
                               "GRAVIMETA_OAUTH_ALGORITHM": "HS256"})
    admin = GravitinoAdminClient(uri=server.url, auth_data_provider=StaticTokenProvider(server.url, hs_token(exp=1)))
    with pytest.raises(Exception, match="expired"):  # the 1.3.1 client knows no 1011: a RESTException
        admin.list_metalakes()
    admin.close()


# ------------------------------------------------------------------ time claims


def unexpiring_token(**claims) -> str:
    """A signed token with the audience and a subject but, unless given, no `exp`."""
    return jwt.encode({"sub": "alice", "aud": "GravitinoServer", **claims}, SECRET, algorithm="HS256")


def test_a_token_without_exp_is_refused_unless_a_setting_allows_it(oauth, make_app):
    refused = oauth.get("/api/metalakes", headers=bearer(unexpiring_token()))
    assert refused.status_code == 401
    assert '"exp"' in refused.get_json()["message"]
    relaxed = make_app(authenticators="oauth", oauth_sign_key=SECRET_B64, oauth_algorithm="HS256",
                       oauth_allow_tokens_without_exp=True).test_client()
    assert relaxed.get("/api/metalakes", headers=bearer(unexpiring_token())).status_code == 200


@pytest.mark.parametrize("claims", [
    {"exp": "9999999999"}, {"exp": 10**30}, {"exp": True}, {"exp": -5}, {"exp": [2_000_000_000]},
    {"exp": 2_000_000_000, "nbf": "0"}, {"exp": 2_000_000_000, "iat": 10**20}, {"exp": 2_000_000_000, "iat": False},
    {"exp": 2_000_000_000.5, "nbf": {"seconds": 0}},
], ids=lambda claims: "-".join(f"{k}={v!r}" for k, v in claims.items()))
def test_time_claims_must_be_numbers_of_seconds_in_a_sane_range(oauth, claims):
    response = oauth.get("/api/metalakes", headers=bearer(unexpiring_token(**claims)))
    assert response.status_code == 401, response.get_json()
    assert_error_body(response.get_json(), 1011)
    assert response.get_json()["message"].startswith("JWT parse error")


def test_numeric_time_claims_in_range_are_accepted(oauth):
    now = int(time.time())
    token = unexpiring_token(exp=now + 600.5, nbf=now - 10, iat=now - 10)
    assert oauth.get("/api/metalakes", headers=bearer(token)).status_code == 200


def test_the_setting_is_read_from_the_environment():
    from gravimeta.config import load_settings

    settings = load_settings(environ={"GRAVIMETA_OAUTH_ALLOW_TOKENS_WITHOUT_EXP": "true"})
    assert settings.oauth_allow_tokens_without_exp is True
    assert load_settings(environ={}).oauth_allow_tokens_without_exp is False
