"""The database connection cut in the middle of a request: a clean 503 (problem+json for the API, a
plain page for the web) and no partial writes.

On PostgreSQL the cut is real: Django talks to the server through a TCP proxy started here, and the
proxy drops every connection just before the k-th query of the request, for every k, so the
request fails at each point of its work in turn (the shared server is never touched). On SQLite
(no network to cut) the k-th query raises the OperationalError the driver would raise."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client
from rest_framework.test import APIClient

from advisor.api.tokens import api_token_create
from advisor.models import Scenario, ScenarioVersion
from advisor.web import forms
from tests.api.examples import scenario
from tests.conftest import uses_postgres


class CuttableProxy:
    """A TCP proxy on 127.0.0.1 to `upstream`; `cut()` drops every open connection (new ones still work)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = False
        self.cuts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream, timeout=10)
            with self.lock:
                self.sockets += [client, server]
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.cuts += 1

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.cut()


@pytest.fixture
def cutter() -> Iterator[Callable[[], None]]:
    """A function that breaks the database connection now (really on PostgreSQL)."""
    if not uses_postgres():
        yield _simulated_cut
        return
    settings_dict = connection.settings_dict
    original = (settings_dict["HOST"], settings_dict["PORT"])
    proxy = CuttableProxy((original[0] or "127.0.0.1", int(original[1] or 5432)))
    connection.close()
    settings_dict["HOST"], settings_dict["PORT"] = "127.0.0.1", str(proxy.port)
    try:
        yield proxy.cut
        assert proxy.cuts > 0, "the test never cut the proxied connection"
    finally:
        connection.close()
        settings_dict["HOST"], settings_dict["PORT"] = original
        proxy.close()


_SIMULATED = {"armed": False}
MAX_QUERIES = 200


def _simulated_cut() -> None:
    _SIMULATED["armed"] = True


class CutAtQuery:
    """Execute wrapper: before the k-th query of the request, cut the connection."""

    def __init__(self, k: int, cut: Callable[[], None]) -> None:
        self.k = k
        self.cut = cut
        self.seen = 0

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        self.seen += 1
        if self.seen == self.k:
            self.cut()
        if _SIMULATED["armed"]:  # a dropped connection stays dropped until Django reconnects
            raise OperationalError("server closed the connection unexpectedly (simulated)")
        return execute(sql, params, many, context)


def _counting(request: Callable[[], Any]) -> tuple[Any, int]:
    counter = CutAtQuery(k=0, cut=lambda: None)
    with connection.execute_wrapper(counter):
        response = request()
    return response, counter.seen


def _reconnect() -> None:
    """What Django does between requests for a broken connection."""
    _SIMULATED["armed"] = False
    connection.close()


def _rows(owner_id: int) -> tuple[int, int]:
    return (
        Scenario.objects.filter(owner_id=owner_id).count(),
        ScenarioVersion.objects.filter(scenario__owner_id=owner_id).count(),
    )


@pytest.mark.django_db(transaction=True)
def test_api_write_cut_at_every_query_answers_503_and_writes_nothing_partial(cutter, user) -> None:  # type: ignore[no-untyped-def]
    key = api_token_create(user=user, name="cut").key
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    body = {"name": "cut", "scenario": scenario()}

    def create() -> Any:
        return api.post("/api/v1/scenarios", body, format="json")

    response, queries = _counting(create)
    assert response.status_code == 201
    assert queries >= 3  # token lookup, scenario insert, version insert at least
    committed = 0
    for k in range(1, MAX_QUERIES):
        before = _rows(user.pk)
        wrapper = CutAtQuery(k, cutter)
        with connection.execute_wrapper(wrapper):
            response = create()
        _reconnect()
        if wrapper.seen < k:  # the request finished before its k-th query: every point was cut
            assert response.status_code == 201
            break
        assert response.status_code == 503, (k, response.status_code, response.content[:300])
        assert response["Content-Type"].startswith("application/problem+json")
        problem = response.json()
        assert problem["status"] == 503
        assert "all or nothing" in problem["detail"]
        assert int(response["Retry-After"]) > 0
        after = _rows(user.pk)
        # All or nothing: a scenario never exists without its first version. A cut after the commit
        # (the response's own reads) finds it saved; before, nothing.
        assert after in (before, (before[0] + 1, before[1] + 1)), (k, before, after)
        committed += after != before
    else:
        pytest.fail(f"the request still ran more than {MAX_QUERIES} queries")
    assert k > 3
    # Only cuts after the commit can find it saved (the last query reads after the commit).
    assert committed <= 1


@pytest.mark.django_db(transaction=True)
def test_web_save_cut_at_every_query_answers_a_503_page_and_writes_nothing_partial(cutter, user) -> None:  # type: ignore[no-untyped-def]
    from pricing.services import load_bundled_data

    load_bundled_data()
    web = Client()
    web.force_login(user)
    data = dict(forms.preset_initial("7b-pretrain"))

    def save() -> Any:
        return web.post("/plan/save/", data)

    response, _ = _counting(save)
    assert response.status_code == 302, response.status_code
    saved = _rows(user.pk)
    assert saved == (1, 1)
    # Cut at every query up to and including the writes (the advice reads many prices first).
    for k in range(1, MAX_QUERIES):
        wrapper = CutAtQuery(k, cutter)
        with connection.execute_wrapper(wrapper):
            response = save()
        _reconnect()
        if wrapper.seen < k:
            assert response.status_code == 302
            saved = _rows(user.pk)
            break
        assert response.status_code == 503, (k, response.status_code)
        assert "Temporarily unavailable" in response.content.decode()
        assert "all or nothing" in response.content.decode()
        now = _rows(user.pk)
        assert now[0] == now[1], (k, now)  # every scenario has its version
        assert now[0] - saved[0] <= 1, (k, now)
        saved = now
    else:
        pytest.fail(f"the request still ran more than {MAX_QUERIES} queries")
    assert k > 3
    assert saved[0] == saved[1]
