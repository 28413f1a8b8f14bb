"""What a web page of another origin can make a browser do to this server, and the headers that limit it.
One before_request and one after_request for every route (the API, the console, the operator endpoints).

Request bodies. A page of any origin may make the browser send, without asking the server first (no
CORS preflight), a POST whose body is `text/plain`, `application/x-www-form-urlencoded`,
`multipart/form-data` or of no type at all (`fetch(url, {mode: "no-cors", body})`, an HTML form with
`enctype="text/plain"`). The server read JSON bodies under any Content-Type, so such a page could create
metalakes on a gravimeta at 127.0.0.1 with the browser's network position. Now a request with a body
must say `Content-Type: application/json`, or Gravitino's `application/vnd.gravitino.v1+json`, with no
charset or UTF-8, the only one the body is read as; anything else is 415 before any other hook or view
runs. A browser sends those types across origins only after a preflight, which this server never
grants (it sends no Access-Control-Allow-* header), so the page's request is never sent.
Gravitino's resources are `@Consumes(application/json)`: Jersey refuses other types with a 415 that
carries no Gravitino body, which its clients report as a RESTException (code 1000, their
ErrorResponse.restError). gravimeta answers 415 with that code and type in a Gravitino error body.

Accept. Gravitino's VersioningFilter refuses an Accept that names `application/vnd.gravitino.vN+json`
for a version it does not serve with a 406; so does gravimeta (code 1000 RESTException). Every answer is
`application/json`, whatever the Accept (as Gravitino's, whose Utils build each response with an explicit
APPLICATION_JSON type that wins over the resources' @Produces; docs/compatibility.md).

Response headers, on every answer. The console is plain modules and a stylesheet of its own origin, so its
Content-Security-Policy allows only those (`'self'`: no inline script, style or event handler, no eval);
the API's JSON needs nothing, and the same policy forbids it everything else. `frame-ancestors 'none'`
and `X-Frame-Options: DENY`: no page may frame the console, which keeps credentials in localStorage and
would act with them inside another origin's frame. `X-Content-Type-Options: nosniff`: a JSON answer is
never run as a script or style. `Referrer-Policy: no-referrer`: no console URL (metalake and table names)
is sent to another site.
"""

from __future__ import annotations

import re

from flask import Flask, Response, request

from gravimeta import errors

#: the media types a request body may have (parameters aside)
JSON_TYPES = frozenset({"application/json", "application/vnd.gravitino.v1+json"})
#: the API versions this server serves (Gravitino 1.3: v1)
SERVED_VERSIONS = frozenset({1})
_VERSIONED = re.compile(r"application/vnd\.gravitino\.v(\d+)\+json", re.IGNORECASE)

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class UnsupportedMediaType(errors.GravitinoError):
    code, http_status, type_name = 1000, 415, "RESTException"


class NotAcceptable(errors.GravitinoError):
    code, http_status, type_name = 1000, 406, "RESTException"


def has_body() -> bool:
    """Whether the request carries a body: a positive Content-Length, or a chunked one."""
    if (request.content_length or 0) > 0:
        return True
    return "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def check_content_type() -> None:
    """415 unless a request with a body says it is JSON (in UTF-8)."""
    if not has_body():
        return
    sent = request.headers.get("Content-Type", "")
    media_type = request.mimetype  # lower case, without parameters
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if media_type not in JSON_TYPES:
        what = f"Content-Type {sent!r}" if sent else "no Content-Type"
        raise UnsupportedMediaType(f"Unsupported Media Type: a request body must be application/json; this one has "
                                   f"{what}"[:300])
    if charset not in ("utf-8", "utf8"):
        raise UnsupportedMediaType(f"Unsupported Media Type: a request body must be application/json in UTF-8, "
                                   f"not in {charset!r}"[:300])


def check_accept() -> None:
    """406 when Accept names a version of Gravitino's media type this server does not serve."""
    for value in request.headers.getlist("Accept"):
        found = _VERSIONED.search(value)
        if found is None:
            continue
        if int(found.group(1)) not in SERVED_VERSIONS:
            raise NotAcceptable(f"Unsupported version v{found.group(1)} in the Accept header ({value[:100]!r}); this "
                                f"server serves application/vnd.gravitino.v1+json")
        return  # the first Gravitino media type decides, as in Gravitino's VersioningFilter


def add_security_headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def register_browser_rules(app: Flask) -> None:
    """Before every other hook that reads the request (register it first): the checks above; after every
    answer, errors and static files included: the security headers."""
    app.before_request(check_content_type)
    app.before_request(check_accept)
    app.after_request(add_security_headers)
