"""Server time of the planner's results fragment and of the PDF proposal for a typical scenario.

    .venv/bin/python bench/web.py [--repeats 30] [--pdf-repeats 5]

The 7B-pretraining preset of the planner (5 sizes, 8 to 128 H100 GPUs, every provider and market of
the bundled price snapshot, loaded into a throwaway SQLite database). Each request goes through
Django's test client: URL routing, form validation, ``advise()``, presenters, charts and template
rendering; for the PDF also WeasyPrint. Prints median and P90 wall times against issue 6's targets:
results fragment under 150 ms, PDF under 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from djangokit import setup_django  # noqa: E402

FRAGMENT_TARGET_MS = 150.0
PDF_TARGET_MS = 2000.0


def timings_ms(fn: object, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return times


def report(label: str, times: list[float], target_ms: float) -> bool:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    median = statistics.median(ordered)
    verdict = "meets" if median < target_ms else "MISSES"
    print(
        f"{label:<28} median {median:8.1f} ms   P90 {p90:8.1f} ms   (n={len(times)}, "
        f"target < {target_ms:.0f} ms: {verdict}; median/target = {median / target_ms:.2f})"
    )
    return median < target_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--pdf-repeats", type=int, default=5)
    args = parser.parse_args()

    setup_django(prefix="bench-web-", env={"ALLOWED_HOSTS": "testserver", "SECURE_SSL_REDIRECT": "0"})
    import logging

    from django.test import Client

    from advisor.calibrations import ensure_default_calibration
    from advisor.web import forms

    logging.getLogger("weasyprint").setLevel(logging.WARNING)
    logging.getLogger("fontTools").setLevel(logging.WARNING)
    ensure_default_calibration()

    data = dict(forms.preset_initial("7b-pretrain"))
    client = Client()

    def fragment() -> None:
        response = client.post("/plan/results/", data)
        assert response.status_code == 200, response.status_code

    def pdf() -> None:
        response = client.post("/plan/proposal.pdf", data)
        assert response.status_code == 200 and response.content.startswith(b"%PDF"), response.status_code

    start = time.perf_counter()
    fragment()
    pdf()
    print(f"first requests (imports, caches, fonts): {(time.perf_counter() - start) * 1000:.0f} ms")
    ok = report("results fragment (POST)", timings_ms(fragment, args.repeats), FRAGMENT_TARGET_MS)
    ok &= report("PDF proposal (POST)", timings_ms(pdf, args.pdf_repeats), PDF_TARGET_MS)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
