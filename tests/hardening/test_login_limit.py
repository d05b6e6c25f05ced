"""Concurrent failed sign-ins: the limit holds when the attempts arrive together, not only one by one.

With a check-then-count limiter every attempt that arrives before the first failure is counted passes
the check, so a burst gets as many password guesses as it has requests. Here ten threads post a wrong
password for one user at once from one address (the per-username-and-address counter is the one that fills),
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
        client = Client(REMOTE_ADDR="198.51.100.1")
        start.wait(timeout=30)
        return client.post("/accounts/login/", {"username": "erin", "password": "wrong"}).status_code

    with ThreadPoolExecutor(max_workers=ATTEMPTS) as pool:
        statuses = sorted(pool.map(attempt, range(ATTEMPTS)))

    # Exactly LIMIT password checks happened (the form again, 200); every other attempt was refused.
    assert statuses == [200] * LIMIT + [429] * (ATTEMPTS - LIMIT)
    # ... and the limit still holds afterwards from that address, even for the right password.
    late = Client(REMOTE_ADDR="198.51.100.1")
    assert late.post("/accounts/login/", {"username": "erin", "password": "a-long-enough-password"}).status_code == 429


# --- behind a reverse proxy, and one user's lock (the hostile-input probe, finding 2) --------------------------------

PASSWORD = "a-long-enough-password"


@pytest.mark.django_db
def test_behind_a_trusted_proxy_one_client_cannot_lock_out_the_others(settings) -> None:  # type: ignore[no-untyped-def]
    # Every request reaches the app from the proxy's address: counted per REMOTE_ADDR, ten bad passwords from anyone
    # locked the whole organisation out.
    settings.LOGIN_MAX_FAILURES = 3
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    get_user_model().objects.create_user(username="erin", password=PASSWORD)
    attacker = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7")
    for _ in range(3):
        assert attacker.post("/accounts/login/", {"username": "erin", "password": "wrong"}).status_code == 200
    assert attacker.post("/accounts/login/", {"username": "erin", "password": PASSWORD}).status_code == 429
    # Another client behind the same proxy signs in, even naming the attacker's address as an earlier hop (the client
    # wrote that part) ...
    other = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7, 198.51.100.4")
    assert other.post("/accounts/login/", {"username": "erin", "password": PASSWORD}).status_code == 302
    # ... while the attacker cannot get out by forging one, nor through a second trusted proxy.
    forged = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.5, 203.0.113.7")
    assert forged.post("/accounts/login/", {"username": "erin", "password": PASSWORD}).status_code == 429
    two_hops = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7, 10.0.0.3")
    assert two_hops.post("/accounts/login/", {"username": "erin", "password": PASSWORD}).status_code == 429


@pytest.mark.django_db
def test_x_forwarded_for_is_ignored_from_an_untrusted_address(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LOGIN_MAX_FAILURES = 2
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    get_user_model().objects.create_user(username="erin", password=PASSWORD)
    for hop in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):
        Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR=hop).post(
            "/accounts/login/", {"username": "erin", "password": "wrong"}
        )
    direct = Client(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="192.0.2.200")
    assert direct.post("/accounts/login/", {"username": "erin", "password": PASSWORD}).status_code == 429


@pytest.mark.django_db
def test_wrong_passwords_for_a_named_account_do_not_lock_its_owner_out_elsewhere(settings) -> None:  # type: ignore[no-untyped-def]
    # The per-username counter let anyone lock the admin out with ten wrong passwords every five minutes.
    settings.LOGIN_MAX_FAILURES = 3
    get_user_model().objects.create_user(username="admin2", password=PASSWORD)
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(3):
        assert attacker.post("/accounts/login/", {"username": "admin2", "password": "wrong"}).status_code == 200
    assert attacker.post("/accounts/login/", {"username": "Admin2", "password": PASSWORD}).status_code == 429
    owner = Client(REMOTE_ADDR="192.0.2.10")
    assert owner.post("/accounts/login/", {"username": "admin2", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_one_address_spraying_many_usernames_is_capped(settings) -> None:  # type: ignore[no-untyped-def]
    settings.LOGIN_MAX_FAILURES = 2
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 4
    get_user_model().objects.create_user(username="erin", password=PASSWORD)
    sprayer = Client(REMOTE_ADDR="203.0.113.8")
    statuses = [
        sprayer.post("/accounts/login/", {"username": f"user{i}", "password": "wrong"}).status_code for i in range(6)
    ]
    assert statuses == [200] * 4 + [429] * 2
    assert sprayer.post("/accounts/login/", {"username": "erin", "password": PASSWORD}).status_code == 429
