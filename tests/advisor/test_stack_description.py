"""A stack label is the runs it was fitted on: a memory probe gave current Megatron-LM runs (FlashAttention, no
sequence parallelism) the label megatron-lm and got 2021's unfused attention scores counted, 1.2-1.5x the memory and
"does not fit" on 80 GB. The Scenario's stack field says what each label means, from estimator/data/stacks.csv."""

from __future__ import annotations

from advisor.scenario_model import TrainingWorkload
from estimator.workload import STACKS, stack_properties


def test_the_stack_field_says_what_each_label_stands_for() -> None:
    words = TrainingWorkload.model_fields["stack"].description or ""
    for stack in STACKS:
        assert f"{stack}: " in words, stack
    table = stack_properties()
    assert f"megatron-lm: {table['megatron-lm'].attention_kernel}, no sequence parallelism" in words
    assert "closest to nemo" in words
