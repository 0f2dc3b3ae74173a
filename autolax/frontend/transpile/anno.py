"""Annotations that rewrite passes leave on nodes for later passes.

Analysis results live in side tables (see ``autolax.frontend.analysis``); this is only for facts a
rewrite creates and a later rewrite consumes, such as the extra exit test that ``break``
and ``return`` lowering attach to a ``for`` loop.
"""

from __future__ import annotations

from autolax.frontend.transpile import syntax

_KEY = "_autolax_anno"

# Keys
EXTRA_TEST = "extra_test"  # For: expression that must hold before each iteration
# For: EXTRA_TEST runs with each item, before its iteration; the name set to whether it
# stopped the loop (passes.loop_exits)
ITEM_TEST = "item_test"
# For with ITEM_TEST: the test runs after each iteration instead, and EXTRA_TEST is the test
# that stops the loop (not the one that lets it go on)
TEST_AFTER = "test_after"
ORIGIN = "origin"  # generated statement: the user statement it stands for
GENERATED_FLAG = "generated_flag"  # Name assigned by jump lowering ("break", "return", ...)
# If: one branch holds statements a jump skips (the rest of the block, moved there by jump
# lowering, or guarded by `if not flag:`): (the jump's keyword, its line, "body" or "orelse")
SKIPPED_BY = "skipped_by"
LOOP_OPTIONS = "loop_options"  # For/While: {"max_steps": 4096} from autolax.loop_options
# FunctionDef: a branch or loop-test function control_flow made, named only in its op's call
# (no ``ops.raised_state`` around it): branch_lambdas may write it inline.
ONLY_IN_CALL = "only_in_call"
THUNK = "thunk"  # Lambda: generated, called at once by the op it is passed to (not a closure)
# IfExp inside a `try`: the exception type expressions its handlers catch (passes.exceptions)
CAUGHT_BY = "caught_by"
# Try: the exception types its handlers catch (and ``ops.FinallyRaises``), for the
# ``with ops.catching(...)`` the last pass puts around its body (``passes.runtime_checks``)
CATCHING = "catching"
# BoolOp / chained Compare inside a `try`: what an operand that fails while staged must not
# raise when the program runs (transpile.caught.staged_caught)
CAUGHT_BY_STAGED = "caught_by_staged"


def thunk(expr):
    """``lambda: expr``, marked as a thunk (an operand evaluated only if Python would)."""
    lam = syntax.lambda_(expr)
    set(lam, THUNK, True)
    return lam


def get(node, key, default=None):
    return getattr(node, _KEY, {}).get(key, default)


def set(node, key, value) -> None:  # noqa: A001 - mirrors dict.set-like naming
    annos = getattr(node, _KEY, None)
    if annos is None:
        annos = {}
        setattr(node, _KEY, annos)
    annos[key] = value


def has(node, key) -> bool:
    return key in getattr(node, _KEY, {})


class ProgramTransformer(syntax.NodeTransformer):
    """A ``NodeTransformer`` that also rewrites the exit test a loop carries in ``EXTRA_TEST``
    (``if x in seen: break`` opening a body, moved there by jump lowering): it is the program's
    expression too, so a pass that rewrites expressions rewrites it as well."""

    def visit_For(self, node):
        return self._visit_loop(node)

    def visit_While(self, node):
        return self._visit_loop(node)

    def _visit_loop(self, node):
        node = self.generic_visit(node)
        extra = get(node, EXTRA_TEST)
        if extra is not None:
            set(node, EXTRA_TEST, self.visit(extra))
        return node
