"""The SkyPilot catalog adapter through `requests`, answered by recorded catalog rows.

Fixtures (sources in fixtures/README.md): verbatim rows of SkyPilot's runpod catalog and of Cudo's
v7 and v8 catalogs (skypilot-org/skypilot-catalog). Each cloud is its own feed run.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
import responses
from django.core.management import CommandError, call_command

from pricing.feeds import FEED_NAME_MAX, UnknownFeed, UnknownFeedPart, feed_units, refreshable
from pricing.feeds.base import FeedDataError, OfferRecord, Rejection
from pricing.feeds.skypilot import (
    COMMITS_API,
    catalog_version,
    catalog_versions,
    cloud_from_settings,
    feed_name,
    gpu_memory_mib,
    known_parts,
    parse_catalog,
    parse_row,
    records_from_files,
    refused_parts,
)
from pricing.models import FeedLock, FeedRun, Offer
from pricing.services import feed_refresh, feeds_refresh, validate_all
from tests.pricing.helpers import fixture_text

pytestmark = pytest.mark.django_db
GITHUB = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
MIRROR = "https://skypilot-catalog.s3.us-east-1.amazonaws.com/catalogs"
RUNPOD = f"{GITHUB}/v8/runpod/vms.csv"
CUDO = f"{GITHUB}/v8/cudo/vms.csv"
COMMIT_DATE = "2026-11-28T14:05:09Z"


@pytest.fixture(autouse=True)
def _clouds(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_SKYPILOT_CLOUDS = ["runpod", "cudo"]


def _commit_date(path: str = "", date: str = COMMIT_DATE) -> None:
    responses.get(COMMITS_API, json=[{"sha": "0" * 40, "commit": {"committer": {"date": date}}}])


@responses.activate
def test_catalog_rows_become_on_demand_and_spot_offers_dated_by_the_file() -> None:
    responses.get(RUNPOD, body=fixture_text("written/skypilot_runpod_vms.csv"))
    _commit_date()
    run = feed_refresh(name="skypilot:runpod")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {
        "no_accelerator": 1,
        "unknown_gpu": 1,
    }
    assert "RTXPRO6000" in run.rejections["unknown_gpu"]["examples"][0]
    assert run.accepted == 12
    offer = Offer.objects.get(instance_type="8x_A100-80GB_SECURE", market="spot")
    assert (offer.provider.slug, offer.gpu, offer.gpu_count, offer.usd_per_gpu_hour) == (
        "runpod",
        "a100-pcie-80gb",  # RunPod's 'A100-80GB' is the PCIe card ('A100-80GB-SXM' is the SXM4 one)
        8,
        Decimal("1.19"),
    )
    # The catalog file's own commit date, not the time it was read.
    assert offer.observed_at == dt.datetime(2026, 11, 28, 14, 5, 9, tzinfo=dt.UTC)
    assert "catalog file dated 2026-11-28" in offer.source and "/v8/runpod/" in offer.source
    assert Offer.objects.get(instance_type="1x_H100_SECURE").gpu == "h100-pcie"
    assert Offer.objects.get(instance_type="1x_H100-SXM_SECURE", market="on_demand").gpu == "h100-sxm"
    assert Offer.objects.get(instance_type="1x_RTX4090_SECURE", market="on_demand").usd_per_hour == Decimal("0.69")


@responses.activate
def test_a_second_read_of_the_same_file_keeps_its_date() -> None:
    responses.get(RUNPOD, body=fixture_text("written/skypilot_runpod_vms.csv"))
    _commit_date()
    feed_refresh(name="skypilot:runpod")
    run = feed_refresh(name="skypilot:runpod")
    assert run.status == FeedRun.Status.SUCCESS and run.unchanged == run.accepted
    assert set(Offer.objects.values_list("observed_at", flat=True)) == {
        dt.datetime(2026, 11, 28, 14, 5, 9, tzinfo=dt.UTC)
    }


@responses.activate
def test_gpu_memory_decides_the_id_a100_80gb_and_nvl_is_not_sxm() -> None:
    records = list(parse_catalog("cudo", fixture_text("skypilot_cudo_v7_vms.csv"), url="cudo-v7"))
    gpu = {(r.instance_type, r.region): r.canonical_gpu for r in records if hasattr(r, "canonical_gpu")}
    # 'A100', 81920 MiB, a PCIe card by the instance name: not the SXM4 a100-80gb (an outsider's probe: the PCIe
    # rentals priced the break-even against a DGX A100 purchase).
    assert gpu[("epyc-genoa-a100-pcie_1x2v4gb", "no-kristiansand-1")] == "a100-pcie-80gb"
    assert gpu[("intel-ice-lake-a100-pci_1x2v4gb", "us-carlsbad-1")] == "a100-pcie-80gb"
    assert gpu[("epyc-genoa-h100-nvl-pcie_1x2v4gb", "au-melbourne-1")] == "h100-pcie"  # 'H100', 96256 MiB
    assert gpu[("epyc-genoa-h100-nvl-pcie_2x8v16gb", "au-melbourne-1")] == "h100-pcie"
    assert gpu[("sapphire-rapids-h100_1x2v4gb", "no-kristiansand-1")] == "h100-sxm"  # 'H100-SXM', 81920 MiB
    assert gpu[("intel-broadwell-v100_1x2v4gb", "us-newyork-1")] == "v100-16gb"  # 16384 MiB


@responses.activate
def test_a_bad_cell_is_one_counted_rejection_and_the_rest_is_kept() -> None:
    text = fixture_text("skypilot_cudo_v7_vms.csv")
    broken = text.replace(
        "epyc-genoa-l40s-compute_1x2v4gb,L40S,1.0,2,4,", "epyc-genoa-l40s-compute_1x2v4gb,L40S,1.0,abc,4,"
    )
    broken = broken.replace("'SizeInMiB': 16384}}]", "'SizeInMiB': 16384}}")  # an unclosed GpuInfo literal
    assert broken.count("abc") == 1
    responses.get(CUDO, body=broken)
    _commit_date()
    run = feed_refresh(name="skypilot:cudo")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    counts = {reason: entry["count"] for reason, entry in run.rejections.items()}
    assert counts == {"bad_cell_vCPUs": 1, "bad_cell_GpuInfo": 1, "unknown_gpu": 2}  # + A40, A800
    assert "vCPUs='abc'" in run.rejections["bad_cell_vCPUs"]["examples"][0]
    assert run.accepted == 11 - 4
    assert not Offer.objects.filter(instance_type="epyc-genoa-l40s-compute_1x2v4gb").exists()


@responses.activate
def test_one_cloud_failing_is_that_clouds_failed_run_and_the_others_are_kept() -> None:
    responses.get(RUNPOD, body=fixture_text("written/skypilot_runpod_vms.csv"))
    responses.get(CUDO, body=fixture_text("skypilot_cudo_v7_vms.csv"))
    _commit_date()
    assert [run.status for run in feeds_refresh(name="skypilot")] == [FeedRun.Status.SUCCESS] * 2
    cudo_offers = Offer.objects.filter(feed="skypilot:cudo", withdrawn_at__isnull=True).count()
    responses.replace(responses.GET, CUDO, status=500)
    responses.add(responses.GET, f"{MIRROR}/v8/cudo/vms.csv", status=500)
    runpod, cudo = feeds_refresh(name="skypilot")
    assert (runpod.feed, runpod.status) == ("skypilot:runpod", FeedRun.Status.SUCCESS)
    assert (cudo.feed, cudo.status) == ("skypilot:cudo", FeedRun.Status.FAILED)
    # Refreshed in-process (not by a Celery worker): nothing retries it, and the run says so.
    assert "HTTP 500" in cudo.error and not cudo.retryable and cudo.error.endswith("; not retried; refresh again")
    assert Offer.objects.filter(feed="skypilot:cudo", withdrawn_at__isnull=True).count() == cudo_offers


@responses.activate
def test_a_rate_limited_catalog_is_read_from_skypilots_mirror_with_its_last_modified() -> None:
    responses.get(CUDO, status=429)
    responses.get(
        f"{MIRROR}/v8/cudo/vms.csv",
        body=fixture_text("skypilot_cudo_v8_vms.csv"),
        headers={"Last-Modified": "Wed, 25 Nov 2026 07:00:00 GMT"},
    )
    run = feed_refresh(name="skypilot:cudo")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    offer = Offer.objects.get(instance_type="sapphire-rapids-h100_1x2v4gb")
    assert offer.observed_at == dt.datetime(2026, 11, 25, 7, 0, tzinfo=dt.UTC)
    assert MIRROR in offer.source


@responses.activate
def test_a_cloud_without_a_catalog_is_reported_and_the_others_refresh(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_SKYPILOT_CLOUDS = ["runpod", "coreweave"]
    responses.get(RUNPOD, body=fixture_text("written/skypilot_runpod_vms.csv"))
    responses.get(f"{GITHUB}/v8/coreweave/vms.csv", status=404)
    _commit_date()
    runpod, coreweave = feeds_refresh(name="skypilot")
    assert runpod.status == FeedRun.Status.SUCCESS
    assert coreweave.status == FeedRun.Status.NOT_CONFIGURED
    assert "no v8 catalog for 'coreweave'" in coreweave.error


def test_each_cloud_reads_the_newest_catalog_version_that_exists_for_it() -> None:
    assert catalog_version("runpod") == "v8"
    assert catalog_version("fluidstack") == "v6"  # the catalog repository has no v7/v8 fluidstack
    assert catalog_version("a-cloud-not-listed") == "v8"  # what SkyPilot itself reads
    assert cloud_from_settings("fluidstack").urls()[0] == f"{GITHUB}/v6/fluidstack/vms.csv"
    assert feed_units("skypilot") == ["skypilot:runpod", "skypilot:cudo"]


@responses.activate
def test_an_html_error_page_is_not_a_catalog() -> None:
    responses.get(RUNPOD, body="<html><body>rate limited</body></html>")
    run = feed_refresh(name="skypilot:runpod")
    assert run.status == FeedRun.Status.FAILED and "missing columns" in run.error


@responses.activate
def test_a_truncated_catalog_counts_the_broken_row_and_the_shrink_guard_keeps_offers() -> None:
    text = fixture_text("written/skypilot_runpod_vms.csv")
    responses.get(RUNPOD, body=text)
    _commit_date()
    assert feed_refresh(name="skypilot:runpod").status == FeedRun.Status.SUCCESS
    before = list(Offer.objects.values_list("id", "usd_per_hour", "withdrawn_at"))
    cut = text[: text.index("1x_H100-SXM_SECURE") + 30]  # the download stopped mid-row
    responses.replace(responses.GET, RUNPOD, body=cut)
    run = feed_refresh(name="skypilot:runpod")
    assert run.status == FeedRun.Status.REJECTED
    assert run.rejections["malformed_row"]["count"] == 1
    assert list(Offer.objects.values_list("id", "usd_per_hour", "withdrawn_at")) == before


@responses.activate
def test_offers_the_single_skypilot_feed_wrote_before_the_split_are_withdrawn_for_that_cloud() -> None:
    responses.get(RUNPOD, body=fixture_text("written/skypilot_runpod_vms.csv"))
    _commit_date()
    feed_refresh(name="skypilot:runpod")
    gone = Offer.objects.filter(provider__slug="runpod").first()
    Offer.objects.filter(id=gone.id).update(feed="skypilot", instance_type="9x_GONE_SECURE")
    other = Offer.objects.filter(provider__slug="runpod").exclude(id=gone.id).first()
    run = feed_refresh(name="skypilot:runpod")
    assert run.status == FeedRun.Status.SUCCESS
    assert Offer.objects.get(id=gone.id).withdrawn_at is not None  # the old group feed's leftover
    assert Offer.objects.get(id=other.id).withdrawn_at is None


def test_every_cloud_of_the_default_configuration_has_a_catalog_version_on_record() -> None:
    from config import settings as defaults  # the shipped defaults, not the test overrides

    listed = catalog_versions()
    missing = [cloud for cloud in defaults.PRICING_SKYPILOT_CLOUDS if cloud not in listed]
    assert missing == [], f"default clouds with no known catalog: {missing}"
    assert feed_units("aws") == ["aws"] and feed_units("skypilot:cudo") == ["skypilot:cudo"]
    with pytest.raises(UnknownFeed):
        feed_units("aws:us-east-1")


@pytest.mark.parametrize("cloud", sorted(set(catalog_versions()) - set(refused_parts())))
def test_every_known_clouds_feed_name_fits_the_feed_columns(cloud: str) -> None:
    name = feed_name(cloud)
    assert refreshable(name) == name
    # SQLite does not enforce a varchar's length, so the columns are checked against the names here.
    for model in (Offer, FeedRun, FeedLock):
        assert model._meta.get_field("feed").max_length == FEED_NAME_MAX >= len(name), (model, name)


def test_a_cloud_the_catalog_does_not_hold_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(UnknownFeedPart, match=r"skypilot:cudo.*skypilot:vast"):
        refreshable("skypilot:nosuchcloud")
    with pytest.raises(UnknownFeedPart, match="'aws' has no parts"):
        refreshable("aws:us-east-1")
    with pytest.raises(UnknownFeed):
        refreshable("nope:cudo")


# Mutated copies of the real Cudo v8 row sapphire-rapids-h100_1x2v4gb: each changes one cell to a value
# the Offer columns cannot hold (DECIMAL(6,3) counts, DECIMAL(9,1) memory, a 32-bit unsigned vCPU count,
# 120/60-character names, no NUL). (InstanceType, AcceleratorCount, vCPUs, MemoryGiB, Price, Region) -> reason.
CUDO_H100 = "sapphire-rapids-h100_1x2v4gb,H100-SXM,1.0,2,4,2.5354,ca-montreal-3,"
UNSTORABLE_ROWS = [
    (("count-1000", "1000", "2", "4", "2000", "ca-montreal-3"), "invalid_gpu_count"),
    (("count-1e30", "1e30", "2", "4", "1e31", "ca-montreal-3"), "invalid_gpu_count"),
    (("count-tiny", "0.0001", "2", "4", "0.001", "ca-montreal-3"), "no_gpu_count"),  # 0.000 when stored
    (("vcpus-negative", "1.0", "-5", "4", "2.5354", "ca-montreal-3"), "invalid_vcpus"),
    (("vcpus-1e20", "1.0", "1e20", "4", "2.5354", "ca-montreal-3"), "invalid_vcpus"),
    (("memory-1e20", "1.0", "2", "1e20", "2.5354", "ca-montreal-3"), "invalid_memory_gib"),
    (("x" * 121, "1.0", "2", "4", "2.5354", "ca-montreal-3"), "invalid_instance_type"),
    (("nul\x00instance", "1.0", "2", "4", "2.5354", "ca-montreal-3"), "invalid_instance_type"),
    (("region-61", "1.0", "2", "4", "2.5354", "r" * 61), "invalid_region"),
]


@responses.activate
def test_values_the_offer_columns_cannot_hold_are_counted_rejections_and_the_rest_is_stored() -> None:
    text = fixture_text("skypilot_cudo_v8_vms.csv")
    line = next(row for row in text.splitlines() if row.startswith(CUDO_H100))
    gpu_info = line[len(CUDO_H100) :]
    # cells: InstanceType, AcceleratorCount, vCPUs, MemoryGiB, Price, Region; the rest of the row as recorded.
    mutated = [",".join((cells[0], "H100-SXM", *cells[1:])) + "," + gpu_info for cells, _ in UNSTORABLE_ROWS]
    responses.get(CUDO, body=text.rstrip("\n") + "\n" + "\n".join(mutated) + "\n")
    _commit_date()
    run = feed_refresh(name="skypilot:cudo")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    counts = {reason: entry["count"] for reason, entry in run.rejections.items()}
    assert counts == Counter(reason for _, reason in UNSTORABLE_ROWS)
    assert run.accepted == 6  # the six real rows
    assert "\x00" not in str(run.rejections)  # PostgreSQL's jsonb refuses a NUL
    # Every stored value reads back: on SQLite a count of 1000 in DECIMAL(6,3) was stored and then failed
    # every later read (the decimal converter), so advice, /api/v1/offers and /prices/ answered 500.
    stored = dict(Offer.objects.filter(feed="skypilot:cudo").values_list("instance_type", "gpu_count"))
    real = {row.split(",")[0]: Decimal(row.split(",")[2]) for row in text.splitlines()[1:] if row}
    assert stored == real


def test_an_nvlink_instance_is_not_a_pcie_card() -> None:
    # A regression probe: the PCIe rule matched 'nvl' inside 'NVLINK', so fluidstack's A100_NVLINK_80GB and
    # H100_NVLINK_80GB (SXM parts) became a100-pcie-80gb / h100-pcie. Rows in the catalog's format (written here).
    gpu_info = (
        "{'Gpus': [{'Name': 'X', 'Count': '8.0', 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}"
    )
    base = {
        "AcceleratorCount": "8.0",
        "vCPUs": "96",
        "MemoryGiB": "1024",
        "Price": "20.0",
        "Region": "X",
        "GpuInfo": gpu_info,
        "SpotPrice": "",
    }
    a100 = parse_row("fluidstack", {**base, "InstanceType": "A100_NVLINK_80GB::8", "AcceleratorName": "A100-80GB"})
    h100 = parse_row("fluidstack", {**base, "InstanceType": "H100_NVLINK_80GB::8", "AcceleratorName": "H100"})
    pcie = parse_row("fluidstack", {**base, "InstanceType": "A100_PCIE_80GB::8", "AcceleratorName": "A100-80GB"})
    assert (a100.gpu, h100.gpu, pcie.gpu) == ("a100-80gb", "h100-sxm", "a100-pcie-80gb")


VAST_EXPECTED = {
    "1x-H200-32-65536": "h200",
    "2x-H200-32-65536": "h200",
    "1x-H100_NVL-32-65536": "h100-pcie",  # 95830 MiB, an NVL card
    "1x-H100_SXM-32-65536": "h100-sxm",
    "2x-H100_SXM-32-65536": "h100-sxm",
    "4x-H100_SXM-32-65536": "h100-sxm",
    "8x-H100_SXM-32-65536": "h100-sxm",
    "1x-A100_SXM4-32-65536": "a100-40gb",
    "2x-A100_SXM4-32-65536": "a100-40gb",
    "4x-A100_SXM4-32-65536": "a100-40gb",
    "1x-A100_PCIE-32-65536": "a100-pcie-80gb",
    "8x-Tesla_V100-32-65536": "v100-16gb",
    "2x-RTX_4090-32-65536": "rtx4090",
}


def test_real_vast_v8_rows_give_the_memory_of_the_whole_box_and_it_is_divided_by_the_gpus() -> None:
    # Vast's v8 catalog writes the box's memory under SizeInMiB (= TotalGpuMemoryInMiB): 2x-A100_SXM4 81920 where
    # 1x-A100_SXM4 is 40960. Read per GPU, the 40 GB boxes were a100-80gb ($0.745/GPU-h), the 2x/4x/8x H100 SXM
    # boxes h100-pcie and the 8x V100 16 GB box v100-32gb ($0.106/GPU-h).
    records = list(parse_catalog("vast", fixture_text("skypilot_vast_v8_vms.csv"), url="vast-v8"))
    offers = [r for r in records if isinstance(r, OfferRecord)]
    assert len(offers) == len(records)
    assert {r.instance_type: r.canonical_gpu for r in offers} == VAST_EXPECTED


def test_a_catalog_that_gives_memory_per_gpu_in_both_fields_is_not_divided() -> None:
    # Lambda's v8 rows write the memory of one GPU under both SizeInMiB and TotalGpuMemoryInMiB
    # (gpu_8x_a100_80gb_sxm4: 81920 and 81920), so the equality alone does not mean "whole box"; and cudo's
    # rows give the total as SizeInMiB x Count.
    lambda_rows = parse_catalog("lambda", fixture_text("skypilot_lambda_v8_vms.csv"), url="lambda-v8")
    assert {r.instance_type: r.canonical_gpu for r in lambda_rows if isinstance(r, OfferRecord)}[
        "gpu_8x_a100_80gb_sxm4"
    ] == "a100-80gb"
    cudo = {
        r.instance_type: r.canonical_gpu
        for r in parse_catalog("cudo", fixture_text("skypilot_cudo_v8_vms.csv"), url="x")
        if isinstance(r, OfferRecord)
    }
    assert cudo["intel-ice-lake-a100-pci_8x64v128gb"] == "a100-pcie-80gb"
    assert cudo["intel-broadwell-v100_2x8v16gb"] == "v100-16gb"


@pytest.mark.parametrize(
    ("raw", "cloud", "mib"),
    [
        ("{'Gpus': [{'Count': 4, 'MemoryInfo': {'SizeInMiB': 163840}}], 'TotalGpuMemoryInMiB': 163840}", "vast", 40960),
        # Should vast write memory per GPU one day, the total says so and nothing is divided twice.
        ("{'Gpus': [{'Count': 4, 'MemoryInfo': {'SizeInMiB': 40960}}], 'TotalGpuMemoryInMiB': 163840}", "vast", 40960),
        ("{'Gpus': [{'Count': 8, 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 81920}", "lambda", 81920),
        # primeintellect's total counts the box twice (SizeInMiB x Count), so the box's memory is divided anyway.
        (
            "{'Gpus': [{'Count': 8, 'MemoryInfo': {'SizeInMiB': 655360}}], 'TotalGpuMemoryInMiB': 5242880}",
            "primeintellect",
            81920,
        ),
    ],
)
def test_memory_per_gpu_of_whole_box_and_per_gpu_catalogs(raw: str, cloud: str, mib: int) -> None:
    assert gpu_memory_mib(raw, cloud=cloud) == mib


REAL_CATALOGS = [
    ("cudo", "skypilot_cudo_v7_vms.csv"),
    ("cudo", "skypilot_cudo_v8_vms.csv"),
    ("lambda", "skypilot_lambda_v8_vms.csv"),
    ("runpod", "skypilot_runpod_v8_vms.csv"),
    ("vast", "skypilot_vast_v8_vms.csv"),
]


def _offers(cloud: str, text: str) -> tuple[list[OfferRecord], list[Rejection]]:
    records = list(parse_catalog(cloud, text, url="recorded"))
    return [r for r in records if isinstance(r, OfferRecord)], [r for r in records if isinstance(r, Rejection)]


@pytest.mark.parametrize(("cloud", "name"), REAL_CATALOGS)
def test_no_cut_of_a_real_catalog_stores_an_offer_the_whole_file_does_not_hold(cloud: str, name: str) -> None:
    # An outsider's sweep (the feed operator): the real catalog cut at every length, as a download that stopped
    # early. The cut kept its last row's partial cell (runpod cut at 163 bytes: Price 1.0 where the file says 1.39;
    # cudo at 995: GPU id a100-pcie-40gb for a100-pcie-80gb; lambda: region "europe-central") and read the cells after
    # it as empty: 96/195/6/88 cut lengths gave an accepted offer the whole file does not have.
    text = fixture_text(name)
    assert text.endswith("\n")  # every recorded catalog ends its last row with a line break
    whole, _ = _offers(cloud, text)
    by_key = {offer.key: offer for offer in whole}
    assert len(by_key) == len(whole)
    wrong = []
    for length in range(len(text)):
        cut = text[:length]  # a truncated copy, made here
        try:
            offers, _ = _offers(cloud, cut)
        except FeedDataError:
            continue  # cut inside the header: not a catalog, the run fails and the stored offers stay
        wrong += [(length, offer) for offer in offers if by_key.get(offer.key) != offer]
    assert wrong == []


def _without_row(offers: list[OfferRecord], header: str, line: str) -> set[tuple[str, str, str, str]]:
    row = dict(zip(next(csv.reader([header])), next(csv.reader([line])), strict=False))
    return {o.key for o in offers if (o.instance_type, o.region) != (row["InstanceType"], row["Region"])}


def test_a_last_row_without_its_line_break_or_with_a_cell_too_few_is_a_counted_malformed_row() -> None:
    text = fixture_text("skypilot_runpod_v8_vms.csv")  # real rows; the copies below are cut or edited here
    whole, _ = _offers("runpod", text)
    header, first, *rest = text.splitlines(keepends=True)
    # The file ends inside its last row's quoted GpuInfo: refused, as a cut cell cannot be told from a whole one.
    offers, rejected = _offers("runpod", text[:-3])
    assert [r.reason for r in rejected] == ["malformed_row"] and "line break" in rejected[0].detail
    assert {o.key for o in offers} == _without_row(whole, header, rest[-1])
    # Without its final line break but ending with the quote that closes GpuInfo the last row is whole: kept (a
    # reviewer: a hand-saved catalog lost its last offer as "cut").
    offers, rejected = _offers("runpod", text[:-1])
    assert rejected == [] and {o.key for o in offers} == {o.key for o in whole}
    # An unquoted last cell without the line break may be a prefix (a price 1.39 cut to 1.3): refused.
    lambda_text = fixture_text("skypilot_lambda_v8_vms.csv")
    assert not lambda_text.rstrip("\n").endswith('"')
    _, rejected = _offers("lambda", lambda_text[:-1])
    assert [r.detail for r in rejected if r.reason == "malformed_row"] == [
        "skypilot lambda line 8: the file ends inside it, no line break"
    ]
    # A whole row with a cell too few (its optional GpuInfo dropped, every required cell there): the reader gave it
    # None for GpuInfo, and it was stored without the memory that decides the GPU id.
    cells = next(csv.reader([rest[-1]]))
    assert cells[-1].startswith("{'Gpus'")
    short = io.StringIO()
    csv.writer(short, lineterminator="\n").writerow(cells[:-1])
    offers, rejected = _offers("runpod", header + first + "".join(rest[:-1]) + short.getvalue())
    assert [r.reason for r in rejected] == ["malformed_row"] and "line 5: wrong number of cells" in rejected[0].detail
    assert {o.key for o in offers} == _without_row(whole, header, rest[-1])


@responses.activate
def test_a_spot_price_of_zero_in_the_real_vast_catalog_is_no_spot_offer_not_a_rejection() -> None:
    # SkyPilot's vast v8 catalog writes SpotPrice 0.00 on every row: there is no spot price, not a free machine. The
    # 13 rows were counted as 13 accepted offers and 13 non_positive_price rejections (the spot twins).
    text = fixture_text("skypilot_vast_v8_vms.csv")
    assert text.count(",0.00,") == 13
    responses.get(
        cloud_from_settings("vast").urls()[0], body=text, headers={"Last-Modified": "Tue, 01 Dec 2026 10:00:00 GMT"}
    )
    run = feed_refresh(name="skypilot:vast")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert (run.accepted, run.rejections) == (13, {})
    assert set(Offer.objects.filter(feed="skypilot:vast").values_list("market", flat=True)) == {"on_demand"}


def test_a_saved_catalog_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts the file with a BOM: it was read into the first column's name, and the file was
    # refused as "missing columns ['InstanceType']" though the column is there.
    text = fixture_text("skypilot_cudo_v8_vms.csv")
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(text, encoding="utf-8")
    marked.write_text(text, encoding="utf-8-sig")  # the real catalog, saved here with a BOM
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    offers = [
        {(r.key, r.usd_per_hour, r.gpu) for r in records_from_files([path], cloud="cudo") if isinstance(r, OfferRecord)}
        for path in (plain, marked)
    ]
    assert offers[0] == offers[1] and len(offers[0]) == 6


# SkyPilot's real GCP v8 catalog (fixtures/skypilot_gcp_v8_vms.csv): host VMs without their accelerator
# (a2-highgpu-1g at 0.73948 where the whole VM is 3.673385, OpenCost's real SKU page) and accelerator rows without an
# InstanceType. Read as a catalog, they merged into one record keyed ('', region, market), rejected missing_identity,
# and the other accelerator rows disappeared uncounted.
def test_the_gcp_catalog_is_refused_as_a_skypilot_part_naming_the_gcp_feed(tmp_path: Path) -> None:
    with pytest.raises(UnknownFeedPart, match=r"skypilot:gcp.*use the 'gcp' feed"):
        refreshable("skypilot:gcp")
    assert "gcp" not in known_parts()
    text = fixture_text("skypilot_gcp_v8_vms.csv")
    with pytest.raises(FeedDataError, match="prices accelerators apart from their host VMs"):
        list(parse_catalog("gcp", text, url="recorded"))
    saved = tmp_path / "vms.csv"
    saved.write_text(text)
    out = io.StringIO()
    with pytest.raises(CommandError, match="use the 'gcp' feed"):
        call_command("import_prices", "--feed", "skypilot", "--cloud", "gcp", str(saved), stdout=out)


def test_each_catalog_row_without_an_instance_type_is_counted_on_its_own() -> None:
    # The real GCP rows read as another cloud's catalog would be: three accelerator rows, each counted, none merged.
    items = list(parse_catalog("nebius", fixture_text("skypilot_gcp_v8_vms.csv"), url="recorded"))
    assert not [item for item in items if isinstance(item, OfferRecord)]
    details = [(item.reason, item.detail) for item in items if isinstance(item, Rejection)]
    assert Counter(reason for reason, _ in details) == {"no_instance_type": 3, "no_accelerator": 2}
    assert "line 4: no InstanceType (accelerator tpu-v5p-8 x 1 priced apart from a host VM)" in details[2][1]


def _offers_by_instance(cloud: str, name: str) -> dict[str, OfferRecord]:
    records = parse_catalog(cloud, fixture_text(name), url=name)
    return {r.instance_type: r for r in records if isinstance(r, OfferRecord) and r.market == "on_demand"}


def _gpu_and_price_per_gpu(record: OfferRecord) -> tuple[str | None, Decimal]:
    return record.canonical_gpu, record.usd_per_hour / record.gpu_count


# skypilot_primeintellect_v8_vms.csv: real rows of skypilot-org/skypilot-catalog@d9a304ea catalogs/v8/primeintellect
# (fixtures/README.md). Its GpuInfo writes the whole box's memory under SizeInMiB (8x H100: 655360 = 8 x 81920) and
# TotalGpuMemoryInMiB counts the box again (5242880), so the total cannot tell the layout.
PRIMEINTELLECT_EXPECTED = {
    "hyperstack__2xA100_80GB__60__240": ("a100-80gb", Decimal("1.35")),
    "lambdalabs__8xH100_80GB__208__1800": ("h100-sxm", Decimal("2.99")),  # gpu_8x_h100_sxm5
    "lambdalabs__1xH100_80GB__26__225": ("h100-sxm", Decimal("3.29")),
    "hyperstack__8xH100_80GB__192__960": ("h100-sxm", Decimal("2.40")),  # n3-H100-SXM5x8
    "nebius__1xH100_80GB__16__200": ("h100-sxm", Decimal("2.118")),
    "nebius__8xH100_80GB__128__1600": ("h100-sxm", Decimal("2.118")),  # gpu-h100-sxm_8gpu-...
    "lambdalabs__8xV100_16GB__92__448": ("v100-16gb", Decimal("0.55")),
    "datacrunch__1xV100_16GB__6__23": ("v100-16gb", Decimal("0.14")),
    "datacrunch__2xV100_16GB__10__45": ("v100-16gb", Decimal("0.14")),  # 32768 MiB for two 16 GB cards
    "lambdalabs__1xA100_40GB__30__200": ("a100-40gb", Decimal("1.29")),
    "lambdalabs__8xA100_40GB__124__1800": ("a100-40gb", Decimal("1.29")),
    "datacrunch__8xA100_40GB__176__960": ("a100-40gb", Decimal("0.72125")),
}


def test_real_primeintellect_rows_give_the_whole_box_memory_and_each_gpu_is_identified_per_gpu() -> None:
    # Before: read as memory per GPU, the 8x H100 SXM5 boxes became h100-pcie (655360 MiB read as an H100 NVL), the
    # 8x A100 40 GB boxes a100-80gb ($0.72125/GPU-h, the cheapest a100-80gb offer in advice) and the V100 16 GB
    # boxes v100-32gb.
    offers = _offers_by_instance("primeintellect", "skypilot_primeintellect_v8_vms.csv")
    assert {name: _gpu_and_price_per_gpu(r) for name, r in offers.items()} == PRIMEINTELLECT_EXPECTED
    spot = [
        r
        for r in parse_catalog("primeintellect", fixture_text("skypilot_primeintellect_v8_vms.csv"), url="x")
        if isinstance(r, OfferRecord) and r.market == "spot"
    ]
    assert [(r.instance_type, r.canonical_gpu) for r in spot] == [
        ("datacrunch__8xH100_80GB__176__1480__SPOT", "h100-sxm")
    ]


@pytest.mark.parametrize(
    ("cloud", "size", "count"),
    [
        ("primeintellect", 655360, 1),  # one H100 cannot hold 640 GiB, box or not
        ("primeintellect", 40960, 8),  # 5 GiB per GPU divided, 40 GiB as written: no H100 either way
        ("lambda", 1310720, 8),  # 1280 GiB as written, 160 GiB divided: neither is an H100's
    ],
)
def test_a_memory_no_part_of_that_name_has_either_way_is_a_rejection_naming_gpuinfo(
    cloud: str, size: int, count: int
) -> None:
    # Rows in the catalog's format (written here; the real rows above are the main test): a memory that is no
    # H100's, read as written or divided by the count, must not pick an id (655360 MiB was read as an H100 NVL).
    [rejection] = list(parse_catalog(cloud, _h100_row(size=size, count=count), url="x"))
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "implausible_gpu_memory"
    assert "GpuInfo" in rejection.detail and "H100" in rejection.detail


def test_a_per_gpu_catalog_row_holding_the_box_memory_is_read_per_gpu_when_only_that_fits() -> None:
    # Written row: 655360 MiB on an 8-GPU row of a per-GPU cloud is no H100's; 655360 / 8 = 81920 is.
    [offer] = list(parse_catalog("lambda", _h100_row(size=655360, count=8), url="x"))
    assert isinstance(offer, OfferRecord) and offer.canonical_gpu == "h100-sxm"


def _h100_row(*, size: int, count: int) -> str:
    gpu_info = f"{{'Gpus': [{{'Name': 'H100', 'Count': {count}, 'MemoryInfo': {{'SizeInMiB': {size}}}}}]}}"
    return f'InstanceType,AcceleratorName,AcceleratorCount,Price,Region,GpuInfo\nbox,H100,{count},10.0,X,"{gpu_info}"\n'


def test_real_shadeform_rows_take_the_form_factor_from_the_upstream_clouds_naming_or_are_rejected() -> None:
    # skypilot_shadeform_v8_vms.csv: real rows of skypilot-org/skypilot-catalog@002363da catalogs/v8/shadeform
    # (fixtures/README.md). Shadeform resells other clouds (InstanceType '<cloud>_<type>') and its 'H100' does not say
    # PCIe or SXM. Before: scaleway_H100 and scaleway_H100x2 (Scaleway's H100-1-80G / H100-2-80G, its H100 PCIe
    # instances; its SXM ones are H100-SXM-*) were h100-sxm at $3.30/GPU-h, and massedcompute_H100 / paperspace_H100
    # h100-sxm by default.
    records = list(parse_catalog("shadeform", fixture_text("skypilot_shadeform_v8_vms.csv"), url="shadeform-v8"))
    offers = {r.instance_type: _gpu_and_price_per_gpu(r) for r in records if isinstance(r, OfferRecord)}
    assert offers == {
        "crusoe_A100-80G-sxm4x8": ("a100-80gb", Decimal("2.3")),
        "scaleway_L4": ("l4", Decimal("0.95")),
        "denvr_A100-sxm4x8": ("a100-40gb", Decimal("1.4")),
        "scaleway_H100x2": ("h100-pcie", Decimal("3.3")),
        "lambdalabs_H100-sxm5x8": ("h100-sxm", Decimal("3.99")),
        "excesssupply_H200x8": ("h200", Decimal("4")),
        "paperspace_V100-32GB": ("v100-32gb", Decimal("2.34")),
        "paperspace_V100": ("v100-16gb", Decimal("2.34")),
        "denvr_Gaudi2x8": (None, Decimal("1.1")),  # counted unknown_gpu when stored
        "scaleway_H100": ("h100-pcie", Decimal("3.3")),
    }
    rejected = sorted((r.reason, r.detail.split(": ")[1]) for r in records if isinstance(r, Rejection))
    assert rejected == [
        ("ambiguous_gpu_form_factor", "InstanceType='massedcompute_H100'"),
        ("ambiguous_gpu_form_factor", "InstanceType='paperspace_H100'"),
    ]


def _gpus_and_rejections(cloud: str, name: str) -> tuple[dict[str, tuple[str | None, Decimal]], list[str]]:
    records = list(parse_catalog(cloud, fixture_text(name), url=name))
    offers = {r.instance_type: _gpu_and_price_per_gpu(r) for r in records if isinstance(r, OfferRecord)}
    return offers, sorted(r.reason for r in records if isinstance(r, Rejection))


def test_real_paperspace_and_do_v6_rows_are_priced_by_name_from_their_own_gpuinfo_shapes() -> None:
    # skypilot_paperspace_v6_vms.csv (skypilot-catalog@e5200541) and skypilot_do_v6_vms.csv (@1fbe7331): real rows,
    # v6 being the newest catalog of each (fixtures/README.md). Paperspace's GpuInfo is the bare GPU name ('H100'),
    # DigitalOcean's has lower-case keys ('gpus', 'memoryinfo', 'sizeinmib'). Before: every GPU row was
    # bad_cell_GpuInfo (paperspace 5, do 2), so both listed feeds could never store an offer.
    paperspace, paperspace_rejected = _gpus_and_rejections("paperspace", "skypilot_paperspace_v6_vms.csv")
    assert paperspace == {
        "H100": ("h100-sxm", Decimal("5.95")),
        "H100x8": ("h100-sxm", Decimal("5.95")),
        "A100-80Gx8": ("a100-80gb", Decimal("3.18")),
        "V100-32G": ("v100-32gb", Decimal("2.30")),
        "V100": ("v100-16gb", Decimal("2.29")),
    }
    assert paperspace_rejected == ["no_accelerator"]
    do, do_rejected = _gpus_and_rejections("do", "skypilot_do_v6_vms.csv")
    assert do == {"gpu-h100x1-80gb": ("h100-sxm", Decimal("6.74")), "gpu-h100x8-640gb": ("h100-sxm", Decimal("5.95"))}
    assert do_rejected == ["no_accelerator"]


def test_a_gpuinfo_naming_another_gpu_than_the_row_is_still_a_bad_cell() -> None:
    # Derived from the real paperspace row above, GpuInfo changed here: only the row's own name means "no memory".
    text = fixture_text("skypilot_paperspace_v6_vms.csv").replace("640.0,H100,", "640.0,A100,")
    rejected = sorted(r.reason for r in parse_catalog("paperspace", text, url="x") if isinstance(r, Rejection))
    assert rejected == ["bad_cell_GpuInfo", "no_accelerator"]


def _gpu_info_row(instance: str, *, accelerator: str, count: str, size: str, total: str | None = None) -> str:
    """A written catalog row (not a recorded one): GpuInfo as SkyPilot writes it, with the figures given verbatim."""
    total_key = "" if total is None else f", 'TotalGpuMemoryInMiB': {total}"
    gpu = f"{{'Name': '{accelerator}', 'Count': {count}, 'MemoryInfo': {{'SizeInMiB': {size}}}}}"
    gpu_info = f"{{'Gpus': [{gpu}]{total_key}}}"
    return f'{instance},{accelerator},8,40.0,X,"{gpu_info}"\n'


GOOD_H200_ROW = _gpu_info_row("good-h200", accelerator="H200", count="8", size="143360")
HUGE_INTEGER = "9" * 400


@pytest.mark.parametrize(
    ("accelerator", "count", "size", "total"),
    [
        ("H100", "1", HUGE_INTEGER, None),  # float() of it raised OverflowError: "nothing was stored" (a probe's F6)
        ("H200", "8", HUGE_INTEGER, None),
        ("H200", HUGE_INTEGER, "143360", None),
        ("H200", "8", "143360", HUGE_INTEGER),
        ("H200", "8", "1e999", None),  # a float literal read as inf
        ("H200", "8", "1e300", None),  # finite, but no count a feed gives has that many digits
        ("H200", "8", "'nan'", None),
        ("H200", "8", "'inf'", None),
        ("H200", "-8", "-1146880", None),  # stored as h200 before (the probe's F7 r25)
        ("H200", "8", "-143360", None),
        ("H200", "8", "0", None),
        ("H200", "0", "143360", None),  # a Count of 0 was read as 1
        ("H200", "True", "143360", None),  # a bool is no count
        ("H200", "8", "None", None),
        ("H200", "8", "143360", "-1"),
        ("H200", "8", "143360", "0"),
    ],
)
def test_a_gpuinfo_figure_that_is_no_positive_number_of_bounded_size_is_one_bad_cell_and_the_rest_is_stored(
    accelerator: str, count: str, size: str, total: str | None
) -> None:
    # Written rows (after the probe's sky/bigint_only.csv and sky/*_nb.csv): H200's memory does not pick its id, so
    # only the one rule on GpuInfo's figures (positive, finite, at most MAX_INTEGER_DIGITS digits) can refuse them.
    bad = _gpu_info_row("bad", accelerator=accelerator, count=count, size=size, total=total)
    text = "InstanceType,AcceleratorName,AcceleratorCount,Price,Region,GpuInfo\n" + bad + GOOD_H200_ROW
    records = list(parse_catalog("lambda", text, url="x"))
    [rejection] = [r for r in records if isinstance(r, Rejection)]
    assert rejection.reason == "bad_cell_GpuInfo"
    assert rejection.detail.startswith("skypilot lambda line 2: GpuInfo=")
    assert "positive number" in rejection.detail
    assert [r.instance_type for r in records if isinstance(r, OfferRecord)] == ["good-h200"]


def test_a_400_digit_gpu_memory_in_a_saved_file_is_one_rejection_and_the_other_row_is_stored(tmp_path: Path) -> None:
    # The probe's F6 through the command: before, CommandError "could not be read as skypilot payloads (unexpected
    # OverflowError ...); nothing was stored".
    path = tmp_path / "vms.csv"
    bad = _gpu_info_row("bad", accelerator="H100", count="1", size=HUGE_INTEGER)
    path.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,Region,GpuInfo\n" + bad + GOOD_H200_ROW)
    call_command("import_prices", "--feed", "skypilot", "--cloud", "lambda", str(path), stdout=io.StringIO())
    assert list(Offer.objects.filter(feed="skypilot:lambda").values_list("instance_type", flat=True)) == ["good-h200"]
    run = FeedRun.objects.filter(feed="skypilot:lambda").latest("started_at")
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {"bad_cell_GpuInfo": 1}


NUMERIC_CELLS_UNSTORABLE = [
    (column, value)
    for column in ("AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice")
    for value in (HUGE_INTEGER, "1e400", "nan", "inf", "-8")
]


@pytest.mark.parametrize(("column", "value"), NUMERIC_CELLS_UNSTORABLE)
def test_every_numeric_csv_cell_no_column_can_hold_is_one_counted_rejection(column: str, value: str) -> None:
    # A guard, passing before: the CSV cells are read by to_decimal (finite) and their range is validate_offer's
    # (the one definition of what a stored column holds), so none of these stores or aborts; GpuInfo's figures, read
    # here only, are checked by the adapter's own rule (the test above).
    header = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "SpotPrice"]
    cells = dict(zip(header, ["box", "H200", "8", "64", "512", "40.0", "20.0"], strict=True))
    cells[column] = value
    text = ",".join([*header, "Region"]) + "\n" + ",".join([*cells.values(), "X"]) + "\n"
    checked = validate_all(parse_catalog("lambda", text, url="x"))
    unpriced = {"Price": {"on_demand"}, "SpotPrice": {"spot"}}.get(column, {"on_demand", "spot"})
    assert not {offer.record.market for offer in checked.accepted} & unpriced
    assert checked.rejections


@pytest.mark.parametrize(
    "gpu_info",
    [
        # The probe's r11 (F7): SkyPilot reads 'Gpus' (81920 MiB, an H100 SXM); the later 'gpus' (96256 MiB) won
        # after the keys were lowered, and the row was stored as h100-pcie.
        "{'Gpus': [{'Count': 1, 'MemoryInfo': {'SizeInMiB': 81920}}], 'gpus': [{'Count': 1, 'MemoryInfo': "
        "{'SizeInMiB': 96256}}]}",
        "{'Gpus': [{'Count': 1, 'MemoryInfo': {'SizeInMiB': 81920, 'sizeinmib': 96256}}]}",
        "{'Gpus': [{'Count': 1, 'count': 8, 'MemoryInfo': {'SizeInMiB': 81920}}]}",
    ],
)
def test_gpuinfo_keys_that_differ_only_in_case_are_an_ambiguous_bad_cell(gpu_info: str) -> None:
    # Written rows: DigitalOcean's lower-case keys are read like SkyPilot's, so two keys one lower-casing apart
    # give two values for one figure, and picking either would be a guess.
    text = f'InstanceType,AcceleratorName,AcceleratorCount,Price,Region,GpuInfo\nbox,H100,1,2.5,X,"{gpu_info}"\n'
    [rejection] = list(parse_catalog("lambda", text, url="x"))
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "bad_cell_GpuInfo"
    assert "differ only in case" in rejection.detail


@pytest.mark.parametrize(("instance", "count"), [("scaleway_H100x8", "8.0"), ("scaleway_H100x4", "4.0")])
def test_a_scaleway_plain_h100_with_more_gpus_than_its_pcie_instances_have_is_ambiguous(
    instance: str, count: str
) -> None:
    # Written rows, derived from the real scaleway_H100x2 row of skypilot_shadeform_v8_vms.csv with the count changed
    # (no real shadeform row for a Scaleway x4/x8 is recorded: the probe's F7 is speculative). Scaleway's PCIe H100s
    # come as 1 and 2 GPUs only (H100-1-80G, H100-2-80G), its 4- and 8-GPU ones are H100-SXM-4/8-80G. Before: both
    # rows stored as h100-pcie.
    real = next(line for line in fixture_text("skypilot_shadeform_v8_vms.csv").splitlines() if "_H100x2," in line)
    header = fixture_text("skypilot_shadeform_v8_vms.csv").splitlines()[0]
    row = real.replace("scaleway_H100x2,H100,2.0,", f"{instance},H100,{count},").replace(
        "'Count': 2.0", f"'Count': {count}"
    )
    [rejection] = list(parse_catalog("shadeform", f"{header}\n{row}\n", url="x"))
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "ambiguous_gpu_form_factor"
    assert instance in rejection.detail and "scaleway" in rejection.detail
