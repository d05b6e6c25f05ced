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


def test_latencies_of_a_hundred_ms_and_more_print_plainly() -> None:
    """An outsider's probe (#18): 'TTFT 1.9e+02 ms' on the page and in the PDF."""
    assert fmt.duration_s(0.19) == "190 ms" and fmt.duration_s(0.1523) == "152 ms" and fmt.duration_s(0.0132) == "13 ms"
    assert fmt.duration_s(1234.5) == "1,234 s" and fmt.plain(1234.5) == "1,234"


def test_small_fractions_keep_their_significant_digits() -> None:
    """An outsider's probe (#18): 'Utilization 0% is below break-even' where the utilization is 0.16%; the advice's
    reasons, the page and the charts all format through fmt.percent."""
    from advisor.advice.documents import pct
    from advisor.charts import format_percent
    from advisor.web.presenters import break_even_text

    assert fmt.percent(0.0016) == "0.16%" and fmt.percent(0.000012) == "0.0012%" and fmt.percent(0.004) == "0.40%"
    assert fmt.percent(0.6) == "60%" and fmt.percent(0) == "0%" and fmt.percent(0.0016, digits=1) == "0.2%"
    assert pct(0.0016) == format_percent(0.0016) == break_even_text(0.0016) == "0.16%"


def test_runs_a_year_and_sized_things_take_their_number_and_article() -> None:
    assert fmt.runs_a_year(1) == "1 run a year" and fmt.runs_a_year(4) == "4 runs a year"
    assert fmt.node_of(8, "server") == "an 8-GPU server" and fmt.node_of(4, "server") == "a 4-GPU server"


def test_a_fraction_below_one_never_prints_as_100_percent():
    """A finance probe: break-even 0.99668 read "100% utilization (8,731 hours a year)" in the reasons, the warning
    and the PDF summary, and 99.7% in the PDF's key figures. One function, enough decimals to show it is below."""
    from advisor.advice.documents import pct
    from advisor.charts import format_percent
    from advisor.web.presenters import break_even_text

    assert fmt.percent(0.99668) == pct(0.99668) == format_percent(0.99668) == break_even_text(0.99668) == "99.7%"
    assert fmt.percent(0.99996) == "99.996%" and fmt.percent(0.99668, digits=1) == "99.7%"
    assert fmt.percent(1.0) == "100%" and fmt.percent(0.994) == "99%" and fmt.percent(0.6) == "60%"


def test_a_gpu_count_in_the_reasons_groups_its_thousands() -> None:
    # A hostile probe: "TP 4 x 1,798,995 replicas = 7195980 GPUs serves ...": the replicas grouped, the GPUs not.
    from advisor.advice.documents import n_gpus

    assert (n_gpus(1), n_gpus(8), n_gpus(7195980), n_gpus(1024.0)) == (
        "1 GPU",
        "8 GPUs",
        "7,195,980 GPUs",
        "1,024 GPUs",
    )
