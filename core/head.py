"""`HEAD` answered wherever `GET` is.

Many views are decorated `require_GET` (Django answers HEAD with 405 there), and load balancers and
uptime checks probe with HEAD. Rather than touch every decorator, a HEAD request is dispatched as a
GET and the body is dropped on the way out, keeping the headers (Content-Length included) that the
GET would have sent, as RFC 9110 section 9.3.2 asks. GET is safe, so no write can run for a HEAD.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse

SERVER_HEADER = "gpu-advisor"


class HeadAsGetMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        is_head = request.method == "HEAD"
        if is_head:
            request.method = "GET"
        response = self.get_response(request)
        # The application server adds its own name and version only when the app sends none.
        response.headers.setdefault("Server", SERVER_HEADER)
        if not is_head:
            return response
        request.method = "HEAD"
        if isinstance(response, StreamingHttpResponse):
            response.streaming_content = []
        else:
            length = len(response.content)
            response.content = b""
            response.headers["Content-Length"] = str(length)
        return response
