"""A small GPT-style decoder built from torch.nn, for the profiler's training step.

Imports torch at module level, so only the measuring functions import this module. The layout
is GPT-2's (pre-LayerNorm blocks with biases, learned positions, output head tied to the token
embedding, GELU MLP) because its parameter count is exactly Megatron's
P = 12lh^2(1 + 13/(12h) + (V+s)/(12lh)) when ffn_hidden = 4h, the formula the estimator uses.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from estimator.profiling.results import ModelShape


class Block(nn.Module):
    """Pre-LN decoder block: causal self-attention then a GELU MLP, each with a residual."""

    def __init__(self, hidden: int, heads: int, ffn_hidden: int) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not divisible by heads {heads}")
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, ffn_hidden)
        self.out = nn.Linear(ffn_hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(hidden, dim=2)
        # (batch, heads, seq, head_dim): the layout scaled_dot_product_attention expects.
        q, k, v = (t.view(batch, seq, self.heads, hidden // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, hidden))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token + position embeddings, `layers` blocks, a final LayerNorm and the tied output head."""

    def __init__(self, shape: ModelShape, *, activation_checkpointing: bool = False) -> None:
        super().__init__()
        self.shape = shape
        self.activation_checkpointing = activation_checkpointing
        self.tokens = nn.Embedding(shape.vocab, shape.hidden)
        self.positions = nn.Embedding(shape.seq_len, shape.hidden)
        self.blocks = nn.ModuleList(Block(shape.hidden, shape.heads, shape.ffn_hidden) for _ in range(shape.layers))
        self.ln_f = nn.LayerNorm(shape.hidden)
        self.apply(_init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The mean next-token cross-entropy of `idx` against `targets` (both batch x seq)."""
        seq = idx.shape[1]
        positions = torch.arange(seq, device=idx.device)
        x = self.tokens(idx) + self.positions(positions)
        for block in self.blocks:
            if self.activation_checkpointing and self.training:
                # Full recomputation of each block in backward: what `activation_checkpointing=true` means.
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        logits = F.linear(self.ln_f(x), self.tokens.weight)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def _init_weights(module: nn.Module) -> None:
    # GPT-2's initialisation keeps the loss finite in low precision from the first step.
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
