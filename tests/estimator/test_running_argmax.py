"""estimator.prediction.running_argmax: bit-identical to the loop it replaced, NaN, ties and infinities included."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.prediction import running_argmax


def loop(values: np.ndarray) -> np.ndarray:
    running = np.zeros(values.size, dtype=np.int64)
    for k in range(1, values.size):
        running[k] = k if values[k] > values[running[k - 1]] else running[k - 1]
    return running


@pytest.mark.parametrize("seed", range(200))
def test_matches_the_loop_on_random_values(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 40))
    # Few distinct values, so ties are common; NaN and infinities mixed in, position 0 included.
    values = rng.choice([0.0, 1.0, 2.0, 3.0, -1.0, np.nan, np.inf, -np.inf], size=size)
    if seed % 2:
        values = np.where(rng.random(size) < 0.7, rng.normal(size=size), values)
    got = running_argmax(values)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, loop(values))


@pytest.mark.parametrize(
    "values",
    [[np.nan, 1.0, 2.0], [1.0, np.nan, 0.5, 2.0], [2.0, 2.0, 1.0, 3.0, 3.0], [-np.inf, np.nan, -np.inf], [5.0], []],
)
def test_matches_the_loop_on_edge_cases(values: list[float]) -> None:
    array = np.asarray(values, dtype=np.float64)
    np.testing.assert_array_equal(running_argmax(array), loop(array))
