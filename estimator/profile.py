"""`python -m estimator.profile`: measure this machine's GPUs and write profiled-run CSV rows.

Measures dense matmul TFLOPS per precision on every visible device, all-reduce bus bandwidth
across them (torch.distributed: NCCL on GPUs, gloo on a CPU), and the step time and tokens/s of
a small GPT-style model trained with DDP, then writes one row per (GPU count, precision) in the
profiled-run CSV schema of DESIGN.md, ready for `manage.py calibrate --runs`. The microbenchmark
figures go in extra columns, and `--json` keeps the whole report (the full all-reduce curve).

    python -m estimator.profile --out runs.csv                 # all visible GPUs
    python -m estimator.profile --sweep --out runs.csv         # 1, 2, 4, ... GPUs: the scaling curve
    torchrun --nnodes 2 --nproc-per-node 8 ... -m estimator.profile --inter-node-gbps 3200 --out runs.csv

torch is an optional dependency (`pip install 'gpu-advisor[profiler]'`, or the torch build for
your CUDA version); this module imports it only once the options are parsed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from estimator.profiling.gpu_ids import resolve_gpu_id
from estimator.profiling.results import ModelShape, ProfileReport, rows_from_report, rows_to_text, write_csv
from estimator.specs import PRECISIONS, get_gpu

if TYPE_CHECKING:
    from estimator.profiling.launch import ProfileConfig

# name: (shape, micro-batch per device). GPT-2 / GPT-3 shapes; the micro-batches fit a 24 GB
# GPU with AdamW in fp32 states up to 350m, 80 GB up to 1.3b.
MODEL_PRESETS: dict[str, tuple[ModelShape, int]] = {
    # 1.15M parameters: the smallest model a profiled run (and a Scenario) may give is 1M (estimator.bounds), and
    # a CPU smoke run's rows must still import; the vocabulary carries the size, so a step stays milliseconds.
    "tiny": (ModelShape(layers=2, hidden=64, heads=4, ffn_hidden=256, vocab=16384, seq_len=64), 2),
    "125m": (ModelShape(layers=12, hidden=768, heads=12, ffn_hidden=3072, vocab=50304, seq_len=1024), 8),
    "350m": (ModelShape(layers=24, hidden=1024, heads=16, ffn_hidden=4096, vocab=50304, seq_len=1024), 8),
    "760m": (ModelShape(layers=24, hidden=1536, heads=16, ffn_hidden=6144, vocab=50304, seq_len=2048), 4),
    "1.3b": (ModelShape(layers=24, hidden=2048, heads=16, ffn_hidden=8192, vocab=50304, seq_len=2048), 2),
}

MIB = 1 << 20
EXIT_USAGE = 2

TORCH_MISSING = (
    "the profiler needs PyTorch, which is not installed in this environment.\n"
    "Install the optional dependency group:  pip install 'gpu-advisor[profiler]'\n"
    "or the torch build that matches your CUDA/ROCm driver (https://pytorch.org/get-started/locally/)."
)


def parse_int_list(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4] (argparse type)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse_precisions(text: str) -> tuple[str, ...]:
    """'bf16,fp32' -> ('bf16', 'fp32'), each one of PRECISIONS (argparse type)."""
    values = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    bad = [p for p in values if p not in PRECISIONS]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"precisions must be among {', '.join(PRECISIONS)}; got {text!r}")
    return values


def parse_mib_list(text: str) -> tuple[int, ...]:
    """'1,16,0.0625' (MiB) -> byte sizes, multiples of 4 bytes (float32 elements)."""
    try:
        sizes = tuple(max(4, int(float(part) * MIB) // 4 * 4) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated sizes in MiB, got {text!r}") from None
    if not sizes:
        raise argparse.ArgumentTypeError("expected at least one size")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m estimator.profile",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        epilog="examples:\n" + __doc__.split("\n\n")[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    out = parser.add_argument_group("output")
    out.add_argument("--out", type=Path, help="profiled-run CSV to write (default: stdout)")
    out.add_argument("--append", action="store_true", help="append to --out if it exists (same header required)")
    out.add_argument("--json", type=Path, help="also write the whole report (all measurements) as JSON")
    out.add_argument(
        "--gpu",
        help="GPU id for the `gpu` column (default: from the device name; required when the name is "
        "unknown or ambiguous, and on a CPU, where the rows are only a test of the profiler)",
    )
    out.add_argument(
        "--inter-node-gbps",
        type=float,
        help="scale-out bandwidth of one node in Gb/s, for runs across nodes (8 x 400 Gb/s NDR = 3200)",
    )
    out.add_argument("--note", help="text appended to the `source` column (e.g. the software stack)")

    what = parser.add_argument_group("what to measure")
    what.add_argument("--precisions", type=parse_precisions, help="default: bf16,fp32 on GPUs, fp32 on a CPU")
    what.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats: a minute, not several")
    what.add_argument(
        "--num-gpus",
        type=parse_int_list,
        help="GPU counts to train on, e.g. 1,2,4,8 (default: all visible GPUs; on a CPU: processes, default 2)",
    )
    what.add_argument("--sweep", action="store_true", help="train on 1, 2, 4, ... up to all visible GPUs")
    what.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto", help="default: cuda when visible")
    what.add_argument("--no-train", action="store_true", help="microbenchmarks only (writes no CSV rows)")

    model = parser.add_argument_group("training step")
    model.add_argument(
        "--model",
        choices=sorted(MODEL_PRESETS),
        help="default: 350m on GPUs with 40 GB or more, else (and with --quick) 125m; tiny on a CPU",
    )
    for name in ("layers", "hidden", "heads", "ffn-hidden", "vocab", "seq-len"):
        model.add_argument(f"--{name}", type=int, help="override the preset")
    model.add_argument("--micro-batch", type=int, help="sequences per device per micro-step (default: the preset's)")
    model.add_argument("--grad-accum", type=int, default=1, help="micro-steps per optimizer step (default 1)")
    model.add_argument("--steps", type=int, help="timed optimizer steps (default 10, --quick 3)")
    model.add_argument("--warmup-steps", type=int, help="untimed steps first (default 2, --quick 1)")
    model.add_argument("--activation-checkpointing", action="store_true", help="recompute each block in backward")

    bench = parser.add_argument_group("microbenchmarks")
    bench.add_argument("--matmul-n", type=int, help="square matmul size (default 8192 on GPUs, 512 on a CPU)")
    bench.add_argument("--allreduce-mib", type=parse_mib_list, help="all-reduce sizes in MiB (default 1,4,16,64,256)")
    bench.add_argument("--allreduce-iters", type=int, help="timed all-reduces per size (default 20, --quick 10)")
    bench.add_argument("--timeout", type=float, default=600.0, help="seconds a collective may wait before failing")
    return parser


def default_model(on_gpu: bool, quick: bool, memory_gb: float | None) -> str:
    """The preset that fits: 350m in fp32 needs about 25 GB with its AdamW states and logits,
    more than the 24 GB cards (L4, A10G, RTX 4090) have; 125m needs about 12 GB."""
    if not on_gpu:
        return "tiny"
    return "125m" if quick or (memory_gb is not None and memory_gb < 40) else "350m"


def _config_from_args(args: argparse.Namespace, device: str, memory_gb: float | None = None) -> ProfileConfig:
    """The ProfileConfig for these options on this device type (defaults depend on both)."""
    from estimator.profiling.launch import ProfileConfig

    on_gpu = device == "cuda"
    preset = args.model or default_model(on_gpu, args.quick, memory_gb)
    shape, micro_batch = MODEL_PRESETS[preset]
    overrides = {
        field: getattr(args, field)
        for field in ("layers", "hidden", "heads", "ffn_hidden", "vocab", "seq_len")
        if getattr(args, field) is not None
    }
    if "hidden" in overrides and "ffn_hidden" not in overrides:
        overrides["ffn_hidden"] = 4 * overrides["hidden"]
    shape = replace(shape, **overrides)
    if shape.hidden % shape.heads:
        raise ValueError(f"--hidden {shape.hidden} must be divisible by --heads {shape.heads}")
    sizes: tuple[int, ...]
    if on_gpu:
        sizes = (MIB, 16 * MIB, 64 * MIB) if args.quick else (MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB)
    else:
        sizes = (64 * 1024, MIB) if args.quick else (64 * 1024, MIB, 4 * MIB)
    return ProfileConfig(
        precisions=args.precisions or (("bf16", "fp32") if on_gpu else ("fp32",)),
        shape=shape,
        micro_batch=args.micro_batch or micro_batch,
        grad_accum=args.grad_accum,
        warmup_steps=args.warmup_steps if args.warmup_steps is not None else (1 if args.quick else 2),
        steps=args.steps or (3 if args.quick else 10),
        activation_checkpointing=args.activation_checkpointing,
        matmul_n=args.matmul_n or ((4096 if args.quick else 8192) if on_gpu else (256 if args.quick else 512)),
        matmul_repeats=5 if args.quick else 10,
        allreduce_sizes=args.allreduce_mib or sizes,
        allreduce_warmup=2 if args.quick else 5,
        allreduce_iters=args.allreduce_iters or (10 if args.quick else 20),
        timeout_s=args.timeout,
        device=device,
        train=not args.no_train,
    )


def world_sizes(requested: list[int] | None, sweep: bool, available: int, on_gpu: bool) -> list[int]:
    """The GPU (process) counts to measure, validated against the visible devices."""
    if sweep:
        top = max(requested) if requested else (available if on_gpu else 2)
        sizes = [1 << i for i in range(top.bit_length()) if 1 << i < top] + [top]
    else:
        sizes = sorted(set(requested or [available if on_gpu else 2]))
    if on_gpu and max(sizes) > available:
        raise ValueError(f"asked for {max(sizes)} GPUs but {available} are visible")
    return sizes


def validate_rows(rows: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[str]]:
    """Split rows into those the project's own import accepts and the reasons for the others.

    The profiled-run import (`estimator.runs`) is what `calibrate` and `estimate` read with, so a
    row it would refuse (say bf16 on a V100, which has no bf16 peak) is reported, not written.
    """
    from estimator.runs import RunValidationError, runs_from_records

    kept: list[dict[str, str]] = []
    problems: list[str] = []
    for row in rows:
        try:
            runs_from_records([row])
        except RunValidationError as error:
            reasons = "; ".join(f"column {e.column}: {e.message}" for e in error.errors)
            problems.append(f"{row['precision']} on {row['num_gpus']} GPU(s): {reasons}")
        else:
            kept.append(row)
    return kept, problems


def summarize(report: ProfileReport, stream: TextIO, peaks: Mapping[str, float] | None = None) -> None:
    """A human-readable digest of the report (the CSV/JSON carry the numbers). `peaks` (dense
    datasheet TFLOPS per precision) adds the fraction of peak, a quick check that the GPU is healthy."""
    names = sorted(set(report.device_names))
    print(f"devices: {', '.join(f'{n} x{report.device_names.count(n)}' for n in names)}", file=stream)
    for precision in dict.fromkeys(m.precision for m in report.matmul):
        found = [m.tflops for m in report.matmul if m.precision == precision]
        mean = sum(found) / len(found)
        spread = f" (min {min(found):.1f}, max {max(found):.1f} over {len(found)} devices)" if len(found) > 1 else ""
        peak = (peaks or {}).get(precision)
        of_peak = f", {mean / peak:.0%} of the {peak:g} TFLOPS datasheet peak" if peak else ""
        print(f"matmul {precision}: {mean:.2f} TFLOPS{spread}{of_peak}", file=stream)
    for skip in report.matmul_skipped:
        print(f"matmul {skip.precision}: not measured ({skip.reason})", file=stream)
    for result in report.allreduce:
        print(
            f"all-reduce {result.world_size} x {result.bytes / MIB:g} MiB: {result.seconds * 1e6:.0f} us, "
            f"busbw {result.busbw_GBps:.2f} GB/s",
            file=stream,
        )
    for run in report.train:
        memory = f", peak {run.peak_memory_gb:.1f} GB" if run.peak_memory_gb is not None else ""
        print(
            f"train {run.shape.params / 1e6:.1f}M params {run.precision} on {run.world_size}: "
            f"{run.step_time_s * 1e3:.1f} ms/step, {run.tokens_per_s:,.0f} tokens/s{memory}",
            file=stream,
        )


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.append and not args.out:
        parser.error("--append needs --out")

    from estimator.profiling.launch import launched_by_torchrun, torch_available

    if not torch_available():
        print(f"error: {TORCH_MISSING}", file=stderr)
        return EXIT_USAGE
    from estimator.profiling.launch import spawn_profile, torchrun_profile, visible_devices

    kind, count = visible_devices()
    if args.device == "cuda" and kind != "cuda":
        print("error: --device cuda but torch sees no GPU (is this a CPU-only torch build?)", file=stderr)
        return EXIT_USAGE
    device = "cpu" if args.device == "cpu" else kind
    on_gpu = device == "cuda"

    try:
        memory_gb = None
        if on_gpu:
            import torch

            memory_gb = min(torch.cuda.get_device_properties(i).total_memory for i in range(count)) / 1e9
        config = _config_from_args(args, device, memory_gb)
        torchrun = launched_by_torchrun()
        sizes = [] if torchrun else world_sizes(args.num_gpus, args.sweep, count, on_gpu)
        gpu_id = None
        if config.train:
            # Fail before measuring anything: minutes of measurement without a GPU id to file them under help nobody.
            import torch

            names = [torch.cuda.get_device_name(i) for i in range(count)] if on_gpu else []
            gpu_id = resolve_gpu_id(names, args.gpu, on_gpu=on_gpu)
    except ValueError as error:
        print(f"error: {error}", file=stderr)
        return EXIT_USAGE
    # Under torchrun every process runs this; only global rank 0 talks to the user.
    lead = not torchrun or os.environ.get("RANK", "0") == "0"
    if not on_gpu and gpu_id is not None and lead:
        print(
            f"warning: these are CPU measurements written under --gpu {gpu_id} (the `device` column says cpu); "
            "do not calibrate on them",
            file=stderr,
        )

    try:
        report = torchrun_profile(config) if torchrun else spawn_profile(config, sizes, log=stderr)
    except Exception as error:  # a child's failure arrives as one exception with its traceback text
        print(f"error: the measurement failed: {error}", file=stderr)
        print(
            "hint: out of memory? try --quick, a smaller --model or --micro-batch; a hang? check that "
            "the GPUs can talk to each other (NCCL_DEBUG=INFO)",
            file=stderr,
        )
        return 1
    if report is None:  # a torchrun rank other than 0: rank 0 writes the outputs
        return 0

    return _write_outputs(report, args=args, gpu_id=gpu_id, on_gpu=on_gpu, stdout=stdout, stderr=stderr)


def _write_outputs(
    report: ProfileReport, *, args: argparse.Namespace, gpu_id: str | None, on_gpu: bool, stdout: TextIO, stderr: TextIO
) -> int:
    """Summary, optional JSON report and the profiled-run rows (CSV file or stdout); the exit code."""
    # Fractions of a datasheet peak only mean something when the devices are that GPU.
    peaks = get_gpu(gpu_id).peak_tflops if gpu_id is not None and on_gpu else None
    summarize(report, stderr, peaks)
    if args.json:
        args.json.write_text(report.to_json() + "\n")
        print(f"wrote the full report to {args.json}", file=stderr)
    if gpu_id is None:
        print("no training rows (--no-train): no CSV written", file=stderr)
        return 0
    rows, problems = validate_rows(
        rows_from_report(report, gpu_id, inter_node_gbps=args.inter_node_gbps, note=args.note)
    )
    for problem in problems:
        print(f"warning: not writing the row for {problem}", file=stderr)
    if not rows:
        print("error: no valid profiled-run row to write", file=stderr)
        return EXIT_USAGE
    if args.out:
        try:
            write_csv(rows, args.out, append=args.append)
        except ValueError as error:
            print(f"error: {error}", file=stderr)
            return EXIT_USAGE
        print(f"wrote {len(rows)} profiled-run row(s) to {args.out}", file=stderr)
    else:
        stdout.write(rows_to_text(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
