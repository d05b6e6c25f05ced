"""Password reset: the server says it e-mailed a link only when it can send e-mail (EMAIL_HOST set); without it
the page says whom to ask. A new user was told "We've emailed you instructions" by a server with no mail set up
(the SMTP connection was refused in the log) on Django's admin-styled page."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client


@pytest.mark.django_db
def test_without_email_the_reset_page_says_no_mail_is_sent_and_whom_to_ask(settings, user) -> None:  # type: ignore[no-untyped-def]
    settings.EMAIL_HOST = ""
    user.email = "alice@example.com"
    user.save()
    client = Client()
    page = client.get("/accounts/password_reset/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Django site admin" not in text
    assert "sends no e-mail" in text and "changepassword" in text
    answer = client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    assert answer.status_code == 200
    assert "emailed" not in answer.content.decode().lower()
    assert mail.outbox == []


@pytest.mark.django_db
def test_with_email_configured_the_reset_link_is_sent_on_the_products_page(settings, user) -> None:  # type: ignore[no-untyped-def]
    settings.EMAIL_HOST = "smtp.example.org"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    user.email = "alice@example.com"
    user.save()
    client = Client()
    page = client.get("/accounts/password_reset/")
    assert page.status_code == 200 and "Django site admin" not in page.content.decode()
    done = client.post("/accounts/password_reset/", {"email": "alice@example.com"}, follow=True)
    assert done.status_code == 200
    assert "Django site admin" not in done.content.decode()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@example.com"]
    assert "/accounts/reset/" in mail.outbox[0].body


@pytest.mark.django_db
def test_the_login_page_links_to_the_reset_page() -> None:
    page = Client().get("/accounts/login/")
    assert 'href="/accounts/password_reset/"' in page.content.decode()


@pytest.mark.django_db
def test_the_password_change_pages_are_the_products(user) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    page = client.get("/accounts/password_change/")
    assert page.status_code == 200 and "Django site admin" not in page.content.decode()


@pytest.mark.django_db
def test_changing_the_password_says_the_api_tokens_ended_and_they_did(user) -> None:  # type: ignore[no-untyped-def]
    from advisor.models import ApiToken

    client = Client()
    client.force_login(user)
    created = client.post("/api/v1/tokens", {"name": "ci"}, content_type="application/json")
    assert created.status_code == 201
    changed = client.post(
        "/accounts/password_change/",
        {
            "old_password": "correct-horse-battery",
            "new_password1": "a-new-long-passphrase",
            "new_password2": "a-new-long-passphrase",
        },
        follow=True,
    )
    assert changed.status_code == 200
    assert "API tokens of this account have ended" in changed.content.decode()
    assert not ApiToken.objects.filter(user=user, revoked_at__isnull=True).exists()
