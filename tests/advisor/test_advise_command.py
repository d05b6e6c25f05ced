"""`python manage.py advise SCENARIO.json`: the Advice JSON on stdout; exit 2 naming the bad field."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from estimator import model as estimator_model
from estimator.prediction import case_table, job_queries
from estimator.specs import get_gpu
from estimator.workload import Cluster, TrainingJob

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = {
    "workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10},
    "gpu": "h100-sxm",
    "cluster_sizes": [1, 8],
    "rent": {"usd_per_gpu_hour": 3.0},
    "buy": {"capex_usd": 250_000},
}


def run(path: Path | str) -> str:
    out = io.StringIO()
    call_command("advise", str(path), stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_prints_the_advice_json(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    advice = json.loads(run(path))
    assert advice["scenario"]["gpu"] == "h100-sxm"
    assert [s["gpus"] for s in advice["sizes"]] == [1, 8]
    assert advice["recommendation"]["action"] in {"rent", "buy"}
    # The manual quotes priced both sides: 8 GPUs x run hours x $3.00.
    eight = advice["sizes"][1]
    assert eight["rent"]["usd_per_run"] == pytest.approx(8 * eight["run_hours"] * 3.0)
    assert eight["buy"]["capex_usd"] == 250_000


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            '{"workload": {"kind": "training", "model": {"params_b": -1}, "tokens": 1e10}, "gpu": "h100-sxm"}',
            "/workload/model/params_b: must be a number at least 0.001",
        ),
        (
            '{"workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10}, "gpu": "h100-sxm", "x": 1}',
            "/x: unknown field",
        ),
        (
            '{"workload": {"kind": "inference", "model": {"params_b": 1}, "tokens": 1e9}, "gpu": "h100-sxm"}',
            "/workload/tokens: unknown field",
        ),
        (
            '{"workload": {"kind": "training", "model": {"params_b": 1}, "tokens": NaN}, "gpu": "h100-sxm"}',
            "NaN is not valid JSON",  # refused while reading, as the API refuses it
        ),
        (
            # A repeated name: the API refuses it (core.jsontext); the command read the last one silently.
            '{"workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e9}, '
            '"gpu": "h100-sxm", "gpu": "l4"}',
            "is given more than once in this object",
        ),
        ('{"workload": ', "not valid JSON at line 1 column 14"),
        ("[1, 2]", "/: must be an object"),
    ],
)
def test_invalid_input_exits_2_naming_the_field(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError) as caught:
        run(path)
    assert caught.value.returncode == 2
    assert says in str(caught.value)


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        run(tmp_path / "missing.json")
    assert caught.value.returncode == 2 and "cannot read the scenario file" in str(caught.value)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CommandError) as caught:
        run(binary)
    assert caught.value.returncode == 2


def test_real_process_exit_status_is_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    # Every ownership input given, so the process fails on validation before it needs a database.
    buy = {"years": 5, "discount_rate": 0.08, "residual_fraction": 0.1, "power_usd_per_kwh": 0.12, "pue": 1.3}
    buy |= {"colo_usd_per_kw_month": 150, "support_fraction_per_year": 0.1}
    path.write_text(json.dumps({"gpu": "h100-sxm", "buy": buy}))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "advise", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "/workload: required" in done.stderr and done.stdout == ""


@pytest.mark.django_db
def test_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(SCENARIO)))
    advice = json.loads(run("-"))
    assert advice["scenario"]["rent"]["usd_per_gpu_hour"] == 3.0


# --- issue 15 through the command ------------------------------------------------------------------------------

QUOTES = {"rent": {"usd_per_gpu_hour": 3.0}, "buy": {"capex_usd": 250_000}}


@pytest.mark.django_db
def test_refuses_70b_with_7b_geometry_naming_the_model(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    model = {"params_b": 70, "layers": 32, "hidden": 4096, "heads": 32}
    path.write_text(json.dumps({**SCENARIO, "workload": {**SCENARIO["workload"], "model": model}}))
    with pytest.raises(CommandError) as caught:
        run(path)
    assert caught.value.returncode == 2
    assert "/workload/model:" in str(caught.value) and "15%" in str(caught.value)


@pytest.mark.django_db
def test_a_mixture_of_experts_trains_at_its_active_flops_and_says_what_is_left_out(tmp_path: Path) -> None:
    # An outsider's probe: Mixtral 8x7B trained as a dense 46.7B model (MFU on 46.7B, 3.6x the FLOPs per token).
    path = tmp_path / "s.json"
    model = {"name": "mixtral-8x7b", "seq_len": 4096}
    workload = {**SCENARIO["workload"], "model": model, "global_batch": 512, "precision": "bf16"}
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "cluster_sizes": [64]}))
    advice = json.loads(run(path))
    assert advice["model"]["active_params_b"] == pytest.approx(12.9) and advice["model"]["params_b"] == 46.7
    size = advice["sizes"][0]
    flops_per_token = 6 * 12.9e9 + 6 * 32 * 4096 * 4096
    peak = get_gpu("h100-sxm").peak_flops("bf16")
    assert size["mfu"] == pytest.approx(flops_per_token * size["tokens_per_s"] / (64 * peak), rel=1e-6)
    assert any("12.9B active parameters" in w and "all-to-all" in w for w in advice["warnings"])


@pytest.mark.django_db
def test_no_fit_answers_the_nearest_size_and_what_would_hold_the_model(tmp_path: Path) -> None:
    # DESIGN.md: action none carries closest and relax; training gave neither (an outsider's probe).
    path = tmp_path / "s.json"
    workload = {**SCENARIO["workload"], "model": {"name": "llama-3.1-70b"}, "global_batch": 256}
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "gpu": "rtx4090", "cluster_sizes": [1, 2, 4]}))
    advice = json.loads(run(path))
    rec = advice["recommendation"]
    assert rec["action"] == "none" and rec["gpus"] is None
    assert rec["closest"]["gpus"] == 4 and rec["closest"]["memory_per_gpu_gb"] > rec["closest"]["memory_gb"] == 24
    more = rec["relax"][0]
    assert more["change"] == "cluster_sizes" and more["fits_memory"] and more["gpus"] > 4
    # The option is what the estimator answers when asked: that size holds the model, half of it does not.
    path.write_text(
        json.dumps(
            {**SCENARIO, "workload": workload, "gpu": "rtx4090", "cluster_sizes": [more["gpus"] // 2, more["gpus"]]}
        )
    )
    checked = json.loads(run(path))
    assert [size["fits_memory"] for size in checked["sizes"]] == [False, True]
    assert all(r["fits_memory"] and r["gpu"] != "rtx4090" for r in rec["relax"][1:])


@pytest.mark.django_db
def test_a_given_utilization_far_above_what_the_runs_need_is_flagged(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    workload = {**SCENARIO["workload"], "runs_per_year": 1}
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "utilization": 0.9}))
    advice = json.loads(run(path))
    rec = next(size for size in advice["sizes"] if size["gpus"] == advice["recommendation"]["gpus"])
    busy = rec["run_hours"] / 8760
    assert busy * 2 < 0.9
    assert any("90% utilization assumed for owning" in w and "other work" in w for w in advice["warnings"])
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "utilization": busy * 1.5}))
    assert not any("other work" in w for w in json.loads(run(path))["warnings"])


@pytest.mark.django_db
def test_a_defaulted_utilization_is_called_a_default_and_the_remedy_is_to_give_the_runs(tmp_path: Path) -> None:
    # An outsider's probe (F3): with neither /utilization nor /workload/runs_per_year the reason read "At 60%
    # utilization (given)" and the warning said "leave /utilization out to price the runs alone", which it already
    # was: leaving it out changes nothing unless runs_per_year is given.
    path = tmp_path / "a.json"
    path.write_text(json.dumps({**SCENARIO, "workload": {**SCENARIO["workload"], "tokens": 1e9}}))
    advice = json.loads(run(path))
    assert {"/utilization", "/workload/runs_per_year"} <= {a["pointer"] for a in advice["assumptions"]}
    reasons, warnings = " ".join(advice["recommendation"]["reasons"]), " ".join(advice["warnings"])
    assert "(given)" not in reasons and "the stated" not in reasons + warnings
    assert "Owning wins only at the utilization assumed: the default 4 runs" in reasons
    assert "buying rests on the 60% utilization assumed (default: DESIGN.md example)" in reasons
    assert "At 60% utilization (default: DESIGN.md example) an owned GPU-hour" in reasons
    flagged = next(w for w in advice["warnings"] if "other work" in w)
    assert "leave /utilization out" not in warnings
    assert "(/utilization not given; default: DESIGN.md example)" in flagged
    assert "give /workload/runs_per_year to price your own runs alone" in flagged
    # Given utilization with the runs defaulted: leaving /utilization out alone would fall back to the same default.
    path.write_text(json.dumps({**SCENARIO, "workload": {**SCENARIO["workload"], "tokens": 1e9}, "utilization": 0.9}))
    given = json.loads(run(path))
    assert "At 90% utilization (given)" in " ".join(given["recommendation"]["reasons"])
    flagged = next(w for w in given["warnings"] if "other work" in w)
    assert "the default 4 runs a year" in flagged
    assert "give /workload/runs_per_year and leave /utilization out to price the runs alone" in flagged
    # Both given: leaving /utilization out is the remedy that works.
    workload = {**SCENARIO["workload"], "tokens": 1e9, "runs_per_year": 4}
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "utilization": 0.9}))
    flagged = next(w for w in json.loads(run(path))["warnings"] if "other work" in w)
    assert "(4 runs a year)" in flagged and "; leave /utilization out to price the runs alone" in flagged


@pytest.mark.django_db
def test_uses_the_utilization_implied_by_runs_per_year(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    workload = {**SCENARIO["workload"], "tokens": 1e11, "runs_per_year": 12}
    path.write_text(json.dumps({**SCENARIO, "workload": workload}))
    advice = json.loads(run(path))
    assert advice["scenario"]["utilization"] is None
    for size in advice["sizes"]:
        implied = min(1.0, 12 * size["run_hours"] / 8760)
        assert size["buy"]["utilization"] == pytest.approx(implied)
        # The owned cost per GPU-hour is the one at that utilization.
        fixed_share = size["buy"]["fixed_usd_per_year"] / (size["gpus"] * 8760 * implied)
        owned = fixed_share + size["buy"]["variable_usd_per_busy_gpu_hour"]
        assert size["buy"]["usd_per_gpu_hour_at_utilization"] == pytest.approx(owned)
    reasons = " ".join(advice["recommendation"]["reasons"])
    assert "implied by 12 runs a year" in reasons and "a run renting against" in reasons


@pytest.mark.django_db
def test_returns_alternatives_for_compare_gpus(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCENARIO, **QUOTES, "compare_gpus": ["a100-80gb", "h200"]}))
    advice = json.loads(run(path))
    rows = {a["gpu"]: a for a in advice["alternatives"]}
    assert list(rows) == ["h100-sxm", "a100-80gb", "h200"]
    rec = advice["recommendation"]["gpus"]
    own = next(s for s in advice["sizes"] if s["gpus"] == rec)
    assert rows["h100-sxm"]["gpus"] == rec and rows["h100-sxm"]["run_hours"] == pytest.approx(own["run_hours"])
    # A100 is slower per GPU than H100: a run takes longer at the same size.
    if rows["a100-80gb"]["gpus"] == rec:
        assert rows["a100-80gb"]["run_hours"] > own["run_hours"]
    assert rows["h100-sxm"]["rent_usd_per_run"] > 0 and rows["h100-sxm"]["buy_usd_per_run"] > 0
    # The manual quotes are the H100's (DESIGN.md): the other GPUs are priced at their catalog, empty here.
    for gpu in ("a100-80gb", "h200"):
        row = rows[gpu]
        assert row["fits_memory"] and row["rent_usd_per_run"] is None and row["buy_usd_per_run"] is None
        assert "are for h100-sxm" in row["pricing_note"]


@pytest.mark.django_db
def test_unreachable_inference_target_answers_none_with_closest(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    scenario = {
        "workload": {
            "kind": "inference",
            "model": {"name": "llama-3.1-70b"},
            "latency": {"ttft_p95_s": 0.05, "tpot_p95_s": 0.05},
        },
        "gpu": "h100-sxm",
        **QUOTES,
    }
    path.write_text(json.dumps(scenario))
    advice = json.loads(run(path))
    rec = advice["recommendation"]
    assert rec["action"] == "none" and rec["gpus"] is None
    assert rec["closest"]["ttft_s"] > 0.05 and rec["relax"]
    assert "None" not in json.dumps(rec["reasons"])


@pytest.mark.django_db
def test_the_no_fit_search_suggests_only_sizes_the_scenario_accepts(tmp_path: Path) -> None:
    # A regression probe: from 3 GPUs it suggested 12 GPUs on 8-GPU nodes, a size the Scenario refuses.
    path = tmp_path / "s.json"
    workload = {**SCENARIO["workload"], "model": {"params_b": 30}, "global_batch": 1024}
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "cluster_sizes": [3]}))
    rec = json.loads(run(path))["recommendation"]
    for option in rec["relax"]:
        if option["gpus"] is None:
            continue
        assert option["gpus"] <= 8 or option["gpus"] % 8 == 0
        path.write_text(
            json.dumps({**SCENARIO, "workload": workload, "gpu": option["gpu"], "cluster_sizes": [option["gpus"]]})
        )
        assert json.loads(run(path))["sizes"][0]["fits_memory"] is True


@pytest.mark.django_db
def test_a_mixture_of_experts_holds_the_activations_of_its_active_experts(tmp_path: Path) -> None:
    # A regression probe: Mixtral (2 of 8 experts per token) was given the activation memory of one expert.
    layout = {"strategy": "fsdp", "tp": 1, "pp": 1, "micro_batch": 1, "activation_checkpointing": False}
    workload = {
        **SCENARIO["workload"],
        "model": {"name": "mixtral-8x7b", "seq_len": 4096},
        "global_batch": 1024,
        "parallelism": layout,
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "cluster_sizes": [64]}))
    memory = json.loads(run(path))["sizes"][0]["memory_per_gpu_gb"]

    def memory_with(ffn: int) -> float:
        job = TrainingJob(
            params_b=46.7,
            active_params_b=12.9,
            seq_len=4096,
            global_batch=1024,
            layers=32,
            hidden=4096,
            heads=32,
            kv_heads=8,  # Mixtral's grouped-query attention (models.csv): K and V held 8 heads wide
            ffn_hidden=ffn,
            vocab=32000,
        )
        codes = {"strategy": estimator_model.ZERO3, "tp": 1, "pp": 1, "cp": 1, "mb": 1, "ac": 0}
        cases = case_table(
            job_queries(job, Cluster(get_gpu("h100-sxm")), [64]),
            np.array([0]),
            {k: np.array([v]) for k, v in codes.items()},
        )
        return float(estimator_model.memory_per_gpu(cases)[0]) / 1e9

    assert memory == pytest.approx(memory_with(2 * 14336), rel=1e-6)
    assert memory > memory_with(14336) + 1  # GB: the second expert's activations


@pytest.mark.django_db
def test_a_manual_rent_quote_is_priced_whatever_the_markets(tmp_path: Path) -> None:
    # A hostile probe: markets without on_demand dropped the manual quote silently and said renting never paid.
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCENARIO, "rent": {"usd_per_gpu_hour": 3.0, "markets": ["spot"]}}))
    advice = json.loads(run(path))
    assert all(s["rent"]["usd_per_run"] is not None for s in advice["sizes"] if s["fits_memory"])
    # Priced as on-demand, while the echo keeps the markets the user gave (a later hostile probe).
    assert all(s["rent"]["by_market"]["on_demand"] is not None for s in advice["sizes"] if s["fits_memory"])
    assert advice["scenario"]["rent"]["markets"] == ["spot"]


@pytest.mark.django_db
def test_moe_geometry_whose_active_count_passes_params_b_is_accepted(tmp_path: Path) -> None:
    # A hostile probe: experts = active_experts = 1 put the router-inclusive active count above params_b: a 400.
    path = tmp_path / "s.json"
    model = {"params_b": 7, "layers": 32, "hidden": 4096, "heads": 32, "experts": 1, "active_experts": 1}
    path.write_text(json.dumps({**SCENARIO, "workload": {**SCENARIO["workload"], "model": model}}))
    advice = json.loads(run(path))
    assert advice["model"]["experts"] == 1 and any(s["fits_memory"] for s in advice["sizes"])


@pytest.mark.django_db
def test_the_no_fit_search_tries_bigger_gpus_at_their_own_sizes(tmp_path: Path) -> None:
    # A hostile probe: sizes [12] suit no 8-GPU server, so H200 and B200 were skipped silently.
    path = tmp_path / "s.json"
    workload = {**SCENARIO["workload"], "model": {"params_b": 2000}, "global_batch": 1024}
    path.write_text(json.dumps({**SCENARIO, "workload": workload, "gpu": "gh200", "cluster_sizes": [12]}))
    relax = json.loads(run(path))["recommendation"]["relax"]
    assert {"h200", "b200"} <= {r["gpu"] for r in relax if r["change"] == "gpu"}
