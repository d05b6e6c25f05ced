"""Numbers as a person writes them: one module for the page, the PDF and the advice's reasons."""

from __future__ import annotations

import pytest

from advisor import formatting as fmt


@pytest.mark.parametrize(
    ("value", "text"),
    [(1e12, "1T tokens"), (1.5e13, "15T tokens"), (3e11, "300B tokens"), (2e9, "2B tokens"), (512, "512 tokens")],
)
def test_token_counts(value: float, text: str) -> None:
    assert fmt.tokens(value) == text


def test_counts_nodes_and_articles() -> None:
    assert fmt.count(1, "node") == "1 node" and fmt.count(8, "node") == "8 nodes"
    assert fmt.count(1, "replica") == "1 replica" and fmt.count(3, "replica") == "3 replicas"
    assert (
        fmt.node_of(8) == "an 8-GPU node" and fmt.node_of(4) == "a 4-GPU node" and fmt.node_of(11) == "an 11-GPU node"
    )
    assert fmt.gpus_on_nodes(8, 1) == "8 GPUs on 1 node" and fmt.gpus_on_nodes(1, 1) == "1 GPU on 1 node"


def test_latencies_and_missing_values_never_print_none() -> None:
    assert fmt.duration_s(0.05) == "50 ms" and fmt.duration_s(0.0132) == "13 ms" and fmt.duration_s(1.25) == "1.25 s"
    for function in (fmt.tokens, fmt.duration_s, fmt.plain, fmt.percent):
        assert function(None) == fmt.MISSING
        assert function(float("nan")) == fmt.MISSING
    assert fmt.count(None, "node") == fmt.MISSING and fmt.gpus_on_nodes(None, 2) == fmt.MISSING
    assert fmt.plain(7.0) == "7" and fmt.plain(0.05) == "0.05"
