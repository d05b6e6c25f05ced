from __future__ import annotations

from rest_framework.renderers import JSONRenderer

from advisor.api.renderers import CSVRenderer

# Tabular resources also render as CSV (`?format=csv` or `Accept: text/csv`).
JSON_AND_CSV = [JSONRenderer, CSVRenderer]
