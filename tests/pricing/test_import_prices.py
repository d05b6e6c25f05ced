"""`import_prices` on real SkyPilot catalog rows (fixtures/README.md) and on the written feed payloads."""

from __future__ import annotations

import datetime as dt
import json
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from pricing.feeds import FEED_NAME_MAX
from pricing.models import FeedRun, Offer, PriceObservation
from tests.pricing.helpers import FIXTURES, fixture_text, lambda_h100_catalog

pytestmark = pytest.mark.django_db


def _import(*args: str | Path) -> dict:
    out = StringIO()
    call_command("import_prices", *[str(arg) for arg in args], stdout=out)
    return json.loads(out.getvalue())


def test_real_cudo_v8_rows_give_the_right_gpu_ids_and_the_offers_the_file_holds() -> None:
    # Rows of the v8 Cudo catalog the adapter's other tests do not use.
    result = _import("--feed", "skypilot", "--cloud", "cudo", FIXTURES / "skypilot_cudo_v8_vms.csv")
    offers = {(o["instance"], o["region"]): o for o in result["offers"]}
    assert result["accepted"] == 6 and result["rejected"] == {}
    assert len(offers) == 6  # Cudo rows have no SpotPrice: one on-demand offer per row
    assert offers[("epyc-genoa-l40s-graphics_4x32v64gb", "no-kristiansand-1")]["usd_per_gpu_hour"] == 0.9876
    assert offers[("epyc-genoa-a100-pcie_1x4v8gb", "no-kristiansand-1")]["gpu"] == "a100-pcie-80gb"  # PCIe card
    assert offers[("intel-ice-lake-a100-pci_8x64v128gb", "us-carlsbad-1")] == {
        "provider": "cudo",
        "instance": "intel-ice-lake-a100-pci_8x64v128gb",
        "region": "us-carlsbad-1",
        "market": "on_demand",
        "gpu": "a100-pcie-80gb",
        "gpu_count": 8.0,
        "usd_per_gpu_hour": 1.4436,
    }
    assert offers[("sapphire-rapids-h100_1x2v4gb", "ca-montreal-3")]["gpu"] == "h100-sxm"
    assert offers[("intel-broadwell-v100_2x8v16gb", "us-newyork-1")]["gpu"] == "v100-16gb"
    assert offers[("ice-lake-rtx-a6000_1x2v4gb", "se-stockholm-1")]["usd_per_gpu_hour"] == 0.4698
    stored = Offer.objects.get(instance_type="intel-ice-lake-a100-pci_8x64v128gb")
    assert stored.feed == "skypilot:cudo" and "imported from skypilot_cudo_v8_vms.csv" in stored.source
    assert FeedRun.objects.get(feed="skypilot:cudo").accepted == 6


def test_real_cudo_v7_rows_nvl_is_not_sxm_and_unknown_gpus_are_counted() -> None:
    result = _import("--feed", "skypilot", "--cloud", "cudo", FIXTURES / "skypilot_cudo_v7_vms.csv")
    gpus = {o["instance"]: o["gpu"] for o in result["offers"]}
    assert gpus["epyc-genoa-h100-nvl-pcie_1x2v4gb"] == "h100-pcie"
    assert gpus["epyc-genoa-h100-nvl-pcie_2x8v16gb"] == "h100-pcie"
    assert result["rejected"] == {"unknown_gpu": 2}  # A40 and A800: no GPU id for them


def test_the_other_feeds_read_their_saved_payloads_through_the_same_adapter() -> None:
    written = FIXTURES / "written"
    lam = _import("--feed", "lambda", written / "lambda_instance_types.json")
    assert lam["accepted"] == 6 and lam["rejected"] == {"unknown_gpu": 1, "non_positive_price": 1}
    azure = _import("--feed", "azure", written / "azure_page1.json", written / "azure_page2_empty_next_link.json")
    assert azure["accepted"] == 6
    gcp = _import("--feed", "gcp", written / "gcp_skus_page1.json", written / "gcp_skus_page2.json")
    assert {o["instance"] for o in gcp["offers"]} >= {"a2-highgpu-1g", "g2-standard-4"}
    aws = _import(
        "--feed",
        "aws",
        written / "aws_get_products_us_east_1_page1.json",
        written / "aws_describe_instance_types_us_east_1.json",
    )
    p5 = [o for o in aws["offers"] if o["instance"] == "p5.48xlarge" and o["market"] == "on_demand"]
    assert p5 and p5[0]["gpu"] == "h100-sxm" and p5[0]["gpu_count"] == 8.0


def test_an_unreadable_file_exits_2_naming_it_and_stores_nothing(tmp_path: Path) -> None:
    good = FIXTURES / "skypilot_cudo_v8_vms.csv"
    html = tmp_path / "rate-limited.csv"
    html.write_text("<html><body>rate limited</body></html>")
    with pytest.raises(CommandError, match=r"rate-limited\.csv") as caught:
        call_command("import_prices", "--feed", "skypilot", "--cloud", "cudo", str(good), str(html), stdout=StringIO())
    assert caught.value.returncode == 2
    missing = tmp_path / "nope.json"
    with pytest.raises(CommandError, match=r"nope\.json") as caught:
        call_command("import_prices", "--feed", "lambda", str(missing), stdout=StringIO())
    assert caught.value.returncode == 2
    not_json = tmp_path / "page.json"
    not_json.write_text("{truncated")
    with pytest.raises(CommandError, match=r"page\.json.*not JSON"):
        call_command("import_prices", "--feed", "azure", str(not_json), stdout=StringIO())
    assert not Offer.objects.exists() and not FeedRun.objects.exists()


def test_skypilot_files_need_the_cloud() -> None:
    with pytest.raises(CommandError, match="--cloud") as caught:
        call_command(
            "import_prices", "--feed", "skypilot", str(FIXTURES / "skypilot_cudo_v8_vms.csv"), stdout=StringIO()
        )
    assert caught.value.returncode == 2


def test_real_runpod_v8_rows_gb_written_as_mib_still_give_80gb_and_the_pcie_card() -> None:
    result = _import("--feed", "skypilot", "--cloud", "runpod", FIXTURES / "skypilot_runpod_v8_vms.csv")
    offers = {(o["instance"], o["region"], o["market"]): o for o in result["offers"]}
    # Two data centres in IN collapse to one offer per market; spot equals on demand in this file.
    assert set(offers) == {
        (instance, region, market)
        for instance, region in [
            ("1x_A100-80GB_SECURE", "IN"),
            ("1x_A100-80GB_SECURE", "US"),
            ("2x_A100-80GB_SECURE", "US"),
        ]
        for market in ("on_demand", "spot")
    }
    # 'SizeInMiB': 80 is 80 GB, not 80 MiB; the rows' own GpuInfo names the card 'A100 PCIe', so not the SXM4
    # a100-80gb (it undercut RunPod's real SXM4 offer, 'A100-80GB-SXM' at $1.89, under the SXM4 id).
    assert {o["gpu"] for o in offers.values()} == {"a100-pcie-80gb"}
    assert offers[("2x_A100-80GB_SECURE", "US", "spot")]["usd_per_gpu_hour"] == 1.39


def test_a_real_cloud_billing_page_prices_a2_highgpu_as_host_plus_gpu() -> None:
    result = _import("--feed", "gcp", FIXTURES / "gcp_skus_opencost_page.json")
    offers = {(o["instance"], o["region"]): o for o in result["offers"]}
    assert {region for _, region in offers} == {"us-central1", "us-east1", "us-west1"}
    assert {instance for instance, _ in offers} == {
        "a2-highgpu-1g",
        "a2-highgpu-2g",
        "a2-highgpu-4g",
        "a2-highgpu-8g",
        "a2-megagpu-16g",
    }
    # 12 vCPU x $0.031611 + 85 GiB x $0.004237 + 1 x $2.933908 (GCP's list price for a2-highgpu-1g is $3.67/h)
    one = offers[("a2-highgpu-1g", "us-central1")]
    assert (one["gpu"], one["market"], one["usd_per_gpu_hour"]) == ("a100-40gb", "on_demand", 3.673385)
    assert result["rejected"] == {}


def test_a_cloud_name_too_long_for_a_feed_name_is_refused_before_anything_is_stored() -> None:
    with pytest.raises(CommandError, match=f"longer than {FEED_NAME_MAX} characters") as caught:
        call_command(
            "import_prices",
            "--feed",
            "skypilot",
            "--cloud",
            "a-cloud-whose-name-does-not-fit-the-column",
            str(FIXTURES / "skypilot_cudo_v8_vms.csv"),
            stdout=StringIO(),
        )
    assert caught.value.returncode == 2
    assert not Offer.objects.exists() and not FeedRun.objects.exists()


def test_an_adapter_failing_on_a_payload_exits_2_naming_the_file_and_stores_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stand-in for an adapter bug no record-level check catches: the command must still say which file.
    def broken(key: str, entry: object, *, url: str) -> None:
        raise KeyError("price_cents_per_hour")

    monkeypatch.setattr("pricing.feeds.lambda_cloud.instance_records", broken)
    with pytest.raises(CommandError, match=r"lambda_instance_types\.json.*KeyError") as caught:
        _import("--feed", "lambda", FIXTURES / "written" / "lambda_instance_types.json")
    assert caught.value.returncode == 2
    assert not Offer.objects.filter(provider__slug="lambda").exists() and not FeedRun.objects.filter(feed="lambda")


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("instance_type", "specs"), "24 vCPUs"),
        (("instance_type", "name"), 42),
        (("regions_with_capacity_available",), 3),
    ],
)
def test_a_wrong_typed_record_in_a_saved_payload_is_counted_and_the_rest_imported(
    path: tuple[str, ...], value: object, tmp_path: Path
) -> None:
    payload = json.loads((FIXTURES / "lambda_instance_types_openapi_example.json").read_text())
    target = payload["data"]["gpu_1x_a100"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value  # mutated copy of Lambda's documented example
    saved = tmp_path / "mutated_lambda.json"
    saved.write_text(json.dumps(payload))
    result = _import("--feed", "lambda", saved)
    assert result["rejected"] == {"malformed_record": 1}
    assert [offer["instance"] for offer in result["offers"]] == ["gpu_4x_a6000"]


def test_an_import_that_accepts_nothing_exits_2_after_its_summary(tmp_path: Path) -> None:
    payload = json.loads((FIXTURES / "lambda_instance_types_openapi_example.json").read_text())
    for entry in payload["data"].values():
        entry["instance_type"]["price_cents_per_hour"] = 0  # mutated copy of Lambda's documented example
    saved = tmp_path / "all_free_lambda.json"
    saved.write_text(json.dumps(payload))
    out = StringIO()
    expected = r"all_free_lambda\.json: no offer accepted \(non_positive_price x2\)"
    with pytest.raises(CommandError, match=expected) as caught:
        call_command("import_prices", "--feed", "lambda", str(saved), stdout=out)
    assert caught.value.returncode == 2
    assert json.loads(out.getvalue())["accepted"] == 0  # the summary is still printed for the operator
    assert not Offer.objects.filter(provider__slug="lambda").exists()


def test_a_cloud_no_catalog_knows_is_refused_naming_the_known_ones() -> None:
    # A hostile probe: --cloud vst created a provider of its own duplicating Vast's offers.
    with pytest.raises(CommandError, match=r"--cloud: skypilot has no part 'vst'; known: .*skypilot:vast") as caught:
        _import("--feed", "skypilot", "--cloud", "vst", FIXTURES / "skypilot_vast_v8_vms.csv")
    assert caught.value.returncode == 2
    assert not Offer.objects.exists() and not FeedRun.objects.exists()


@pytest.mark.parametrize("name", ["", "skypilot:"])
def test_accept_smaller_with_an_empty_name_is_refused_not_a_traceback_or_every_feed(name: str) -> None:
    with pytest.raises(CommandError, match="--accept-smaller: "):
        call_command("refresh_prices", "--accept-smaller", name, stdout=StringIO())
    assert not FeedRun.objects.exists()


@pytest.mark.parametrize("feed", ["azure", "gcp", "aws", "lambda"])
@pytest.mark.parametrize(
    ("label", "payload", "expected"),
    [
        ("10,000 deep", "[" * 10_000 + "]" * 10_000, "nested deeper than"),
        ("a 5,000-digit integer", '{"Items": [' + "9" * 5000 + "]}", "more than 1,000 digits is not accepted"),
    ],
)
def test_hostile_json_is_one_line_in_our_words_and_logs_no_traceback(
    feed: str, label: str, payload: str, expected: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # json.loads recursed into a RecursionError, logged with its traceback; Python's words on a long integer told
    # the user to call sys.set_int_max_str_digits().
    path = tmp_path / "hostile.json"
    path.write_text(payload)
    with pytest.raises(CommandError) as info:
        _import("--feed", feed, path)
    message = str(info.value)
    assert info.value.returncode == 2 and len(message.splitlines()) == 1
    assert str(path) in message and expected in message and "sys." not in message
    assert not [record for record in caplog.records if record.exc_info], label
    assert not Offer.objects.exists()


def test_one_json_reader_serves_the_api_and_the_feeds() -> None:
    import core.jsontext
    from advisor.api import parsers
    from pricing.feeds import base

    assert parsers.parse_json_text is core.jsontext.parse_json_text is base.parse_json_text


def _lambda_8x_h100() -> Offer:
    return Offer.objects.get(
        provider__slug="lambda", instance_type="gpu_8x_h100_sxm5", region="europe-central-1", market="on_demand"
    )


def test_an_older_file_does_not_replace_the_newer_price_and_is_counted(tmp_path: Path, bundled: str) -> None:
    # The feed operator's report: v1 ($16/h), then v2 ($17.60), then the older v0 ($12) replaced v2's $2.20/GPU-h
    # with $1.50 observed a day earlier, and the history went out of observed order.
    now = timezone.now().replace(microsecond=0)
    days = [now - dt.timedelta(days=n) for n in (3, 2, 1)]
    v0, v1, v2 = (
        lambda_h100_catalog(tmp_path / f"v{n}.csv", usd_per_hour=price, mtime=days[n])
        for n, price in enumerate(("12.0", "16.0", "17.6"))
    )
    _import("--feed", "skypilot", "--cloud", "lambda", v1)
    _import("--feed", "skypilot", "--cloud", "lambda", v2)
    out = StringIO()
    with pytest.raises(CommandError, match=r"v0\.csv: no offer accepted \(older_than_stored x1\)") as caught:
        call_command("import_prices", "--feed", "skypilot", "--cloud", "lambda", str(v0), stdout=out)
    assert caught.value.returncode == 2
    printed = json.loads(out.getvalue())
    assert (printed["accepted"], printed["rejected"], printed["offers"]) == (0, {"older_than_stored": 1}, [])
    offer = _lambda_8x_h100()
    assert (float(offer.usd_per_gpu_hour), offer.observed_at, offer.feed) == (2.2, days[2], "skypilot:lambda")
    assert [(row.observed_at, float(row.usd_per_gpu_hour)) for row in offer.history.exclude(observed_at=None)] == [
        (days[1], 2.0),
        (days[2], 2.2),
    ]
    run = FeedRun.objects.filter(feed="skypilot:lambda").first()
    assert run is not None and (run.accepted, run.rejected, run.changed) == (0, 1, 0)
    assert "gpu_8x_h100_sxm5 europe-central-1" in run.rejections["older_than_stored"]["examples"][0]


def test_a_file_with_older_and_new_rows_stores_the_new_ones(tmp_path: Path, bundled: str) -> None:
    now = timezone.now().replace(microsecond=0)
    newer = lambda_h100_catalog(tmp_path / "newer.csv", usd_per_hour="17.6", mtime=now - dt.timedelta(days=1))
    _import("--feed", "skypilot", "--cloud", "lambda", newer)
    older = tmp_path / "older.csv"
    real = next(line for line in fixture_text("skypilot_lambda_v8_vms.csv").splitlines() if "gpu_1x_h100_sxm5," in line)
    older.write_text(f"{newer.read_text().replace('17.6', '12.0')}{real}\n")  # and a row the catalog holds as it is
    stamp = (now - dt.timedelta(days=3)).timestamp()
    os.utime(older, (stamp, stamp))
    result = _import("--feed", "skypilot", "--cloud", "lambda", older)
    assert result["rejected"] == {"older_than_stored": 1}
    assert [(o["instance"], o["usd_per_gpu_hour"]) for o in result["offers"]] == [("gpu_1x_h100_sxm5", 4.29)]
    assert float(_lambda_8x_h100().usd_per_gpu_hour) == 2.2


def test_a_file_dated_in_the_future_is_dated_when_read(tmp_path: Path) -> None:
    # A file dated 2031 stored observed_at 2031-01-01: the advice called its prices fresh for five years. Refusing its
    # records then lost good prices of a file merely ahead of the clock (a reviewer: a zip's local time, 9 hours): a
    # modification time is no provider's date, so the file is dated when it is read.
    before = timezone.now()
    future = lambda_h100_catalog(
        tmp_path / "future.csv", usd_per_hour="16.0", mtime=dt.datetime(2031, 1, 1, tzinfo=dt.UTC)
    )
    assert _import("--feed", "skypilot", "--cloud", "lambda", future)["accepted"] == 1
    assert before <= _lambda_8x_h100().observed_at <= timezone.now()


def test_two_files_of_one_import_keep_the_newer_price_whatever_their_order(tmp_path: Path, bundled: str) -> None:
    # A reviewer: old.csv then new.csv in one command kept the older price (the first of a duplicate key), where
    # importing them one by one keeps the newer.
    now = timezone.now().replace(microsecond=0)
    old = lambda_h100_catalog(tmp_path / "old.csv", usd_per_hour="12.0", mtime=now - dt.timedelta(days=2))
    new = lambda_h100_catalog(tmp_path / "new.csv", usd_per_hour="17.6", mtime=now - dt.timedelta(days=1))
    result = _import("--feed", "skypilot", "--cloud", "lambda", old, new)
    assert result["rejected"] == {"duplicate_offer": 1}
    assert float(_lambda_8x_h100().usd_per_gpu_hour) == 2.2


def test_a_refused_import_names_its_reason_on_the_feed_status(tmp_path: Path) -> None:
    # A reviewer: every refused import read "no valid offer newer than the stored ones", an unknown GPU too.
    header = fixture_text("skypilot_vast_v8_vms.csv").splitlines()[0]
    bad = tmp_path / "bad.csv"
    bad.write_text(f'{header}\n1x-FOO,FOO9000,1,32,64.0,,2.65,0.00,"France, FR, EU"\n')
    with pytest.raises(CommandError, match=r"unknown_gpu x1"):
        _import("--feed", "skypilot", "--cloud", "vast", bad)
    assert FeedRun.objects.get(feed="skypilot:vast").error == "the files held no valid offers"


@pytest.mark.parametrize("cloud", ["vast", ""])
def test_a_cloud_given_to_a_feed_that_takes_none_is_refused_naming_the_option(cloud: str) -> None:
    # `--feed azure --cloud vast` imported Azure's offers and ignored --cloud without a word.
    written = FIXTURES / "written"
    with pytest.raises(CommandError, match=r"--cloud: .*azure.*only skypilot") as caught:
        _import("--feed", "azure", "--cloud", cloud, written / "azure_page1.json")
    assert caught.value.returncode == 2
    assert not Offer.objects.exists() and not FeedRun.objects.exists()


def test_a_database_error_while_storing_exits_2_with_one_line_naming_the_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # An ops probe (PostgreSQL, two feeds writing one offer at once): a UniqueViolation left import_prices with
    # exit 1 and a 12-frame traceback; the README promises exit 2 and one line naming the file.
    from django.db import IntegrityError

    import pricing.services

    def refused(**kwargs):  # type: ignore[no-untyped-def]
        raise IntegrityError(
            'duplicate key value violates unique constraint "offer_identity"\nDETAIL:  Key (provider_id, ...)'
        )

    monkeypatch.setattr(pricing.services, "ingest_offers", refused)
    catalog = lambda_h100_catalog(tmp_path / "sheet.csv", usd_per_hour="16.0", mtime=timezone.now())
    with pytest.raises(CommandError) as caught:
        call_command("import_prices", "--feed", "skypilot", "--cloud", "lambda", str(catalog), stdout=StringIO())
    assert caught.value.returncode == 2
    assert str(caught.value) == (
        f"cannot import {catalog}: database error, nothing changed: IntegrityError: duplicate key value violates "
        'unique constraint "offer_identity"'
    )
    assert not Offer.objects.filter(feed="skypilot:lambda").exists()
    assert not FeedRun.objects.filter(feed="skypilot:lambda").exists()  # rolled back with the offers


@pytest.mark.parametrize("vcpus", ["1e5000", "9" * 5000])
def test_a_vcpu_count_of_thousands_of_digits_is_one_invalid_vcpus_record_and_the_rest_imported(
    vcpus: str, tmp_path: Path
) -> None:
    # A hostile probe: to_int built a 5,001-digit int and the rejection's repr() of it raised ValueError
    # (Python's 4,300-digit limit), a traceback out of import_prices. Mutated copies of real files.
    offer_file = json.loads((FIXTURES / "aws_offer_file_us_east_1_opencost.json").read_text())
    offer_file["products"]["H7NGEAC6UEHNTKSJ"]["attributes"]["vcpu"] = vcpus
    saved = tmp_path / "aws_vcpu.json"
    saved.write_text(json.dumps(offer_file))
    out = StringIO()
    with pytest.raises(CommandError, match=r"no offer accepted \(invalid_vcpus x1, capacity_block x1\)"):
        # the file's one offer: exit 2 with the summary, not a traceback
        call_command(
            "import_prices", "--feed", "aws", saved, FIXTURES / "aws_describe_instance_types_moto.json", stdout=out
        )
    assert json.loads(out.getvalue())["rejected"] == {"invalid_vcpus": 1, "capacity_block": 1}
    catalog = fixture_text("skypilot_cudo_v8_vms.csv").splitlines()
    cells = catalog[1].split(",")
    cells[catalog[0].split(",").index("vCPUs")] = vcpus
    saved = tmp_path / "sky_vcpu.csv"
    saved.write_text("\n".join([*catalog, ",".join(cells)]) + "\n")
    sky_result = _import("--feed", "skypilot", "--cloud", "cudo", saved)
    assert sky_result["rejected"] == {"invalid_vcpus": 1} and sky_result["accepted"] == 6
    for run in FeedRun.objects.all():
        assert len(str(run.rejections)) < 1000, run.rejections  # the value is not written out whole


def test_a_catalog_with_a_repeated_column_is_refused_naming_it(tmp_path: Path) -> None:
    # A hostile probe: a second Price column silently replaced the first (csv.DictReader keeps the last), and
    # $12.00/8 was stored for a $6.32 box. Refused as the profiled-run CSV refuses one.
    saved = tmp_path / "sky_dup.csv"
    saved.write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice,Price\n"
        "gpu_8x_v100_n,V100,8.0,88.0,448.0,6.32,europe-central-1,,,12.00\n"
    )
    expected = r"sky_dup\.csv: .*column 'Price' appears more than once in the header"
    with pytest.raises(CommandError, match=expected) as caught:
        call_command("import_prices", "--feed", "skypilot", "--cloud", "lambda", str(saved), stdout=StringIO())
    assert caught.value.returncode == 2
    assert not Offer.objects.exists() and not FeedRun.objects.exists()


def test_observed_at_dates_an_old_payload_and_is_refused_malformed_or_in_the_future() -> None:
    # An SRE probe: every imported offer was stamped with the import time, so a month-old saved payload showed as
    # fresh live prices for 48 h and advice cited them as current.
    payload = FIXTURES / "written" / "lambda_instance_types.json"
    for bad, why in (("last tuesday", "is not an ISO 8601 date-time"), ("2999-01-01T00:00:00Z", "is in the future")):
        with pytest.raises(CommandError, match=f"--observed-at: '{bad}' {why}"):
            _import("--feed", "lambda", "--observed-at", bad, payload)
    assert not Offer.objects.exists()
    result = _import("--feed", "lambda", "--observed-at", "2026-11-05T14:00:00", payload)  # no zone: UTC
    assert result["accepted"] > 0
    observed = set(Offer.objects.values_list("observed_at", flat=True))
    assert observed == {dt.datetime(2026, 11, 5, 14, 0, tzinfo=dt.UTC)}


def test_observed_at_dates_a_skypilot_catalog_copied_today_and_the_source_names_the_file_only(tmp_path: Path) -> None:
    # An ops probe: `--feed skypilot --cloud cudo --observed-at 2026-11-05T14:00:00Z ops_cudo.csv` stored every offer
    # observed at the copy's modification time (today, "catalog file dated 2026-12-06"): the flag only dated records
    # without a date, and the SkyPilot reader dates each with its file's mtime, so a month-old catalog was fresh. The
    # source also showed every user the operator's path (/tmp/.../ops_cudo.csv).
    copied = tmp_path / "ops_cudo.csv"
    copied.write_text(fixture_text("skypilot_cudo_v8_vms.csv"))  # modified now, as a copy made today is
    result = _import("--feed", "skypilot", "--cloud", "cudo", "--observed-at", "2026-11-05T14:00:00Z", copied)
    assert result["accepted"] == 6
    captured = dt.datetime(2026, 11, 5, 14, 0, tzinfo=dt.UTC)
    assert set(Offer.objects.values_list("observed_at", flat=True)) == {captured}
    assert set(PriceObservation.objects.values_list("observed_at", flat=True)) == {captured}
    for source in Offer.objects.values_list("source", flat=True):
        assert str(tmp_path) not in source and "ops_cudo.csv" in source
        # The copy's date is named for what it is, beside the operator's: no longer "catalog file dated <today>".
        assert "captured 2026-11-05 14:00 UTC as the importer gave it" in source and "catalog file dated" not in source


def test_without_observed_at_a_skypilot_catalog_is_dated_by_its_file_and_says_so(tmp_path: Path) -> None:
    saved = lambda_h100_catalog(
        tmp_path / "saved.csv", usd_per_hour="16.0", mtime=dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    )
    _import("--feed", "skypilot", "--cloud", "lambda", saved)
    offer = _lambda_8x_h100()
    assert offer.observed_at == dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    assert "saved.csv" in offer.source and str(tmp_path) not in offer.source
    assert "file modified 2026-11-28" in offer.source


def test_an_imported_lambda_payloads_source_names_the_file_not_the_operators_path(tmp_path: Path) -> None:
    # The Lambda reader put the saved file's full path where the API's URL goes ("Lambda Cloud API /tmp/... ").
    saved = tmp_path / "lambda_saved.json"
    saved.write_text(fixture_text("written/lambda_instance_types.json"))
    assert _import("--feed", "lambda", saved)["accepted"] > 0
    for source in Offer.objects.values_list("source", flat=True):
        assert "lambda_saved.json" in source and str(tmp_path) not in source, source


@pytest.mark.parametrize(
    "bad",
    [
        "0001-01-01T00:00:00+01:00",  # overflowed converting to UTC: a traceback, exit 1
        "0001-01-01",  # stored and shown as live prices "observed 1-01-01"
        "2010-10-31T23:59:59Z",  # the day before HISTORY_EARLIEST
        "9999-12-31T23:59:59-14:00",
    ],
)
def test_observed_at_before_the_price_history_floor_or_overflowing_is_refused_naming_the_range(bad: str) -> None:
    # A hostile probe: year 1 was accepted and dated live prices; with a positive offset it overflowed.
    payload = FIXTURES / "written" / "lambda_instance_types.json"
    with pytest.raises(CommandError, match=r"--observed-at: '.*' is out of range; must be from 2010-11-01 to now"):
        _import("--feed", "lambda", "--observed-at", bad, payload)
    assert not Offer.objects.exists() and not FeedRun.objects.exists()


def test_observed_at_on_the_price_history_floor_is_accepted() -> None:
    result = _import(
        "--feed", "lambda", "--observed-at", "2010-11-01", FIXTURES / "written" / "lambda_instance_types.json"
    )
    assert result["accepted"] > 0
