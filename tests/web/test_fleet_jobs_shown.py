"""The fleet's jobs table is capped on the page, the proposal page and the PDF (a hostile probe, F3: 10,000 jobs,
MAX_JOBS, took 74-75 s per PDF GET and 3 s / 2.3 MB per page GET): the FLEET_JOBS_SHOWN largest jobs by GPU-hours,
then one row that counts the rest and their GPU-hours and says where the full list is."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from advisor.advice.fleet.service import fleet_plan
from advisor.fleet.proposal import FLEET_JOBS_SHOWN, render_fleet_html
from tests.advisor.fleet.figures import BASE_AND_WEEK, fleet

pytestmark = pytest.mark.django_db

EXTRA = 7
# GPU-hours 8 x (k + 1): job k is larger than every job before it, so the largest are the last ones.
JOBS = [{"name": f"job{k:03d}", "gpus": 8, "hours": k + 1} for k in range(FLEET_JOBS_SHOWN + EXTRA)]
MANY = fleet(*JOBS)
HIDDEN_GPU_HOURS = sum(8 * (k + 1) for k in range(EXTRA))


def jobs_table(html: str) -> str:
    return html.split('data-testid="fleet-jobs"')[1].split("</table>")[0]


def assert_capped(html: str) -> None:
    table = jobs_table(html)
    named = re.findall(r"<td>(job\d{3})</td>", table)
    assert sorted(named) == [f"job{k:03d}" for k in range(EXTRA, EXTRA + FLEET_JOBS_SHOWN)]  # the largest
    summary = " ".join(table.split('data-testid="fleet-jobs-more"')[1].split("</tr>")[0].split())
    assert f"and {EXTRA} more jobs, {HIDDEN_GPU_HOURS:,} GPU-hours" in summary
    assert "JSON" in summary and "workbook" in summary


def test_the_pdf_lists_the_largest_jobs_and_counts_the_rest() -> None:
    assert_capped(render_fleet_html(plan=fleet_plan(document=MANY), fleet_name="many"))


def test_the_page_lists_the_largest_jobs_and_counts_the_rest(client) -> None:  # type: ignore[no-untyped-def]
    page = client.post("/fleet/", {"fleet": json.dumps(MANY), "action": "plan"})
    assert page.status_code == 200
    assert_capped(page.content.decode())


def issued(user: Any, document: dict[str, Any]) -> Any:
    from advisor.fleet.store import fleet_create
    from advisor.proposals import issue_fleet_proposal

    return issue_fleet_proposal(user=user, fleet_id=fleet_create(owner=user, name="many", document=document).pk)


def test_the_proposal_page_lists_the_largest_jobs_and_counts_the_rest(client, user) -> None:  # type: ignore[no-untyped-def]
    proposal = issued(user, MANY)
    client.force_login(user)
    assert_capped(client.get(f"/proposals/{proposal.pk}/").content.decode())


def test_a_small_fleet_lists_every_job_and_no_summary() -> None:
    html = render_fleet_html(plan=fleet_plan(document=BASE_AND_WEEK), fleet_name="small")
    assert re.findall(r"<tr><td>([^<]+)</td>", jobs_table(html)) == ["base", "big week"]
    assert 'data-testid="fleet-jobs-more"' not in html
