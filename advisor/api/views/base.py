from __future__ import annotations

import re
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from advisor.api.errors import QueryParameterErrors
from core.ids import MAX_ID_DIGITS, parse_id
from core.textcheck import shown


def query_params(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """Validate the query string with `serializer_class`; bad parameters -> 400 naming each parameter."""
    params = serializer_class(data=request.query_params)
    if not params.is_valid():
        raise QueryParameterErrors(params.errors)
    return dict(params.validated_data)


class CalendarDayField(serializers.DateField):
    """A day written exactly YYYY-MM-DD in ASCII digits, as the error message and the schema say: DRF's DateField
    went through date.fromisoformat, which also took 2026-W45, 20261101 and full-width digits."""

    def to_internal_value(self, value: Any) -> Any:
        if not isinstance(value, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
            self.fail("invalid", format="YYYY-MM-DD")
        return super().to_internal_value(value)


@extend_schema_field(OpenApiTypes.STR)
class CommaSeparatedChoices(serializers.Field):
    """`a,b,c` -> ["a", "b", "c"], each one of `choices` (when given)."""

    def __init__(self, *, choices: tuple[str, ...] | None = None, **kwargs: Any) -> None:
        self.choices = choices
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, str):
            raise serializers.ValidationError("must be a comma-separated list")
        items = [item.strip() for item in data.split(",") if item.strip()]
        if self.choices is not None:
            bad = [item for item in items if item not in self.choices]
            if bad:
                raise serializers.ValidationError(
                    f"unknown value(s) {', '.join(bad)}; allowed: {', '.join(self.choices)}"
                )
        return items

    def to_representation(self, value: list[str]) -> str:
        return ",".join(value)


class IdQueryField(serializers.IntegerField):
    """A row id in a query string, read as every page reads one (core.ids: ASCII digits): DRF's IntegerField went
    through int(), which also took '0_7' and fullwidth or Arabic-Indic digits (an outsider's probe)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and parse_id(data) is None:
            raise serializers.ValidationError(
                f"must be an id: 1 to {MAX_ID_DIGITS} ASCII digits (0-9); got {shown(data)}", code="invalid"
            )
        return super().to_internal_value(data)
