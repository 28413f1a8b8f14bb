"""Authentication, like Gravitino's AuthenticationFilter.

`gravitino.authenticators` lists the authenticators in order (empty: no authentication, every request
acts as `anonymous`):
  simple  the user name from `Authorization: Basic base64(user:password)` (the password is not checked:
          this is the official clients' SimpleAuthProvider). Like Gravitino, a request without an
          Authorization header is `anonymous`, unless gravimeta.authenticator.simple.allowAnonymous=false.
  oauth   `Authorization: Bearer <JWT>` verified with gravitino.authenticator.oauth.defaultSignKey
          (base64 of the HMAC secret, or of the DER public key; a PEM public key is accepted too) and
          signAlgorithmType (HS256/384/512, RS256/384/512, ES256/384/512, PS256/384/512); the token
          must carry `aud` = serviceAudience; the user is the first of principalFields (default `sub`).
          An expired, badly signed or malformed token is a 401. Unlike Gravitino (whose JWT library
          accepts a token without `exp` forever), a token must carry `exp` unless
          gravimeta.authenticator.oauth.allowTokensWithoutExp=true, and the time claims `exp`, `nbf` and
          `iat`, when present, must be numbers of seconds (NumericDate, RFC 7519) from 0 to the end of year
          9999: a string, a boolean or 10^30 is a malformed token, not a token that never expires.
The first authenticator that supports the header decides; when none does the request gets 401
UnauthorizedException (code 1011) with a WWW-Authenticate challenge.

`simple` is the default, as in Gravitino: the client's user name becomes the creator (and owner) of
what it creates; a request without credentials is `anonymous`. gravitino.authenticators="" turns
authentication off (every request is `anonymous`).

Routes declared @public (gravimeta/api/door.py: /api/version, CLOSE /, the health endpoints,
/api/openapi.json) are not authenticated: the official client calls /api/version before anything
else. Who may do what once authenticated is the door's business (gravimeta/api/door.py).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Protocol

import jwt
from cryptography.hazmat.primitives import serialization
from flask import Flask, current_app, g, request

from gravimeta.access.declaration import declared
from gravimeta.config import Settings
from gravimeta.errors import Unauthorized

ANONYMOUS = "anonymous"
#: Flask's own endpoint for static files (gravimeta serves none)
STATIC = "static"
ALGORITHMS = ("HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256", "ES384", "ES512",
              "PS256", "PS384", "PS512")


class AuthenticationRequired(Unauthorized):
    """A 401 that tells the client which schemes it may use (the WWW-Authenticate header)."""

    def __init__(self, message: str, challenges: list[str]):
        super().__init__(message)
        self.headers = {"WWW-Authenticate": ", ".join(challenges)}


class Authenticator(Protocol):
    challenge: str

    def supports(self, header: str | None) -> bool: ...

    def authenticate(self, header: str | None) -> str | None:
        """The user name; None means "no credentials" (the caller decides); raises on bad credentials."""


@dataclass
class SimpleAuthenticator:
    allow_anonymous: bool = True
    challenge: str = 'Basic realm="gravimeta"'

    def supports(self, header: str | None) -> bool:
        return header is None or header.startswith("Basic ")

    def authenticate(self, header: str | None) -> str | None:
        user = _basic_user(header[len("Basic "):]) if header else None
        if user is None and not self.allow_anonymous:
            raise AuthenticationRequired(
                "Basic credentials are required (Authorization: Basic base64(user:password))", [self.challenge]
            )
        return user


def _basic_user(credential: str) -> str | None:
    """`user` from base64("user:password"); None when malformed (Gravitino then acts as anonymous)."""
    try:
        decoded = base64.b64decode(credential.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    user, sep, _ = decoded.partition(":")
    return user if sep and user.strip() and user.isprintable() else None


class OAuthAuthenticator:
    challenge = 'Bearer realm="gravimeta"'

    def __init__(self, settings: Settings):
        algorithm = settings.oauth_algorithm.upper()
        if algorithm not in ALGORITHMS:
            raise ValueError(f"gravitino.authenticator.oauth.signAlgorithmType: unsupported {algorithm!r}")
        if not settings.oauth_sign_key:
            raise ValueError("gravitino.authenticator.oauth.defaultSignKey is required for the oauth authenticator")
        self.algorithm = algorithm
        self.key = _decode_key(settings.oauth_sign_key, algorithm)
        self.audience = settings.oauth_audience
        self.leeway = settings.oauth_allow_skew_s
        self.require_exp = not settings.oauth_allow_tokens_without_exp
        self.fields = [f.strip() for f in settings.oauth_principal_fields.split(",") if f.strip()] or ["sub"]

    def supports(self, header: str | None) -> bool:
        return header is not None and header.startswith("Bearer ")

    def authenticate(self, header: str | None) -> str | None:
        token = (header or "")[len("Bearer "):].strip()
        if not token:
            raise AuthenticationRequired("Empty token authorization header", [self.challenge])
        try:
            claims = jwt.decode(token, self.key, algorithms=[self.algorithm], audience=self.audience,
                                leeway=self.leeway, options={"require": ["exp"] if self.require_exp else []})
            _check_time_claims(claims)
        except jwt.ExpiredSignatureError:
            raise AuthenticationRequired("JWT parse error: the token has expired",
                                         [f'{self.challenge}, error="invalid_token"']) from None
        except jwt.PyJWTError as exc:
            raise AuthenticationRequired(f"JWT parse error: {exc}",
                                         [f'{self.challenge}, error="invalid_token"']) from None
        for field in self.fields:
            value = claims.get(field)
            if isinstance(value, str) and value.strip():
                return value
        raise AuthenticationRequired("No valid principal found in token", [self.challenge])


#: the largest NumericDate accepted: 9999-12-31T23:59:59Z
MAX_NUMERIC_DATE = 253_402_300_799
TIME_CLAIMS = ("exp", "nbf", "iat")


def _check_time_claims(claims: dict[str, Any]) -> None:
    """PyJWT converts time claims with int(), so "9999999999" and 1e30 would pass as times; refuse them."""
    for name in TIME_CLAIMS:
        if name not in claims:
            continue
        value = claims[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_NUMERIC_DATE:
            raise jwt.InvalidTokenError(
                f"the {name} claim must be a number of seconds since the epoch, from 0 to {MAX_NUMERIC_DATE}"
            )


def _decode_key(raw: str, algorithm: str) -> Any:
    """Gravitino's defaultSignKey is base64: the secret itself (HMAC) or the X.509 DER public key."""
    if raw.lstrip().startswith("-----BEGIN"):
        return serialization.load_pem_public_key(raw.encode())
    try:
        data = base64.b64decode(raw.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("gravitino.authenticator.oauth.defaultSignKey must be base64") from None
    return data if algorithm.startswith("HS") else serialization.load_der_public_key(data)


def build_authenticators(settings: Settings) -> list[Authenticator]:
    """The configured authenticators in order; a bad configuration is a ValueError at startup."""
    result: list[Authenticator] = []
    for name in (n.strip().lower() for n in settings.authenticators.split(",")):
        if not name:
            continue
        if name == "simple":
            result.append(SimpleAuthenticator(settings.simple_allow_anonymous))
        elif name == "oauth":
            result.append(OAuthAuthenticator(settings))
        else:
            raise ValueError(f"gravitino.authenticators: unknown authenticator {name!r} (simple, oauth)")
    return result


def require_credentials(message: str) -> None:
    """Raise a 401 with the configured challenges when the caller sent no credentials (it is
    `anonymous` by default) and an authenticator could take some: a refusal then tells the client to
    authenticate rather than that it may not."""
    authenticators = current_app.extensions.get("gravimeta.auth") or []
    if authenticators and not g.get("authenticated", False):
        raise AuthenticationRequired(message, [a.challenge for a in authenticators])


def register_auth(app: Flask, settings: Settings) -> None:
    """Install the authentication check (a no-op when no authenticator is configured)."""
    authenticators = build_authenticators(settings)
    app.extensions["gravimeta.auth"] = authenticators
    if not authenticators:
        return

    @app.before_request
    def _authenticate() -> None:
        if request.endpoint == STATIC or request.method == "OPTIONS":
            return
        declaration = declared(current_app.view_functions.get(request.endpoint or ""))
        if declaration is not None and declaration.public:
            return
        header = request.headers.get("Authorization")
        for authenticator in authenticators:
            if authenticator.supports(header):
                user = authenticator.authenticate(header)
                g.user, g.authenticated = user or ANONYMOUS, user is not None
                break
        else:
            raise AuthenticationRequired("The provided credentials did not support",
                                         [a.challenge for a in authenticators])
