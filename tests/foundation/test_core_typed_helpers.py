"""core.auth.signed_in_user, core.fields.char_max_length, core.ids.parse_id: the typed helpers views rely on."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import RequestFactory
from rest_framework.request import Request

from advisor.models import ApiToken, Scenario
from core.auth import signed_in_user
from core.fields import char_max_length
from core.ids import MAX_ID_DIGITS, id_or_404, parse_id


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


@pytest.mark.parametrize(("raw", "expected"), [("7", 7), ("007", 7), ("9" * MAX_ID_DIGITS, 10**MAX_ID_DIGITS - 1)])
def test_parse_id_reads_ascii_digits(raw: str, expected: int) -> None:
    assert parse_id(raw) == expected
    assert id_or_404(raw, what="scenario") == expected


NOT_IDS = ["", "²", "٣", "-1", "+1", " 1", "1 ", "1\n", "1_0", "1.0", "0x1", "9" * (MAX_ID_DIGITS + 1)]


@pytest.mark.parametrize("raw", NOT_IDS)
def test_parse_id_refuses_what_is_not_an_id(raw: str) -> None:
    assert parse_id(raw) is None
    with pytest.raises(Http404, match=r"^No such fleet\.$"):
        id_or_404(raw, what="fleet")


def test_every_id_parse_id_reads_fits_a_64_bit_key() -> None:
    assert 10**MAX_ID_DIGITS - 1 <= 2**63 - 1
