"""Bounds of every quantity a profiled-run row or a Scenario gives: one definition.

Values outside them are refused with the field named, instead of overflowing the model's
arithmetic (a params_b of 1e300 made the step-time arithmetic infinite and then failed converting
it). They are the Scenario's own limits (advisor/scenario.py), generous beside any real job: the
largest published training runs use ~16k-100k GPUs, ~2T parameters and 128k-token sequences.
"""

from __future__ import annotations

from typing import Final

MAX_GPUS: Final[int] = 65_536  # GPUs in one job; also bounds tp, pp, cp and micro_batch
MAX_PARAMS_B: Final[float] = 100_000.0  # billions of parameters
# The smallest model the estimator is meant for: 1M parameters (below it the fixed per-step overheads dominate and
# the FLOP model says nothing). A Scenario's and a profiled run's lower bound alike (a run row of 5e-324 predicted
# 650,753 tokens/s for a 65B geometry and fitted into a calibration).
MIN_PARAMS_B: Final[float] = 0.001
MAX_GEOMETRY: Final[int] = 10_000_000  # seq_len, layers, hidden, heads, ffn_hidden, vocab, global_batch
MAX_GPUS_PER_NODE: Final[int] = 72  # the largest NVLink domain sold (GB200 NVL72)
MAX_INTER_NODE_GBPS: Final[float] = 100_000.0  # per node; 8 x 800 Gb/s NICs is 6,400
# The slowest scale-out link a GPU cluster is built on: 1 Gb/s Ethernet (the slowest server in gpus.csv has 100).
# Below it the communication time overflows: 5e-324 Gb/s left every time and cost of a multi-node size null with
# no reason given, and 1e-300 gave runs of 9.3e303 hours.
MIN_INTER_NODE_GBPS: Final[float] = 1.0
MAX_TOKENS_PER_S: Final[float] = 1e12  # a measured job's throughput; 65,536 GPUs x 1e5 tokens/s is 6.6e9
MAX_STEP_TIME_S: Final[float] = 1e7  # about 116 days for one step

# The rule for a positive quantity: no bound is "above 0". Each has a smallest value with a physical meaning in its
# unit, because "above 0" let subnormals through (1e-320 passed every such field): a 1e-320-year ownership term
# overflowed the annuity to NaN costs (a 500), a measured 1e-305 tokens/s overflowed the calibration fit (a 500), and
# a run of 1e-320 tokens "took 0.0 hours". Generated from here: the Scenario and fleet models (so their JSON Schema,
# parser messages and form limits) and the profiled-run CSV check (RUN_COLUMN_MINIMUM).
# One token a second: slower than any GPU runs the smallest model meant for (the slowest public run does 4,594).
MIN_TOKENS_PER_S: Final[float] = 1.0
# A millisecond: one optimizer step launches hundreds of kernels of several microseconds each.
MIN_STEP_TIME_S: Final[float] = 1e-3
MIN_RUN_TOKENS: Final[float] = 1.0  # tokens one training run processes: at least one
MIN_RUNS_PER_YEAR: Final[float] = 0.01  # one run a century
MIN_OWNERSHIP_YEARS: Final[float] = 0.1  # about five weeks of owning a server
MIN_USD_PER_GPU_HOUR: Final[float] = 0.001  # a tenth of a cent; the cheapest catalog offers cost about 100 times more
MIN_CAPEX_USD: Final[float] = 1.0  # a dollar for one node
MIN_REQUESTS_PER_S: Final[float] = 1e-5  # under one request a day
MIN_LATENCY_S: Final[float] = 1e-4  # 100 microseconds: no GPU returns a token faster than a kernel launch or two
MIN_JOB_HOURS: Final[float] = 0.01  # a fleet job's run: 36 seconds
MIN_DEMAND_GROWTH: Final[float] = 0.01  # a fleet's next-year demand: 1% of the measured

# A float column's smallest value (inclusive): every float column is named.
RUN_COLUMN_MINIMUM: Final[dict[str, float]] = {
    "params_b": MIN_PARAMS_B,
    "inter_node_gbps": MIN_INTER_NODE_GBPS,
    "tokens_per_s": MIN_TOKENS_PER_S,
    "step_time_s": MIN_STEP_TIME_S,
}
RUN_COLUMN_MAXIMUM: Final[dict[str, float]] = {
    "num_gpus": MAX_GPUS,
    "gpus_per_node": MAX_GPUS_PER_NODE,
    "inter_node_gbps": MAX_INTER_NODE_GBPS,
    "params_b": MAX_PARAMS_B,
    "layers": MAX_GEOMETRY,
    "hidden": MAX_GEOMETRY,
    "heads": MAX_GEOMETRY,
    "ffn_hidden": MAX_GEOMETRY,
    "vocab": MAX_GEOMETRY,
    "seq_len": MAX_GEOMETRY,
    "global_batch": MAX_GEOMETRY,
    "micro_batch": MAX_GPUS,
    "tp": MAX_GPUS,
    "pp": MAX_GPUS,
    "cp": MAX_GPUS,
    "tokens_per_s": MAX_TOKENS_PER_S,
    "step_time_s": MAX_STEP_TIME_S,
}
