"""core.auth.signed_in_user and core.fields.char_max_length: the typed helpers views and services rely on."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.test import RequestFactory
from rest_framework.request import Request

from advisor.models import ApiToken, Scenario
from core.auth import signed_in_user
from core.fields import char_max_length


@pytest.mark.django_db
def test_signed_in_user_is_the_request_user_for_django_and_drf_requests(user: User) -> None:
    request = RequestFactory().get("/")
    request.user = user
    assert signed_in_user(request) is user
    drf_request = Request(request)
    drf_request.user = user
    assert signed_in_user(drf_request) is user


def test_signed_in_user_refuses_an_anonymous_visitor() -> None:
    request = RequestFactory().get("/")
    request.user = AnonymousUser()
    with pytest.raises(PermissionDenied, match="Sign in"):
        signed_in_user(request)


def test_char_max_length_reads_the_column_limit() -> None:
    assert char_max_length(Scenario, "name") == Scenario._meta.get_field("name").max_length
    assert char_max_length(ApiToken, "name") == ApiToken._meta.get_field("name").max_length


def test_char_max_length_names_a_field_without_one() -> None:
    with pytest.raises(TypeError, match=r"Scenario\.document is not a CharField"):
        char_max_length(Scenario, "document")
