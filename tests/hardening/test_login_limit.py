"""Concurrent failed sign-ins: the limit holds when the attempts arrive together, not only one by one.

With a check-then-count limiter every attempt that arrives before the first failure is counted passes
the check, so a burst gets as many password guesses as it has requests. Here ten threads post a wrong
password for one user at once (each from its own address, so only the per-username counter applies),
with Django's real (slow, PBKDF2) password hasher widening the window in which they overlap."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

ATTEMPTS = 10
LIMIT = 5


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_failed_logins_for_one_user_end_in_429_after_the_limit(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LOGIN_MAX_FAILURES = LIMIT
    settings.LOGIN_FAILURE_WINDOW_S = 300
    get_user_model().objects.create_user(username="erin", password="a-long-enough-password")
    start = threading.Barrier(ATTEMPTS)

    def attempt(index: int) -> int:
        client = Client(REMOTE_ADDR=f"198.51.100.{index + 1}")
        start.wait(timeout=30)
        return client.post("/accounts/login/", {"username": "erin", "password": "wrong"}).status_code

    with ThreadPoolExecutor(max_workers=ATTEMPTS) as pool:
        statuses = sorted(pool.map(attempt, range(ATTEMPTS)))

    # Exactly LIMIT password checks happened (the form again, 200); every other attempt was refused.
    assert statuses == [200] * LIMIT + [429] * (ATTEMPTS - LIMIT)
    # ... and the limit still holds afterwards, even for the right password.
    late = Client(REMOTE_ADDR="192.0.2.99")
    assert late.post("/accounts/login/", {"username": "erin", "password": "a-long-enough-password"}).status_code == 429
