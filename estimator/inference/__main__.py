"""``python -m estimator.inference --fit [--out FILE]``: fit the inference calibration on the bundled
TensorRT-LLM table and print it (with its leave-one-out error beside the baseline's, its latency against the
never-fitted NIM table (estimator.inference.checks), and on stderr each parameter's prior, fitted value and whether
the table moved it)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace

from estimator.inference.checks import latency_check
from estimator.inference.fit import calibrate, calibration_document, format_parameter_report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fit the inference calibration on the bundled TensorRT-LLM table.")
    parser.add_argument("--fit", action="store_true", help="fit and report leave-one-out error")
    parser.add_argument("--out", help="write the calibration JSON here")
    parser.add_argument("--name", default="trtllm-default")
    args = parser.parse_args(argv)
    if not args.fit:
        parser.print_help()
        return 2
    started = time.perf_counter()
    cal = calibrate(name=args.name)
    cal = replace(cal, latency_check=latency_check(cal.params))
    text = json.dumps(calibration_document(cal), indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    sys.stdout.write(text)
    sys.stderr.write("parameters (physical prior, fitted value, whether the table moved it):\n")
    sys.stderr.write(format_parameter_report(cal.parameters) + "\n")
    sys.stderr.write(f"fitted in {time.perf_counter() - started:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
