"""moe-oracle from Python: judge and fuzz a PyTorch or NumPy MoE router against the spec.

The judge, the generators and the shrinker are the ``moe-oracle`` command's own, in the
extension ``moe_oracle._core``; this package only converts arrays and arguments.

- ``judge(logits, ids, gates, k, contract=None)`` -> JudgeResult (``.ok``, ``.verdicts``,
  ``.violations``; ``str()`` is ``moe-oracle explain``'s explanation);
- ``assert_routes(...)``: the same, raising AssertionError with that explanation;
- ``fuzz(fn, ...)`` -> FuzzReport (the fields of ``moe-oracle fuzz --json``);
- ``python3 -m moe_oracle fuzz package.module:function [flags]``;
- ``moe_oracle.strategies.routing_cases(...)``, ``family_cases(...)``: Hypothesis
  strategies over the same generators;
- the layer door (moe_layer_v1): ``judge_layer(x, logits, w13, w2, k, y, ids, gates)``,
  ``assert_layer(...)`` and ``fuzz_layer(fn)``, ``fn(x, logits, w13, w2, k, family)`` returning
  y or (y, ids, gates); ``moe_oracle.strategies.layer_cases(...)``;
- the routing family (moe_route_v2): ``judge(..., family={...})`` and ``fuzz`` under an
  ``"abi": "moe_route_v2"`` contract, calling ``fn(logits, k, family)``;
- the dispatch door (moe_dispatch_v1): ``fuzz_dispatch(fn)`` on ``fn(ids, k, experts, block,
  capacity) -> (sorted_slots, block_expert, rows)``, ``judge_dispatch``,
  ``assert_dispatch``, ``moe_oracle.strategies.dispatch_cases(...)``.

docs/python.md documents all of it.
"""

from ._contract import with_contract
from ._core import __version__
from ._dispatch import DispatchJudgeResult, assert_dispatch, fuzz_dispatch, judge_dispatch
from ._fuzz import FuzzReport, Unsupported, fuzz
from ._judge import JudgeResult, assert_routes, judge
from ._layer import LayerJudgeResult, assert_layer, fuzz_layer, judge_layer

__all__ = ["FuzzReport", "JudgeResult", "LayerJudgeResult", "Unsupported", "__version__",
           "assert_layer", "assert_routes", "fuzz", "fuzz_layer", "judge", "judge_layer",
           "with_contract"]
__all__ += ["DispatchJudgeResult", "assert_dispatch", "fuzz_dispatch", "judge_dispatch"]
