"""The planner form: Scenario JSON out, presets in, validator pointers back onto fields."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from advisor import scenarios as store
from advisor.scenario import parse_scenario
from advisor.web import forms
from pricing.models import Market

pytestmark = pytest.mark.django_db


def _data(**overrides: Any) -> dict[str, Any]:
    data = {key: value for key, value in forms.preset_initial("7b-pretrain").items()}
    data.update(overrides)
    return data


def test_preset_round_trips_to_the_same_scenario() -> None:
    form = forms.PlannerForm(_data())
    assert form.is_valid(), form.errors
    document = form.to_scenario()
    preset = forms.PRESETS["7b-pretrain"]["scenario"]
    assert document["workload"]["tokens"] == preset["workload"]["tokens"]
    assert document["workload"]["model"]["params_b"] == 7
    assert document["cluster_sizes"] == preset["cluster_sizes"]
    # The 7B preset gives no utilization: each size uses the one its 4 runs a year imply (issue 15).
    assert "utilization" not in document and document["workload"]["runs_per_year"] == 4
    assert parse_scenario(document).utilization is None  # the validator accepts what the form builds
    assert forms.PlannerForm(_data(utilization_pct=60)).is_valid()
    given = forms.PlannerForm(_data(utilization_pct=60))
    given.is_valid()
    assert given.to_scenario()["utilization"] == pytest.approx(0.6)


@pytest.mark.parametrize("key", list(forms.PRESETS))
def test_every_preset_is_a_valid_scenario(key: str) -> None:
    form = forms.PlannerForm(forms.preset_initial(key))
    assert form.is_valid(), form.errors
    parse_scenario(form.to_scenario())


def test_empty_optional_fields_are_left_to_the_defaults() -> None:
    form = forms.PlannerForm(_data(layers="", years="", rent_usd_per_gpu_hour=""))
    assert form.is_valid(), form.errors
    document = form.to_scenario()
    assert "years" not in document.get("buy", {})
    assert "usd_per_gpu_hour" not in document.get("rent", {})


def test_percent_fields_become_fractions() -> None:
    form = forms.PlannerForm(_data(utilization_pct="75", discount_rate_pct="5"))
    assert form.is_valid(), form.errors
    document = form.to_scenario()
    assert document["utilization"] == pytest.approx(0.75)
    assert document["buy"]["discount_rate"] == pytest.approx(0.05)


@pytest.mark.parametrize("raw", ["8, x", "", "8;16", "-8"])
def test_cluster_sizes_reject_what_is_not_a_list_of_numbers(raw: str) -> None:
    form = forms.PlannerForm(_data(cluster_sizes=raw))
    assert not form.is_valid()
    assert "cluster_sizes" in form.errors


def test_pointers_map_back_to_fields() -> None:
    assert forms.field_for_pointer("/workload/model/params_b") == "params_b"
    assert forms.field_for_pointer("/cluster_sizes/3") == "cluster_sizes"
    assert forms.field_for_pointer("/buy/discount_rate") == "discount_rate_pct"
    assert forms.field_for_pointer("/workload/traffic") is None


def test_every_field_has_a_label_and_help_text() -> None:
    form = forms.PlannerForm()
    for name, field in form.fields.items():
        assert field.label, name
        assert field.help_text, name
    shown = [name for _, _, main, more in forms.SECTIONS for name in (*main, *more)]
    assert sorted(shown) == sorted(form.fields)


def test_merge_keeps_unshown_fields_and_drops_the_other_kinds() -> None:
    saved = {
        "name": "x",
        "workload": {
            "kind": "training",
            "model": {"params_b": 7, "ffn_hidden": 11008},
            "tokens": 1e12,
            "parallelism": {"strategy": "fsdp", "cp": 2},
        },
        "gpu": "h100-sxm",
        "rent": {"spot": {"checkpoint_s": 300}},
    }
    form = forms.PlannerForm(forms.preset_initial("8b-serving"))
    assert form.is_valid(), form.errors
    merged = forms.merge_into(saved, form.to_scenario())
    assert merged["workload"]["kind"] == "inference"
    assert "tokens" not in merged["workload"]
    assert "parallelism" not in merged["workload"]
    # The size changed (7 -> 8): the saved 7B FFN width no longer describes the model and is dropped.
    assert "ffn_hidden" not in merged["workload"]["model"]
    assert merged["rent"]["spot"] == {"checkpoint_s": 300}
    assert merged["workload"]["traffic"]["peak_requests_per_s"] == 50
    parse_scenario(merged)
    # The same size keeps the geometry the planner does not show.
    same = forms.merge_into(
        {**saved, "workload": {**saved["workload"], "model": {"params_b": 8, "ffn_hidden": 14336}}}, form.to_scenario()
    )
    assert same["workload"]["model"]["ffn_hidden"] == 14336
    parse_scenario(same)


def test_merge_drops_virtual_stages_when_the_pipeline_changes() -> None:
    # An outsider's probe: a saved NeMo plan with pp 8 and 12 virtual stages, edited in the planner to pp 1, answered
    # a 400 on /workload/parallelism/virtual_pipeline, a field the page has no way to change.
    saved = {
        "name": "x",
        "workload": {
            "kind": "training",
            "model": {"name": "llama-3.1-405b"},
            "tokens": 1e12,
            "parallelism": {"tp": 8, "pp": 8, "virtual_pipeline": 12},
        },
        "gpu": "h100-sxm",
    }
    edited = {
        "name": "x",
        "gpu": "h100-sxm",
        "workload": {**saved["workload"], "parallelism": {"tp": 8, "pp": 1, "strategy": "fsdp"}},
    }
    merged = forms.merge_into(saved, edited)
    assert "virtual_pipeline" not in merged["workload"]["parallelism"]
    parse_scenario(merged)
    kept = forms.merge_into(saved, {**edited, "workload": {**saved["workload"], "parallelism": {"tp": 4, "pp": 8}}})
    assert kept["workload"]["parallelism"]["virtual_pipeline"] == 12  # the same pipeline keeps what the page hides


def test_published_model_or_size_and_the_model_error_lands_on_the_size() -> None:
    named = forms.PlannerForm(_data(model_name="llama-3.1-70b", params_b="", layers="", hidden="", heads=""))
    assert named.is_valid(), named.errors
    assert named.to_scenario()["workload"]["model"] == {"name": "llama-3.1-70b", "seq_len": 4096}
    neither = forms.PlannerForm(_data(model_name="", params_b=""))
    assert not neither.is_valid() and "params_b" in neither.errors
    assert forms.field_for_pointer("/workload/model") == "params_b"


def test_training_form_leaves_spot_unchecked_and_compares_gpus() -> None:
    assert "spot" not in forms.preset_initial("7b-pretrain")["markets"]
    form = forms.PlannerForm(_data(compare_gpus=["a100-80gb", "h200"]))
    assert form.is_valid(), form.errors
    assert form.to_scenario()["compare_gpus"] == ["a100-80gb", "h200"]


# --- issue 23: the form's limits are the Scenario model's (advisor.scenario_model), no second copy ---------------


def _number_fields() -> list[str]:
    form = forms.PlannerForm()
    return [
        name
        for name in forms.POINTERS
        if isinstance(form.fields[name], forms.forms.IntegerField | forms.forms.FloatField)
    ]


def test_every_number_field_has_the_model_bounds_type_and_step() -> None:
    from advisor.scenario_model import rule

    form = forms.PlannerForm()
    names = _number_fields()
    assert len(names) >= 30, names
    for name in names:
        field = form.fields[name]
        attrs = {**field.widget_attrs(field.widget), **field.widget.attrs}
        r = rule(forms.POINTERS[name], "inference" if name in forms.INFERENCE_ONLY else "training")
        scale = forms.SCALES.get(name, 1)
        # FloatField subclasses IntegerField
        assert (not isinstance(field, forms.forms.FloatField)) == r.integer, name
        assert attrs.get("step") == (None if r.integer else "any"), (name, attrs)
        assert r.minimum is not None and r.maximum is not None, name
        assert float(attrs["min"]) == pytest.approx(r.minimum / scale), (name, attrs)
        assert float(attrs["max"]) == pytest.approx(r.maximum / scale), (name, attrs)
        assert (attrs.get("data-exclusive-min") == "true") == r.exclusive_minimum, (name, attrs)


@pytest.mark.parametrize("name", _number_fields())
def test_the_form_and_the_validator_agree_at_every_bound(name: str) -> None:
    """At each bound and just past it the form and parse_scenario accept or refuse together."""
    from advisor.scenario import ScenarioError

    r = forms.field_rule(name)
    scale = forms.SCALES.get(name, 1)
    assert r.minimum is not None and r.maximum is not None
    step = 1 if r.integer else max(abs(r.maximum), 1) * 1e-6
    kind = "inference" if name in forms.INFERENCE_ONLY else "training"
    base = forms.preset_initial("8b-serving" if kind == "inference" else "7b-pretrain")
    for value in (r.minimum, r.minimum - step, r.maximum, r.maximum + step):
        shown = value / scale if not r.integer else int(value)
        form = forms.PlannerForm({**base, name: shown})
        form_ok = form.is_valid()
        document = forms.PlannerForm(base)
        assert document.is_valid(), document.errors
        scenario = document.to_scenario()
        forms._set(scenario, forms.POINTERS[name], value)
        try:
            parse_scenario(scenario)
            parser_ok = True
        except ScenarioError as error:
            # Cross-field rules (tp divides heads, mean <= peak...) are not bounds: only "must be a number..." counts.
            parser_ok = not any(
                e["pointer"] == forms.POINTERS[name] and e["message"].startswith("must be a") for e in error.errors
            )
        assert form_ok == parser_ok, (name, value, form.errors if not form_ok else "form accepts")


def test_choices_are_the_model_values() -> None:
    from advisor.scenario_model import rule

    form = forms.PlannerForm()
    for name in ("gpu", "precision", "strategy", "markets", "compare_gpus"):
        r = rule(forms.POINTERS[name])
        values = [value for value, _ in form.fields[name].choices]
        assert sorted(values) == sorted((r.items or r).choices), name
    names = [value for value, _ in form.fields["model_name"].choices if value]
    assert names == list(rule("/workload/model/name").choices)


def test_the_smallest_model_is_the_same_for_the_form_and_the_api() -> None:
    from advisor.scenario import ScenarioError

    assert not forms.PlannerForm(_data(params_b="0.0005")).is_valid()
    assert forms.PlannerForm(_data(params_b="0.001")).is_valid()
    with pytest.raises(ScenarioError):
        parse_scenario(
            {"workload": {"kind": "training", "model": {"params_b": 0.0005}, "tokens": 1e9}, "gpu": "h100-sxm"}
        )


def test_the_serving_preset_sends_what_the_example_sends() -> None:
    # An outsider's probe: the planner's 8B serving preset left spot out of the markets (the training form's rule)
    # and sent cluster_sizes (ignored by inference, with a warning), so it rented dearer than the example did.
    form = forms.PlannerForm(forms.preset_initial("8b-serving"))
    assert form.is_valid(), form.errors
    scenario = form.to_scenario()
    assert "cluster_sizes" not in scenario
    # Left as prefilled, serving's markets are the Scenario's default (every market), not sent as input.
    assert "markets" not in scenario.get("rent", {})
    assert set(parse_scenario(scenario).rent.markets) == {m.value for m in Market}
    assert (
        parse_scenario(scenario).rent.markets
        == parse_scenario(
            json.loads((Path(__file__).resolve().parents[2] / "examples" / "inference-service.json").read_text())
        ).rent.markets
    )


@pytest.mark.parametrize("typed", ["5e-324", "0", "0.005"])
def test_utilization_below_its_minimum_is_refused_in_percent(typed: str) -> None:
    """5e-324 % is 5e-326 as a fraction, 0.0 in floating point: the scenario's "got 0.0" is in the wrong units."""
    form = forms.PlannerForm(_data(utilization_pct=typed))
    assert not form.is_valid()
    assert form.errors["utilization_pct"] == ["Ensure this value is greater than or equal to 0.01."]


@pytest.mark.usefixtures("bundled_data")
def test_utilization_at_its_minimum_plans_with_finite_costs(client) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/plan/results/", _data(utilization_pct="0.01"))
    assert response.status_code == 200, response.content[:500]
    assert "$" in response.content.decode()


@pytest.mark.usefixtures("bundled_data")
def test_inference_plans_with_no_cluster_sizes_and_training_still_asks_for_them(client: Client) -> None:
    # An outsider's probe: POST /plan/results/ for a serving plan answered 422 "This field is required" on
    # cluster_sizes, which inference ignores (the CLI and the API only warn that it was ignored).
    serving = {**forms.preset_initial("8b-serving"), "cluster_sizes": ""}
    form = forms.PlannerForm(serving)
    assert form.is_valid(), form.errors
    assert "cluster_sizes" not in form.to_scenario()
    response = client.post("/plan/results/", serving)
    assert response.status_code == 200, response.content[:500]
    assert "Per million output tokens" in response.content.decode()
    training = forms.PlannerForm(_data(cluster_sizes=""))
    assert not training.is_valid()
    assert training.errors["cluster_sizes"] == ["Training compares cluster sizes: give them, e.g. 8, 16, 32."]


# --- an outside tester: the browser sent its prefilled defaults as the user's input -----------------------------
PREFILLED_DEFAULTS = {
    "precision": "/workload/precision",
    "strategy": "/workload/parallelism/strategy",
    "markets": "/rent/markets",
    "staff_usd_per_year": "/buy/staff_usd_per_year",
}


def _sent(document: dict[str, Any], pointer: str) -> Any:
    value: Any = document
    for key in pointer.strip("/").split("/"):
        value = value.get(key) if isinstance(value, dict) else None
    return value


@pytest.mark.parametrize("key", list(forms.PRESETS))
def test_a_default_left_as_prefilled_is_not_sent_as_input(key: str) -> None:
    """The PDF, page and XLSX said 'your input' for precision bf16, the markets, staff $0/yr and strategy auto that
    the form prefills, where the API's proposal of the same scenario cites the default and its source."""
    form = forms.PlannerForm(forms.preset_initial(key))
    assert form.is_valid(), form.errors
    document = form.to_scenario()
    assert {name for name, pointer in PREFILLED_DEFAULTS.items() if _sent(document, pointer) is not None} == set()
    assert set(PREFILLED_DEFAULTS.values()) - {"/workload/parallelism/strategy"} <= set(
        parse_scenario(document).defaults_used
    )


def test_a_value_the_user_chose_is_sent_and_the_numbers_do_not_change() -> None:
    typed = forms.PlannerForm(
        _data(precision="fp8", strategy="fsdp", markets=["on_demand"], staff_usd_per_year="50000")
    )
    assert typed.is_valid(), typed.errors
    document = typed.to_scenario()
    assert document["workload"]["precision"] == "fp8" and document["workload"]["parallelism"]["strategy"] == "fsdp"
    assert document["rent"]["markets"] == ["on_demand"] and document["buy"]["staff_usd_per_year"] == 50000
    # Switched to serving, the training form's no-spot markets are not serving's default: they are sent.
    serving = forms.PlannerForm({**forms.preset_initial("8b-serving"), "markets": forms.BASE_INITIAL["markets"]})
    assert serving.is_valid(), serving.errors
    assert set(serving.to_scenario()["rent"]["markets"]) == set(forms.BASE_INITIAL["markets"])
    # Left as prefilled, the scenario parses to the same numbers as when the defaults were sent.
    prefilled = forms.PlannerForm(_data())
    assert prefilled.is_valid(), prefilled.errors
    explicit = prefilled.to_scenario()
    explicit["workload"].update(precision="bf16", parallelism={"strategy": "auto"})
    explicit.setdefault("rent", {})["markets"] = forms.BASE_INITIAL["markets"]
    explicit.setdefault("buy", {})["staff_usd_per_year"] = 0
    assert parse_scenario(prefilled.to_scenario()) == parse_scenario(explicit)  # defaults_used is not compared


def test_editing_keeps_what_the_saved_scenario_gave() -> None:
    saved = {
        "name": "x",
        "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, "precision": "bf16"},
        "gpu": "h100-sxm",
        "cluster_sizes": [8],
    }
    form = forms.PlannerForm(forms.initial_from_scenario(saved), editing=saved)
    assert form.is_valid(), form.errors
    merged = forms.merge_into(saved, form.to_scenario())
    assert merged["workload"]["precision"] == "bf16"  # given in the saved scenario: still the user's
    assert "strategy" not in merged["workload"].get("parallelism", {}) and "markets" not in merged.get("rent", {})


@pytest.mark.usefixtures("bundled_data")
def test_the_page_cites_the_default_for_a_prefilled_precision(client: Client) -> None:
    response = client.post("/plan/results/", _data())
    assert response.status_code == 200, response.content[:500]
    rows = {label: source for label, _, source in response.context["assumptions"]}
    assert rows["Precision"].startswith("default") and rows["Staff"].startswith("default"), rows
    assert rows["Rental markets"].startswith("default"), rows


@pytest.mark.parametrize("value", ["9" * 400, "1e400", "-1e400"])
def test_a_number_beyond_a_float_is_told_the_range_not_to_enter_a_number(value: str) -> None:
    # 'Enter a number.' of 400 nines: Django reads it as infinity.
    form = forms.PlannerForm(data=_data(params_b=value, model_name=""))
    assert not form.is_valid()
    assert form.errors["params_b"] == [
        f"Enter a number from 0.001 to 100000: this one is too {'small' if value.startswith('-') else 'large'}."
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("params_b", "7_0"),
        ("params_b", "\u0667"),  # Arabic-Indic 7
        ("params_b", "\uff17\uff10"),  # fullwidth 70
        ("runs_per_year", "\uff11_\uff10"),  # fullwidth 1_0
        ("runs_per_year", "1_0"),
        ("cluster_sizes", "\uff18, 16"),  # fullwidth 8
        ("cluster_sizes", "8, 1_6"),
    ],
)
def test_numbers_are_read_in_ascii_digits_as_the_api_and_the_runs_csv_read_them(name: str, value: str) -> None:
    """An outsider's probe (F8): Python's float() and int() read '7_0' as 70 and other scripts' digits as numbers,
    so the form stored params_b 70 and runs_per_year 10 where the profiled-run CSV refuses the same cells."""
    form = forms.PlannerForm(data=_data(**{name: value, "model_name": ""}))
    assert not form.is_valid()
    assert "ASCII digits" in " ".join(form.errors[name]), form.errors


@pytest.mark.parametrize(("name", "value"), [("params_b", " 70 "), ("params_b", "7e1"), ("runs_per_year", "10")])
def test_plain_numbers_stay_accepted(name: str, value: str) -> None:
    form = forms.PlannerForm(data=_data(**{name: value, "model_name": ""}))
    assert form.is_valid(), form.errors


def test_an_unknown_choice_is_echoed_cut_to_a_readable_length() -> None:
    # A 100,000-character gpu value was echoed whole on the page.
    form = forms.PlannerForm(data=_data(gpu="x" * 100_000))
    assert not form.is_valid()
    (message,) = form.errors["gpu"]
    assert "(100,000 characters)" in message and len(message) < 300


def test_a_cross_field_error_names_the_other_field_by_its_label_not_its_json_key(client: Client) -> None:
    # An outsider's probe: mean traffic above peak said "must not exceed peak_requests_per_s (10); got 50".
    serving = {**forms.preset_initial("8b-serving"), "peak_requests_per_s": "10", "mean_requests_per_s": "50"}
    response = client.post("/plan/results/", serving)
    html = response.content.decode()
    assert response.status_code == 422, html[:500]
    assert "peak_requests_per_s" not in html.split("<form", 1)[-1].replace('name="peak_requests_per_s"', "").replace(
        'id="id_peak_requests_per_s"', ""
    ).replace('for="id_peak_requests_per_s"', "")
    assert "must not exceed “Peak traffic (requests per second)” (10); got 50" in html


def test_json_keys_and_pointers_in_a_message_read_as_form_labels() -> None:
    form = forms.PlannerForm()
    words = forms.in_form_words
    assert words("must not exceed peak_requests_per_s (10)", form) == (
        "must not exceed “Peak traffic (requests per second)” (10)"
    )
    assert words("see /workload/traffic/mean_requests_per_s", form) == "see “Mean traffic (requests per second)”"
    # Plain words that happen to be keys (tokens, precision) stay prose.
    assert words("1000 tokens at this precision", form) == "1000 tokens at this precision"


# An outsider's probe: the planner had no KV heads, so a custom multi-head-attention model (13B, 40 layers x 5120,
# 40 heads) was always sized as 8 KV heads: 3 GPUs where the same scenario as JSON (kv_heads 40) needs 9.
MHA_13B = {"model_name": "", "params_b": "13", "layers": "40", "hidden": "5120", "heads": "40"}


@pytest.mark.parametrize("preset", ["7b-pretrain", "8b-serving"])
def test_kv_heads_is_sent_only_when_given_for_either_kind(preset: str) -> None:
    base = {**forms.preset_initial(preset), **MHA_13B}
    given = forms.PlannerForm({**base, "kv_heads": "40"})
    assert given.is_valid(), given.errors
    assert given.to_scenario()["workload"]["model"]["kv_heads"] == 40
    parse_scenario(given.to_scenario())
    empty = forms.PlannerForm({**base, "kv_heads": ""})
    assert empty.is_valid(), empty.errors
    assert "kv_heads" not in empty.to_scenario()["workload"]["model"]
    assert forms.PlannerForm().fields["kv_heads"].label == "KV heads"
    workload = next(more for key, _, _, more in forms.SECTIONS if key == "workload")
    assert workload[workload.index("heads") + 1] == "kv_heads"  # beside the heads


def test_a_saved_kv_heads_reloads_in_the_form(client: Client, user: Any) -> None:
    saved = {
        "name": "13B MHA",
        "workload": {
            "kind": "inference",
            "model": {"params_b": 13, "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 40},
        },
        "gpu": "h100-sxm",
    }
    initial = forms.initial_from_scenario(saved)
    assert initial["kv_heads"] == 40
    form = forms.PlannerForm(initial, editing=saved)
    assert form.is_valid(), form.errors
    assert forms.merge_into(saved, form.to_scenario())["workload"]["model"]["kv_heads"] == 40
    scenario = store.scenario_create(owner=user, name="13B MHA", document=saved)
    client.force_login(user)
    html = client.get(f"/plan/?scenario={scenario.pk}").content.decode()
    assert re.search(r'<input[^>]*name="kv_heads"[^>]*value="40"', html), html.split('name="kv_heads"')[1][:200]


@pytest.mark.usefixtures("bundled_data")
def test_kv_heads_that_do_not_divide_the_heads_are_refused_naming_the_field(client: Client) -> None:
    response = client.post("/plan/results/", {**forms.preset_initial("8b-serving"), **MHA_13B, "kv_heads": "7"})
    assert response.status_code == 422, response.content[:500]
    errors = dict(response.context["errors"])
    assert errors["kv_heads"] == ["must divide “Attention heads” (40); got 7"], errors


@pytest.mark.usefixtures("bundled_data")
def test_the_planner_sizes_a_multi_head_attention_model_as_the_json_does(client: Client) -> None:
    data = {
        **forms.preset_initial("8b-serving"),
        **MHA_13B,
        "peak_requests_per_s": "10",
        "mean_requests_per_s": "10",
        "input_tokens": "2000",
        "output_tokens": "500",
        "ttft_p95_s": "1",
    }
    gpus = {}
    for kv_heads in ("40", ""):
        response = client.post("/plan/results/", {**data, "kv_heads": kv_heads})
        assert response.status_code == 200, response.content[:500]
        advice = response.context["advice"]
        gpus[kv_heads] = advice["recommendation"]["gpus"]
    assert gpus["40"] > 2 * gpus[""], gpus


@pytest.mark.parametrize("name", _number_fields())
def test_a_range_error_prints_the_bound_as_the_field_shows_it(name: str) -> None:
    # An outsider's probe: "greater than or equal to 1.0" (Global batch, Answer length), "less than or equal to
    # 100000.0" (Model size), "10000000.0" (Training tokens, in billions).
    field = forms.PlannerForm().fields[name]
    attrs = {**field.widget_attrs(field.widget), **field.widget.attrs}
    kind = "inference" if name in forms.INFERENCE_ONLY else "training"
    base = forms.preset_initial("8b-serving" if kind == "inference" else "7b-pretrain")
    high = float(attrs["max"])
    low = float(attrs["min"])
    for typed, bound in (
        (f"{high * 2 + 1:.0f}", attrs["max"]),
        (f"{low - 1 - abs(low):.0f}", attrs["min"]),
        ("9" * 400, attrs["max"]),
    ):
        form = forms.PlannerForm({**base, name: typed})
        assert not form.is_valid()
        (message,) = form.errors[name]
        # In plain digits (the HTML attribute may read 1e-09), then the unit where the form scales it.
        shown = f"{Decimal(str(bound)):f}"
        assert any(f" {shown}{end}" in message for end in (".", ":", " billion")), (name, message, bound)
        assert not re.search(r"\d\.0\b", message) and "e+" not in message and "e-" not in message, (name, message)


def test_the_serving_engine_is_a_select_of_the_model_choices_sent_only_when_chosen() -> None:
    from advisor.scenario_model import SERVING_ENGINES

    assert [value for value, _ in forms.PlannerForm().fields["serving_engine"].choices] == ["", *SERVING_ENGINES]
    serving = next(more for key, _, _, more in forms.SECTIONS if key == "serving")
    assert "serving_engine" in serving and forms.field_for_pointer("/workload/serving_engine") == "serving_engine"
    base = forms.preset_initial("8b-serving")
    left = forms.PlannerForm(base)
    assert left.is_valid(), left.errors
    assert "serving_engine" not in left.to_scenario()["workload"]  # the GPU's default applies, cited as such
    chosen = forms.PlannerForm({**base, "serving_engine": "vllm"})
    assert chosen.is_valid(), chosen.errors
    assert chosen.to_scenario()["workload"]["serving_engine"] == "vllm"
    assert parse_scenario(chosen.to_scenario()).workload.serving_engine == "vllm"
    training = forms.PlannerForm(_data(serving_engine="vllm"))
    assert training.is_valid(), training.errors
    assert "serving_engine" not in training.to_scenario()["workload"]
    saved = {"workload": {"kind": "inference", "model": {"params_b": 8}, "serving_engine": "sglang"}, "gpu": "mi300x"}
    assert forms.initial_from_scenario(saved)["serving_engine"] == "sglang"


@pytest.mark.usefixtures("bundled_data")
def test_tensorrt_llm_on_an_mi300x_is_refused_on_the_engine_select(client: Client) -> None:
    data = {**forms.preset_initial("8b-serving"), "gpu": "mi300x", "serving_engine": "trtllm"}
    response = client.post("/plan/results/", data)
    assert response.status_code == 422, response.content[:500]
    errors = dict(response.context["errors"])
    assert "NVIDIA GPUs only" in errors["serving_engine"][0], errors


def test_a_floor_in_scaled_units_is_worded_in_the_fields_own_units() -> None:
    # A new user's probe (F10): Training tokens = 0 answered "Ensure this value is greater than or equal to 1e-09."
    # (the one-token floor, estimator.bounds.MIN_RUN_TOKENS, in billions and in scientific notation).
    form = forms.PlannerForm(_data(tokens_b="0"))
    assert not form.is_valid()
    message = " ".join(form.errors["tokens_b"])
    assert "at least 1 token" in message and "0.000000001 billion tokens" in message, message
    assert "e-0" not in message
    # An unscaled floor keeps its own figure, in plain digits.
    runs = " ".join(forms.PlannerForm(_data(runs_per_year="0")).errors["runs_per_year"])
    assert "0.01" in runs and "e-0" not in runs, runs
