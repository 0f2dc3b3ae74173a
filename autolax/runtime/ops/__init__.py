"""The runtime that converted code calls: one small function per construct.

Each op decides when it runs: a traced condition, bound or iterable (or carried value)
lowers to ``jax.lax``; concrete Python values keep plain Python behaviour.

Generated code reaches this module as ``ops`` (see ``autolax.to_source``).
"""

import os as _os

from autolax.runtime import compat as _compat
from autolax.runtime.errors import AutolaxError
from autolax.runtime.ops.calls import (  # noqa: A004
    HandedBack,
    all,
    any,
    call,
    call_writing,
    fstring,
    hand_back,
    host_call,
    max,
    min,
    percent,
    print,
)
from autolax.runtime.ops.checks import (
    FinallyRaises,
    MaySuppress,
    TracerErrors,
    asserting,
    catching,
    caught,
    function,
    in_flight,
    raising,
    refuse_tracer_error,
    refusing,
    runtime_checks,
)
from autolax.runtime.ops.control import cases, cond, if_else
from autolax.runtime.ops.data import (  # noqa: A004
    append,
    at,
    augmented,
    index_list,
    is_sequence,
    is_singleton,
    outside,
    outside_store,
    returned_augmented,
    setattr,
    sought,
    stack,
    stacked,
    view,
)
from autolax.runtime.ops.lines import source_lines
from autolax.runtime.ops.lists import StackedList
from autolax.runtime.ops.logical import and_, is_, is_not, not_, or_
from autolax.runtime.ops.loops import enumerate, for_iter, for_range, range, range_split, while_loop, zip  # noqa: A004
from autolax.runtime.ops.pymath import like, math_call
from autolax.runtime.ops.pymath import to_float as float  # noqa: A004
from autolax.runtime.ops.pymath import to_int as int  # noqa: A004
from autolax.runtime.ops.report import options
from autolax.runtime.ops.search import count, index, is_in, not_in
from autolax.runtime.ops.slices import apply, masked, part, span, window
from autolax.runtime.ops.state import MaybeBound, Undefined, assigned, bound, raised_state, undefined

_compat.hide_from_source_info(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))) + _os.sep)

__all__ = [
    "AutolaxError",
    "MaybeBound",
    "StackedList",
    "Undefined",
    "all",
    "and_",
    "any",
    "append",
    "apply",
    "asserting",
    "caught",
    "catching",
    "FinallyRaises",
    "MaySuppress",
    "assigned",
    "at",
    "augmented",
    "returned_augmented",
    "bound",
    "call",
    "call_writing",
    "cases",
    "cond",
    "count",
    "enumerate",
    "for_iter",
    "for_range",
    "fstring",
    "hand_back",
    "HandedBack",
    "host_call",
    "if_else",
    "index",
    "index_list",
    "is_",
    "is_in",
    "is_not",
    "is_sequence",
    "masked",
    "like",
    "math_call",
    "int",
    "float",
    "max",
    "min",
    "is_singleton",
    "not_",
    "not_in",
    "options",
    "or_",
    "outside",
    "outside_store",
    "part",
    "percent",
    "print",
    "raising",
    "raised_state",
    "range",
    "range_split",
    "function",
    "runtime_checks",
    "refuse_tracer_error",
    "TracerErrors",
    "in_flight",
    "refusing",
    "setattr",
    "sought",
    "source_lines",
    "span",
    "stack",
    "stacked",
    "undefined",
    "view",
    "while_loop",
    "window",
    "zip",
]
