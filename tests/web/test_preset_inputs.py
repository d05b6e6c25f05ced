"""Every preset is a scenario whose own inputs agree with one another (a first-time user: "70B pretraining, 2T tokens"
set 1 run a year with 70% utilization, so the page warned at once that the utilization was more than twice what the
runs need, and the amount to approve was $18.5M against $1.7M for the run; "8B fine-tune" set 40% against a 1%-busy
year). Warnings about the prices, the calibration or the estimate's limits are not the preset's inputs."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.web.forms import PRESETS

pytestmark = pytest.mark.django_db

# Words of the warnings that say a scenario's inputs contradict one another (advisor.advice's input checks).
ABOUT_INPUTS = ("utilization assumed", "% of the year the runs need", "leave /utilization out")


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


@pytest.mark.parametrize("key", sorted(PRESETS))
def test_a_preset_raises_no_warning_about_its_own_inputs(key: str) -> None:
    scenario: dict[str, Any] = PRESETS[key]["scenario"]
    warnings = advise(scenario).to_dict()["warnings"]
    about = [w for w in warnings if any(words in w for words in ABOUT_INPUTS)]
    assert not about, (key, about)
