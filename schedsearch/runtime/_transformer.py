"""Module classes of the built-in transformer workload (imports torch; load lazily).

A pre-norm decoder block: ``x + attention(norm(x))`` then ``x + mlp(norm(x))``,
causal multi-head self-attention written out (query, key, value and output
projections, softmax over ``q k^T / sqrt(d_head)`` with future positions
masked), and a ``4 x`` width MLP with GELU. Every module maps one tensor to
one tensor, as pipeline stages need.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["Embedding", "Block", "Head", "TokenCrossEntropy", "classes"]


class Embedding(nn.Module):
    """Token plus learned position embedding: ``(batch, seq)`` ids -> ``(batch, seq, width)``."""

    def __init__(self, vocab: int, seq_len: int, width: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.randn(seq_len, width) * 0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tokens(ids) + self.positions[: ids.shape[1]]


class Block(nn.Module):
    """Pre-norm causal self-attention and MLP, each with a residual connection."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        h = self.heads
        q, k, v = self.qkv(self.norm1(x)).split(w, dim=-1)
        q, k, v = (z.reshape(b, t, h, w // h).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(w // h)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, t, w))
        return x + self.down(nn.functional.gelu(self.up(self.norm2(x))))


class Head(nn.Module):
    """Final layer norm and the projection to vocabulary logits."""

    def __init__(self, width: int, vocab: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(x))


class TokenCrossEntropy(nn.Module):
    """Mean cross-entropy over every (sample, position) of ``(batch, seq, vocab)`` logits."""

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def classes() -> dict[str, type]:
    return {"Embedding": Embedding, "Block": Block, "Head": Head, "TokenCrossEntropy": TokenCrossEntropy}
