"""The advice pipeline: ``advise(scenario) -> Advice``, the one place that combines the estimator's
predictions, the price catalog (or the user's quotes), the hardware quote and the economics."""

from advisor.advice.training import Advice, advise

__all__ = ["Advice", "advise"]
