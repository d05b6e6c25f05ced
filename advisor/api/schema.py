"""OpenAPI generation: every operation declares its problem+json error responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from advisor.advice.fleet.models import FLEET_PLAN_SCHEMA_FILE, FLEET_SCHEMA_FILE, fleet_json_schema
from advisor.advice.models import ADVICE_MODELS, advice_json_schema
from advisor.scenario_model import NAME_TEXT, NO_NUL, scenario_json_schema
from core.problems import PROBLEM_CONTENT_TYPE
from core.textcheck import NOT_BLANK_NAME_PATTERN


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
    errors_omitted = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="How many more errors there were: `errors` lists the first MAX_ERRORS_PER_RESPONSE (default 100).",
    )
    retry_after_s = serializers.IntegerField(required=False, help_text="For 429: seconds until a retry may succeed.")


# Text with a character that is neither blank nor NUL, and no NUL anywhere.
NOT_BLANK_NO_NUL = r"^[^\x00]*[^\s\x00][^\x00]*$"
# A name: not blank, and no control character or line break (core.textcheck.clean_name's one character class).
NOT_BLANK_NAME = NOT_BLANK_NAME_PATTERN

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

# Answers beyond those every operation has, declared here once for the operations they apply to.
# Any operation that takes a body:
_BODY_ERROR_DESCRIPTIONS = {
    "413": "The body is larger than the upload limit, or the work it asks for is over a budget (e.g. estimate's "
    "ESTIMATE_MAX_LAYOUTS); `detail` names the limit.",
    "415": "The body's Content-Type is not one this operation takes (JSON; CSV where documented).",
}
# An operation that needs the task queue: a view lists its methods that do in ``task_queue_methods``.
_QUEUE_DOWN_DESCRIPTION = "The task queue (Redis) is not answering; retry after the Retry-After header's seconds."
_RETRY_AFTER_HEADER = {
    "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before retrying."}
}


class ProblemAutoSchema(AutoSchema):
    def map_renderers(self, attribute: str) -> list[Any]:
        rendered: list[Any] = super().map_renderers(attribute)
        # A view that answers JSON is documented as JSON only, without a `format` parameter: its CSV or workbook has
        # an operation of its own (advisor.api.representations), because a generated client reads a response in the
        # first media type listed and so parsed every `?format=csv` and `?format=xlsx` answer as JSON.
        json_ones = [value for value in rendered if value in ("json", "application/json")]
        return json_ones or rendered

    def _get_response_bodies(self, direction: Literal["request", "response"] = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, response in list(responses.items()):
            if code >= "400" and "content" not in response:  # declared without a body: it is a problem
                responses[code] = self._problem(code, response.get("description") or "Error.")
        for code, description in self._error_descriptions().items():
            if code not in responses:
                responses[code] = self._problem(code, description)
        if "503" in responses and self.method in getattr(self.view, "task_queue_methods", ()):
            responses["503"].setdefault("headers", {}).update(_RETRY_AFTER_HEADER)
        responses.setdefault("default", self._problem("default", "Any other error, as problem details."))
        for response in responses.values():
            if "text/csv" in response.get("content", {}):
                response["content"]["text/csv"] = {"schema": CSV_SCHEMA}
        return responses

    def _error_descriptions(self) -> dict[str, str]:
        """The problem answers this operation declares: every operation's, then the body's and the queue's."""
        descriptions = dict(_ERROR_DESCRIPTIONS)
        if self.method in ("POST", "PUT", "PATCH") and self._get_request_body() is not None:
            descriptions.update(_BODY_ERROR_DESCRIPTIONS)
        if self.method in getattr(self.view, "task_queue_methods", ()):
            descriptions["503"] = _QUEUE_DOWN_DESCRIPTION
        return descriptions

    def _get_request_body(self, direction: str = "request") -> dict[str, Any] | None:
        body: dict[str, Any] | None = super()._get_request_body(direction)
        # Every operation here that declares a body refuses a request without one (400 naming the missing fields);
        # drf-spectacular marks it required only when the serializer lists required fields, which the documents
        # (Scenario, Fleet Plan input) and the raw run schemas do not.
        if body is not None:
            body["required"] = True
        return body

    def _get_serializer_field_meta(self, field: Any, direction: Any) -> dict[str, Any]:
        meta: dict[str, Any] = super()._get_serializer_field_meta(field, direction)
        # What the server refuses in a text field it reads: NUL in any string (advisor.api.parsers, before anything
        # is stored), and, when the field may not be blank, all-blank text (a CharField trims whitespace before its
        # blank check; the minLength 1 drf-spectacular writes lets "   " through).
        if direction == "request" and isinstance(field, serializers.CharField) and not field.read_only:
            blank_refused = not field.allow_blank and field.trim_whitespace
            meta["pattern"] = NOT_BLANK_NO_NUL if blank_refused else NO_NUL
            if getattr(field, "is_name", False):
                meta["pattern"] = NOT_BLANK_NAME if blank_refused else NAME_TEXT
        return meta

    def _map_serializer_field(self, field: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(field, direction, bypass_extensions)
        # drf-spectacular writes a nullable field of any value (a JSONField with allow_null, Task.result) as
        # oneOf [{}, {"type": "null"}]: null matches both branches, so oneOf refuses the very null it means to allow.
        if schema.get("oneOf") == [{}, {"type": "null"}]:
            schema["anyOf"] = schema.pop("oneOf")
        return schema

    def _map_serializer(self, serializer: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        # A serializer that refuses unknown fields (advisor.api.serializers.StrictSerializer) is a closed object:
        # clients then know an extra field is a 400, not ignored.
        if getattr(serializer, "refuses_unknown_fields", False) and schema.get("type") == "object":
            schema["additionalProperties"] = False
        return schema

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


def _rehomed(node: Any, names: dict[str, str]) -> Any:
    """``node`` with its `#/$defs/X` references pointing at the components named ``names[X]``."""
    if isinstance(node, list):
        return [_rehomed(item, names) for item in node]
    if isinstance(node, str) and node.startswith("#/$defs/"):
        return "#/components/schemas/" + names[node.removeprefix("#/$defs/")]
    if not isinstance(node, dict):
        return node
    return {key: _rehomed(value, names) for key, value in node.items()}


def fleet_components(file_name: str) -> dict[str, Any]:
    """FleetPlanInput or FleetPlan and their own parts; the parts they share with the Scenario and the Advice
    (network, rent, workloads, offers...) are the Scenario's and the Advice's components, not copies."""
    schema = fleet_json_schema(file_name)
    shared = {name: SCENARIO_DEF_PREFIX + name for name in scenario_json_schema()["$defs"]}
    for kind in ADVICE_MODELS:
        shared.update({name: ADVICE_DEF_PREFIX + name for name in advice_json_schema(kind).get("$defs", {})})
    defs = schema.pop("$defs", {})
    names = {name: shared.get(name, name) for name in defs}
    components = {name: {**_rehomed(part, names), "title": name} for name, part in defs.items() if name not in shared}
    components[schema["title"]] = embeddable(_rehomed(schema, names))
    return components


def proposal_advice() -> dict[str, Any]:
    return {
        "description": "The document the proposal froze: kind scenario, the Advice (TrainingAdvice or "
        "InferenceAdvice, by its `kind`); kind fleet, the Fleet Plan.",
        "oneOf": [
            {"$ref": "#/components/schemas/TrainingAdvice"},
            {"$ref": "#/components/schemas/InferenceAdvice"},
            {"$ref": "#/components/schemas/FleetPlan"},
        ],
    }


def embed_documents(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    """Replace each document marker with its generated schema (fresh on every fetch), adding the components
    it refers to."""
    result.setdefault("info", {})["description"] = GUIDE_PATH.read_text(encoding="utf-8")
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    markers = {name: schema[DOCUMENT_MARKER] for name, schema in schemas.items() if DOCUMENT_MARKER in schema}
    if not markers:
        return result
    # Every document refers to the Scenario's parts, the fleet and proposal documents to the Advice's too.
    parts = scenario_components()
    scenario = parts.pop("Scenario")
    schemas.update(parts)
    schemas.update(advice_components())
    schemas.update(fleet_components(FLEET_SCHEMA_FILE))
    schemas.update(fleet_components(FLEET_PLAN_SCHEMA_FILE))
    replacements = {
        "Scenario": scenario,
        "Advice": advice_union(),
        "FleetPlanInput": schemas["FleetPlanInput"],
        "FleetPlan": schemas["FleetPlan"],
        "ProposalAdvice": proposal_advice(),
    }
    for name, marker in markers.items():
        schemas[name] = {**replacements[marker], "title": name}
    return result


def _document(name: str, doc: str) -> tuple[type[serializers.Serializer], type[serializers.JSONField]]:
    """A JSON field documented as the typed document ``name``: a placeholder serializer whose extension leaves the
    marker that `embed_documents` replaces with the generated schema (one function for every document)."""
    placeholder = type(f"{name}Document", (serializers.Serializer,), {"__doc__": doc})

    def get_name(self: OpenApiSerializerExtension, auto_schema: AutoSchema, direction: str) -> str:
        return name

    def map_serializer(self: OpenApiSerializerExtension, auto_schema: AutoSchema, direction: str) -> dict[str, Any]:
        return {DOCUMENT_MARKER: name}

    # Defining the subclass registers it with drf-spectacular.
    type(
        f"{name}DocumentExtension",
        (OpenApiSerializerExtension,),
        {"target_class": placeholder, "get_name": get_name, "map_serializer": map_serializer},
    )
    field = type(f"{name}DocumentField", (serializers.JSONField,), {"__doc__": doc})
    return placeholder, extend_schema_field(placeholder)(field)


ScenarioDocument, ScenarioDocumentField = _document("Scenario", "A Scenario JSON object (advisor.scenario validates).")
AdviceDocument, AdviceDocumentField = _document("Advice", "An Advice JSON object (training or inference).")
FleetInputDocument, FleetInputDocumentField = _document(
    "FleetPlanInput", "A Fleet Plan input; advisor.advice.fleet validates it."
)
FleetPlanDocument, FleetPlanDocumentField = _document("FleetPlan", "A Fleet Plan (the plan_fleet output).")
ProposalAdviceDocument, ProposalAdviceDocumentField = _document(
    "ProposalAdvice", "What a proposal froze: an Advice (scenario proposals) or a Fleet Plan (fleet proposals)."
)
