"""OpenAPI generation: every operation declares its problem+json error responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from advisor.advice.models import ADVICE_MODELS, advice_json_schema
from advisor.scenario_model import scenario_json_schema
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


def embeddable(schema: dict[str, Any]) -> dict[str, Any]:
    """A draft 2020-12 document as an OpenAPI 3.1 component: 3.1 schemas ARE JSON Schema, so only the
    document-level keywords go (`$schema`, `$id`, and `title`, which generators would use as a second,
    clashing class name: the component's name is the title)."""
    return {key: value for key, value in schema.items() if key not in ("$schema", "$id", "title")}


# --- the typed documents (Scenario, Advice) as components ---
# drf-spectacular post-processes the components it builds (enum extraction rewrites them in place), so the
# extensions below only leave a marker and the hook `embed_documents` (the last post-processing hook) puts a
# fresh copy of each JSON Schema there: the document is the same on every fetch.

DOCUMENT_MARKER = "x-gpu-advisor-document"
ADVICE_DEF_PREFIX = "Advice"  # the Advice models' parts ("Offer", "Layout") would clash with serializer names
SCENARIO_DEF_PREFIX = "Scenario"  # the Scenario's parts ("Network", "Rent") likewise


def _components(schema: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A generated schema's $defs as components named prefix + model name (its title: generators name
    classes by title, so it must be the component name too)."""
    return {prefix + name: {**part, "title": prefix + name} for name, part in schema.pop("$defs", {}).items()}


def scenario_components() -> dict[str, Any]:
    """Scenario and its parts (the training and inference workloads, ...), generated from
    advisor.scenario_model: a fresh dict on every call (drf-spectacular post-processing rewrites dicts in place)."""
    schema = scenario_json_schema(ref_template=f"#/components/schemas/{SCENARIO_DEF_PREFIX}{{model}}")
    components = _components(schema, SCENARIO_DEF_PREFIX)
    components["Scenario"] = {"title": "Scenario", **embeddable(schema)}
    return components


def advice_components() -> dict[str, Any]:
    """TrainingAdvice, InferenceAdvice and their parts, generated from advisor.advice.models."""
    components: dict[str, Any] = {}
    for kind in ADVICE_MODELS:
        schema = advice_json_schema(
            kind,
            ref_template=f"#/components/schemas/{ADVICE_DEF_PREFIX}{{model}}",
            scenario_ref="#/components/schemas/Scenario",
        )
        components.update(_components(schema, ADVICE_DEF_PREFIX))
        components[schema.pop("title")] = embeddable(schema)
    return components


def advice_union() -> dict[str, Any]:
    names = {kind: model.model_config.get("title") or model.__name__ for kind, model in ADVICE_MODELS.items()}
    refs = {kind: f"#/components/schemas/{name}" for kind, name in names.items()}
    return {
        "description": "The Advice: its shape depends on the Scenario's workload.kind.",
        "oneOf": [{"$ref": ref} for ref in refs.values()],
        "discriminator": {"propertyName": "kind", "mapping": refs},
    }


GUIDE_PATH = Path(__file__).resolve().parent / "guide.md"


def embed_documents(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    result.setdefault("info", {})["description"] = GUIDE_PATH.read_text(encoding="utf-8")
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in list(schemas.items()):
        if schema.get(DOCUMENT_MARKER) == "Scenario":
            parts = scenario_components()
            schemas[name] = {**parts.pop("Scenario"), "title": name}
            schemas.update(parts)
        elif schema.get(DOCUMENT_MARKER) == "Advice":
            schemas[name] = advice_union()
            schemas.update(advice_components())
    return result


class ScenarioDocument(serializers.Serializer):
    """Placeholder for the Scenario JSON in the schema; advisor.scenario.parse_scenario validates it."""


class ScenarioDocumentExtension(OpenApiSerializerExtension):
    target_class = ScenarioDocument

    def get_name(self, auto_schema: AutoSchema, direction: str) -> str:
        return "Scenario"

    def map_serializer(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return {DOCUMENT_MARKER: "Scenario"}


@extend_schema_field(ScenarioDocument)
class ScenarioDocumentField(serializers.JSONField):
    """A Scenario JSON object; its content is validated by advisor.scenario, not here."""


class AdviceDocument(serializers.Serializer):
    """Placeholder for the Advice JSON (training or inference) in the schema."""


class AdviceDocumentExtension(OpenApiSerializerExtension):
    target_class = AdviceDocument

    def get_name(self, auto_schema: AutoSchema, direction: str) -> str:
        return "Advice"

    def map_serializer(self, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return {DOCUMENT_MARKER: "Advice"}


@extend_schema_field(AdviceDocument)
class AdviceDocumentField(serializers.JSONField):
    """An Advice JSON object as advisor.advice produced it."""
