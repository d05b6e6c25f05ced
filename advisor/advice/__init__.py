"""The advice pipeline: ``advise(scenario) -> Advice``, the one place that combines the estimator's
predictions, the price catalog (or the user's quotes), the hardware quote and the economics.

Modules: offers (what renting costs), ownership (the hardware quote), costs (the cost model), uncertainty
(Monte Carlo and sensitivity), recommendation (knee, reasons), documents (JSON helpers); training and
inference assemble them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from advisor.advice.inference import InferenceAdvice, advise_inference
from advisor.advice.training import Advice, advise_training
from advisor.scenario import Scenario, parse_scenario
from estimator.calibrate import Calibration


def advise(
    scenario: Scenario | Mapping[str, Any],
    *,
    calibration: Calibration | None = None,
    now: dt.datetime | None = None,
) -> Advice | InferenceAdvice:
    """Turn a Scenario (object or JSON document) into an Advice. Raises ScenarioError for bad input.

    Inference scenarios are answered by ``advise_inference`` wrapped in an ``InferenceAdvice`` with the same
    ``to_dict()``; ``calibration`` there is used only when it is an inference calibration."""
    s = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    if s.workload.kind == "inference":
        return InferenceAdvice(advise_inference(s, now=now, calibration=calibration))
    return advise_training(s, calibration=calibration, now=now)


__all__ = ["Advice", "InferenceAdvice", "advise", "advise_inference", "advise_training"]
