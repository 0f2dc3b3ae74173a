"""The functional update standing for an augmented item assignment: ``x[i] op= v`` becomes
``x = ops.at(x)[i].<method>(v)``. A library of the passes that rewrite item assignment (``setitem``;
``attributes``, for targets rooted in an attribute).
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax

# The operator of ``x[i] op= v`` -> the method of ``ops.at(x)[i]`` that applies it.
AUG_METHODS = {
    syntax.Add: "add",
    syntax.Sub: "subtract",
    syntax.Mult: "multiply",
    syntax.Div: "divide",
    syntax.FloorDiv: "floor_divide",
    syntax.Mod: "remainder",
    syntax.Pow: "power",
    syntax.MatMult: "matmul",
    syntax.BitAnd: "bitwise_and",
    syntax.BitOr: "bitwise_or",
    syntax.BitXor: "bitwise_xor",
    syntax.LShift: "left_shift",
    syntax.RShift: "right_shift",
}
