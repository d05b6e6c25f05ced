"""What every generated JSON Schema in advisor/schemas/ shares: where it lives, how field titles are left out and
how the committed text is written (``manage.py generate_schemas`` writes it; its ``--check`` and a test compare)."""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic.json_schema import GenerateJsonSchema

SCHEMA_BASE_URI: Final[str] = "https://gpu-advisor.local/schemas/"
DRAFT_2020_12: Final[str] = "https://json-schema.org/draft/2020-12/schema"


class NoFieldTitles(GenerateJsonSchema):
    """Field titles ("Usd Per Run") add nothing to the field's name and make client generators invent
    classes; the models' titles (the component names) stay."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def schema_text(schema: dict[str, Any]) -> str:
    """The committed text of a generated schema."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
