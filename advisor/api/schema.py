"""OpenAPI generation: every operation declares its problem+json error responses."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from advisor.api.errors import PROBLEM_CONTENT_TYPE


class ProblemFieldErrorSerializer(serializers.Serializer):
    pointer = serializers.CharField(
        help_text="JSON pointer (RFC 6901, URI fragment form) to the bad field, e.g. `#/workload/tokens`."
    )
    detail = serializers.CharField(help_text="What is wrong and what is allowed.")
    code = serializers.CharField(required=False, help_text="Machine-readable error code.")
    parameter = serializers.CharField(required=False, help_text="The query parameter, for errors in the query.")


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details."""

    type = serializers.CharField(
        help_text="URI reference identifying the problem type, e.g. `/problems/validation-error`."
    )
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    instance = serializers.CharField(help_text="The request path and query.")
    errors = ProblemFieldErrorSerializer(many=True, required=False, help_text="One entry per bad field.")
    retry_after_s = serializers.IntegerField(required=False, help_text="For 429: seconds until a retry may succeed.")


_ERROR_DESCRIPTIONS = {
    "400": "Invalid input: `errors` names each bad field by JSON pointer.",
    "401": "No valid credentials (token or session).",
    "403": "Authenticated but not allowed (e.g. staff-only), or a session request without a CSRF token.",
    "404": "No such object, or it belongs to another user.",
    "429": "Rate limit reached; see `retry_after_s` and the Retry-After header.",
}


class ProblemAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, description in _ERROR_DESCRIPTIONS.items():
            if code not in responses:
                responses[code] = self._problem(code, description)
        responses.setdefault("default", self._problem("default", "Any other error, as problem details."))
        return responses

    def _problem(self, code: str, description: str) -> dict[str, Any]:
        response = self._get_response_for_code(ProblemSerializer, code, media_types=[PROBLEM_CONTENT_TYPE])
        response["description"] = description
        return response
