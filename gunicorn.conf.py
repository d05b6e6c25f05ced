"""gunicorn settings, read from the working directory by every `gunicorn config.wsgi` (make run, the benches).

gunicorn writes `Server: gunicorn` itself and has no setting to leave it out; naming the server and its
software only helps someone matching it to known vulnerabilities, so its response headers drop that line."""

from __future__ import annotations

from gunicorn.http import wsgi

_default_headers = wsgi.Response.default_headers


def _headers_without_server(self: wsgi.Response) -> list[str]:
    return [line for line in _default_headers(self) if not line.lower().startswith("server:")]


wsgi.Response.default_headers = _headers_without_server  # type: ignore[method-assign]
