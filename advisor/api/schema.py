"""OpenAPI generation: every operation declares its problem+json error responses."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Literal

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.problems import PROBLEM_CONTENT_TYPE


class ProblemFieldErrorSerializer(serializers.Serializer):
    pointer = serializers.CharField(
        help_text="JSON pointer (RFC 6901, URI fragment form) to the bad field, e.g. `#/workload/tokens`."
    )
    detail = serializers.CharField(help_text="What is wrong and what is allowed.")
    code = serializers.CharField(required=False, help_text="Machine-readable error code.")
    parameter = serializers.CharField(required=False, help_text="The query parameter, for errors in the query.")
    row = serializers.IntegerField(required=False, help_text="Profiled-run uploads: 1-based data row (0: header).")
    column = serializers.CharField(required=False, help_text="Profiled-run uploads: the column.")


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details."""

    type = serializers.CharField(
        help_text="URI reference identifying the problem type, e.g. `/problems/validation-error`."
    )
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    instance = serializers.CharField(help_text="The request path and query.")
    # The stub sees a clash with Serializer.errors; DRF's SerializerMetaclass moves declared fields off the class.
    errors = ProblemFieldErrorSerializer(many=True, required=False, help_text="One entry per bad field.")  # type: ignore[assignment]
    retry_after_s = serializers.IntegerField(required=False, help_text="For 429: seconds until a retry may succeed.")


CSV_SCHEMA = {
    "type": "string",
    "description": "CSV with a header row, one row per item (a page's `results`); nested objects become dotted "
    "columns (`peak_tflops.bf16`), lists a JSON cell, null an empty cell; text starting with = + - @ is prefixed "
    "with ' so spreadsheets do not run it.",
}

_ERROR_DESCRIPTIONS = {
    "400": "Invalid input: `errors` names each bad field by JSON pointer.",
    "401": "No valid credentials (token or session).",
    "403": "Authenticated but not allowed (e.g. staff-only), or a session request without a CSRF token.",
    "404": "No such object, or it belongs to another user.",
    "429": "Rate limit reached; see `retry_after_s` and the Retry-After header.",
}


class ProblemAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, response in list(responses.items()):
            if code >= "400" and "content" not in response:  # declared without a body: it is a problem
                responses[code] = self._problem(code, response.get("description") or "Error.")
        for code, description in _ERROR_DESCRIPTIONS.items():
            if code not in responses:
                responses[code] = self._problem(code, description)
        responses.setdefault("default", self._problem("default", "Any other error, as problem details."))
        for response in responses.values():
            if "text/csv" in response.get("content", {}):
                response["content"]["text/csv"] = {"schema": CSV_SCHEMA}
        return responses

    def _problem(self, code: str, description: str) -> dict[str, Any]:
        response = self._get_response_for_code(ProblemSerializer, code, media_types=[PROBLEM_CONTENT_TYPE])
        response["description"] = description
        return response


# --- the Scenario JSON Schema (advisor/schemas/scenario.schema.json, draft 2020-12) as OpenAPI 3.0 ---

SCENARIO_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "scenario.schema.json"


def json_schema_to_openapi30(node: Any) -> Any:
    """Draft 2020-12 -> the OpenAPI 3.0 dialect: `type: [T, "null"]` -> `nullable`, `const` -> one-value
    `enum`, numeric `exclusiveMinimum/Maximum` -> boolean flags; `$schema`/`$id` dropped."""
    if isinstance(node, list):
        return [json_schema_to_openapi30(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$schema", "$id"):
            continue
        if key == "properties":
            out[key] = {name: json_schema_to_openapi30(sub) for name, sub in value.items()}
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) != 1:
                raise ValueError(f"cannot express type {value!r} in OpenAPI 3.0")
            out["type"] = types[0]
            if "null" in value:
                out["nullable"] = True
        elif key == "const":
            out["enum"] = [value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        else:
            out[key] = json_schema_to_openapi30(value)
    if out.get("nullable") and "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


@functools.cache
def scenario_openapi_schema() -> dict[str, Any]:
    return json_schema_to_openapi30(json.loads(SCENARIO_SCHEMA_PATH.read_text(encoding="utf-8")))


class ScenarioDocument(serializers.Serializer):
    """Placeholder for the Scenario JSON in the schema; advisor.scenario.parse_scenario validates it."""


class ScenarioDocumentExtension(OpenApiSerializerExtension):
    target_class = ScenarioDocument

    def get_name(self, auto_schema: AutoSchema, direction: str) -> str:
        return "Scenario"

    def map_serializer(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return scenario_openapi_schema()


@extend_schema_field(ScenarioDocument)
class ScenarioDocumentField(serializers.JSONField):
    """A Scenario JSON object; its content is validated by advisor.scenario, not here."""
