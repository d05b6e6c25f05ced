from __future__ import annotations

import pytest

from pricing.services import load_bundled_data


@pytest.fixture
def bundled(db: None) -> str:
    return load_bundled_data()
