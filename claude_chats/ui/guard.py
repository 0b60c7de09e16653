"""Who may talk to ``chats ui``: the launch token, the Host header, CSRF, and the headers every answer carries.

The viewer serves everything a person ever said to Claude, so each request must show the token
printed at launch (``?token=`` once, then an HttpOnly SameSite=Strict cookie), name this server in
its Host header (a page on another site that rebinds its DNS name to 127.0.0.1 names its own host),
and a POST must carry the CSRF value of the pages (an HMAC of the token) and, when the browser sends
one, an Origin of this server. ``Guard`` is plain ASGI middleware, so server-sent events pass through
it unbuffered.
"""

import hashlib
import hmac
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

COOKIE = "chats_ui_token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY"),
           (b"cache-control", b"no-store"), (b"cross-origin-opener-policy", b"same-origin"),
           (b"cross-origin-resource-policy", b"same-origin")]
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def new_token():
    return secrets.token_urlsafe(24)


def csrf_value(token):
    """The value every form of the pages carries (not the token itself: it may end up in a page)."""
    return hmac.new(token.encode(), b"chats-ui-csrf", hashlib.sha256).hexdigest()


class Guard:
    """ASGI middleware: refuses (403) what lacks the token, names another host, or posts without CSRF."""

    def __init__(self, app, token, hosts):
        self.app, self.token, self.csrf = app, token, csrf_value(token)
        self.hosts = {h.lower() for h in hosts}   # "127.0.0.1:8765", "localhost:8765"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("host", "").lower() not in self.hosts:
            return await _refuse(send, "this server answers only on its own loopback address")
        query = scope.get("query_string", b"").decode("latin-1")
        given = dict(parse_qsl(query)).get("token")
        if given is not None and scope["method"] == "GET":
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return await _refuse(send, "wrong access token: use the URL `chats ui` printed")
            return await _enter(send, scope, query, self.token)
        if not hmac.compare_digest(_cookie(headers).encode(), self.token.encode()):
            return await _refuse(send, "no access token: open the URL `chats ui` printed")
        if scope["method"] not in ("GET", "HEAD"):
            origin = headers.get("origin")
            if origin is not None and origin.lower().split("://", 1)[-1] not in self.hosts:
                return await _refuse(send, "a request from another site")
            scope["state"] = {**scope.get("state", {}), "csrf_expected": self.csrf}
        return await self.app(scope, receive, _with_headers(send))


def check_csrf(request, value):
    """True when a POST's ``csrf`` field is the pages' value (``Guard`` put the expected one in the scope)."""
    expected = request.scope.get("state", {}).get("csrf_expected")
    return bool(expected) and isinstance(value, str) and hmac.compare_digest(value.encode(), expected.encode())


def _cookie(headers):
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:   # a malformed Cookie header is no token
        return ""
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else ""


def _with_headers(send):
    async def sending(message):
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            message["headers"] = list(message.get("headers", [])) + [h for h in HEADERS if h[0] not in present]
        await send(message)
    return sending


async def _refuse(send, why):
    body = f"403 Forbidden: {why}\n".encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})


async def _enter(send, scope, query, token):
    """The token in the URL becomes a cookie; the browser is sent on to the same page without it
    (so the token stays out of the history's later entries and out of links the page makes)."""
    rest = urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "token"])
    path = (scope.get("raw_path") or b"/").decode("latin-1")   # still percent-encoded: no CR or LF in it
    if not path.startswith("/") or path.startswith("//") or any(c in path for c in "\r\n\\"):
        path = "/"
    location = path + (f"?{rest}" if rest else "")
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("utf-8", "replace")), (b"set-cookie", cookie.encode()),
                            (b"content-length", b"0"), *HEADERS]})
    await send({"type": "http.response.body", "body": b""})
