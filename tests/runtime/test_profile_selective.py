"""The profile's figures under per-operator selective checkpointing: torchtitan's rule, what a micro-batch
holds under it, and what its backward recomputes."""

from __future__ import annotations

import pytest

from optional import require

torch = require("torch")

from schedsearch.errors import InvalidProblemError  # noqa: E402
from schedsearch.runtime.profile import OpCheckpointRule, op_checkpoint_policy, profile  # noqa: E402

pytestmark = pytest.mark.torch

aten = torch.ops.aten


def test_the_rule_saves_compute_ops_but_every_second_matrix_product():
    rule = OpCheckpointRule(torch)
    # matrix products counted: the first, third, ... saved, the second, fourth, ... recomputed
    assert [rule.saves(aten.mm.default) for _ in range(4)] == [True, False, True, False]
    # the recomputation counts on its own, from its own first product
    assert [rule.saves(aten.mm.default, recompute=True) for _ in range(3)] == [True, False, True]
    assert rule.saves(aten.linear.default)  # the fifth product of the forward
    # other compute-intensive operators are saved, and not counted; cheap ones are recomputed
    assert rule.saves(aten.addmm.default) and rule.saves(aten.bmm.default) and rule.saves(aten.max.default)
    assert not rule.saves(aten.mm.default)  # the sixth
    assert not any(rule.saves(op) for op in (aten.relu.default, aten._softmax.default, aten.add.Tensor,
                                             aten.native_layer_norm.default, aten.gelu.default))


class TwoProducts(torch.nn.Module):
    """``relu(x @ a) @ b``: the first product's output saved, the relu and the second product recomputed."""

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.a = torch.nn.Parameter(torch.randn(16, 32, generator=gen))
        self.b = torch.nn.Parameter(torch.randn(32, 16, generator=gen))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(torch.mm(x, self.a).relu(), self.b)


def test_what_a_micro_batch_holds_is_its_input_and_the_outputs_the_rule_saves():
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
    first, second = TwoProducts(), TwoProducts()
    prof = profile([first, second], x, repeats=1, selective=[False, True])
    plain, checked = prof.stages[8]
    assert plain.selective_bytes is None and plain.selective_recompute_s is None
    # stage 1: its input (8 x 16 floats) and the first product's output (8 x 32), not the relu's or the second's
    assert checked.selective_bytes == 4 * (8 * 16 + 8 * 32)
    assert checked.selective_bytes < checked.activation_bytes
    assert 0 <= checked.selective_recompute_s <= checked.forward_s


def test_a_block_checkpointed_by_the_rule_has_the_plain_gradients():
    from torch.utils.checkpoint import checkpoint

    from schedsearch.runtime._transformer import Block

    block = Block(32, 4)
    x = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(2), requires_grad=True)
    grads = []
    for run in (lambda: block(x), lambda: checkpoint(block, x, use_reentrant=False,
                                                      context_fn=op_checkpoint_policy(torch))):
        block.zero_grad()
        x.grad = None
        run().square().sum().backward()
        grads.append([x.grad.clone()] + [p.grad.clone() for p in block.parameters()])
    for plain, checked in zip(*grads):
        assert torch.equal(plain, checked)


def test_selective_flags_one_per_stage():
    x = torch.randn(4, 16)
    with pytest.raises(InvalidProblemError, match="'selective' must be one flag or one per stage"):
        profile([TwoProducts()], x, repeats=1, selective=[True, False])
