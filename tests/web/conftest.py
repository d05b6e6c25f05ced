from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def example_advice() -> dict[str, Any]:
    """The Advice document the renderers were developed against (same shape as Advice.to_dict())."""
    return json.loads((FIXTURES / "advice_training_example.json").read_text())


@pytest.fixture
def scenario_document() -> dict[str, Any]:
    return {
        "name": "7B pretraining",
        "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1.0e12},
        "gpu": "h100-sxm",
        "cluster_sizes": [8, 16],
    }


def load_bundled_data() -> None:
    """The shipped price snapshot, hardware quotes, ownership defaults and default calibration."""
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data as load_prices

    load_prices()
    ensure_default_calibration()


@pytest.fixture
def bundled_data(db: Any) -> None:
    load_bundled_data()
