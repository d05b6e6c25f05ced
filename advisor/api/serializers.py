"""Input serializers validate the HTTP shape; output serializers document and render. Domain rules
(what a valid Scenario is, how advice is computed) live in advisor.scenario / advisor.advice."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from advisor.api.schema import ScenarioDocumentField
from advisor.api.tokens import NAME_MAX_LENGTH as TOKEN_NAME_MAX_LENGTH
from advisor.models import ApiToken, Scenario, ScenarioVersion
from advisor.scenarios import NAME_MAX_LENGTH as SCENARIO_NAME_MAX_LENGTH


def saved_versions(obj: Any) -> int:
    """How many times a saved scenario or fleet was saved (the list query annotates ``version_count``)."""
    count = getattr(obj, "version_count", None)
    return int(count if count is not None else obj.versions.count())


class StrictSerializer(serializers.Serializer):
    """Unknown fields are an error (named by pointer), not silently ignored."""

    # Read by advisor.api.schema.ProblemAutoSchema: the schema says the object is closed.
    refuses_unknown_fields = True

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: [f"unknown field; allowed: {', '.join(self.fields)}"] for name in unknown}
                )
        return super().to_internal_value(data)


# --- tokens ---


class TokenSerializer(serializers.ModelSerializer):
    is_active = serializers.BooleanField(read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "revoked_at", "is_active"]
        read_only_fields = fields


class TextField(serializers.CharField):
    """A CharField that takes only JSON strings (DRF's turns 0 or true into "0" / "True")."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class NameField(TextField):
    """A saved item's name: one line of text (core.textcheck.clean_name refuses control characters when it is
    stored; the schema's pattern says so, advisor.api.schema)."""

    # Read by advisor.api.schema, which cannot import this module (it imports the schema).
    is_name = True


class TokenCreateSerializer(StrictSerializer):
    name = NameField(max_length=TOKEN_NAME_MAX_LENGTH, help_text="What the token is for.")


class TokenCreatedSerializer(TokenSerializer):
    key = serializers.CharField(read_only=True, help_text="The secret; shown only in this response.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


# --- scenarios and advice ---


class ScenarioInputSerializer(StrictSerializer):
    name = NameField(
        max_length=SCENARIO_NAME_MAX_LENGTH,
        help_text="The scenario's name, also saved as the document's own `name` (the advice and proposal print it); "
        "a `scenario.name` that differs is an error.",
    )
    scenario = ScenarioDocumentField(help_text="Scenario JSON (see DESIGN.md); unknown fields are an error.")


class ScenarioOutputSerializer(serializers.ModelSerializer):
    scenario = ScenarioDocumentField(source="document", read_only=True, help_text="The Scenario JSON as saved.")
    version = serializers.SerializerMethodField(help_text="How many times it has been saved.")

    class Meta:
        model = Scenario
        fields = ["id", "name", "scenario", "version", "created_at", "updated_at"]
        read_only_fields = fields

    def get_version(self, obj: Scenario) -> int:
        return saved_versions(obj)


class ScenarioListItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Scenario
        fields = ["id", "name", "created_at", "updated_at"]
        read_only_fields = fields


class ScenarioVersionListItemSerializer(serializers.ModelSerializer):
    saved_at = serializers.DateTimeField(source="created_at", read_only=True, help_text="When this state was saved.")

    class Meta:
        model = ScenarioVersion
        fields = ["number", "saved_at", "name"]
        read_only_fields = fields
        extra_kwargs = {
            "number": {"help_text": "1 for the first save; GET .../versions/{number} returns its Scenario JSON."}
        }
