"""Live variables: which names may be read later, before being rebound.

Backward data flow over the structured statements of one function (jumps have been lowered
to flags by then). Loops iterate to a fixed point. Results are side tables keyed by node:

* ``live_out[stmt]``: names live right after ``stmt``;
* ``live_in[stmt]``: names live right before it;
* ``header[loop]``: names live at the top of each iteration, before the loop test (for
  ``for``: before the target is bound);
* ``entry[(stmt, field)]``: names live at the start of a nested block (``body``/``orelse``).
"""

from __future__ import annotations

from autolax.frontend.analysis.activity import reads, target_names, writes
from autolax.frontend.transpile import anno, syntax


class Liveness:
    def __init__(self, fn_node):
        self.live_in: dict = {}
        self.live_out: dict = {}
        self.header: dict = {}
        self.entry: dict = {}
        # reads / writes of a node, computed once: loops are analysed until nothing changes
        self._reads: dict = {}
        self._writes: dict = {}
        self._block(fn_node.body, set())

    def _read(self, node) -> set:
        key = id(node)
        if key not in self._reads:
            self._reads[key] = (reads(node), node)  # the node: its id stays its own
        return self._reads[key][0]

    def written(self, node) -> set:
        """``writes(node)``, remembered (the caller must not change the set)."""
        key = id(node)
        if key not in self._writes:
            self._writes[key] = (writes(node), node)
        return self._writes[key][0]

    def _block(self, stmts, live_out: set) -> set:
        live = set(live_out)
        for stmt in reversed(stmts):
            self.live_out[stmt] = live
            live = self._stmt(stmt, live)
            self.live_in[stmt] = live
        return live

    def _stmt(self, node, out: set) -> set:
        """What is live before ``node``, given what is live after it (``out``)."""
        if node.__class__ in _SIMPLE:  # most statements: the last rule, without the tests before it
            return (out - self.written(node)) | self._read(node)
        if isinstance(node, syntax.If):
            return self._if(node, out)
        if isinstance(node, syntax.While):
            return self._while(node, out)
        if isinstance(node, syntax.For):
            return self._for(node, out)
        if isinstance(node, (syntax.With, syntax.AsyncWith)):
            return self._with(node, out)
        if isinstance(node, syntax.Try):
            return self._try(node, out)
        if isinstance(node, syntax.Return):
            return self._read(node.value)
        if isinstance(node, syntax.Raise):
            return self._read(node)
        if isinstance(node, (syntax.FunctionDef, syntax.AsyncFunctionDef, syntax.ClassDef)):
            return (out - {node.name}) | self._read(node)
        return (out - self.written(node)) | self._read(node)

    def _if(self, node, out: set) -> set:
        body = self._block(node.body, out)
        orelse = self._block(node.orelse, out)
        self.entry[(node, "body")] = body
        self.entry[(node, "orelse")] = orelse
        return self._read(node.test) | body | orelse

    def _while(self, node, out: set) -> set:
        """Live at the loop's header: the test's reads, what the exit (``else``) needs, and
        what the body needs, to a fixed point."""
        exit_live = self._block(node.orelse, out)
        test = self._read(node.test)
        header = test | exit_live
        while True:
            body = self._block(node.body, header)
            new = test | exit_live | body
            if new == header:
                break
            header = new
        self.header[node] = header
        self.entry[(node, "body")] = body
        return header

    def _for(self, node, out: set) -> set:
        """As ``_while``; the targets are bound by each iteration, the iterable read once."""
        exit_live = self._block(node.orelse, out)
        extra = self._read(anno.get(node, anno.EXTRA_TEST))
        targets = target_names(node.target)
        header = extra | exit_live
        while True:
            body = self._block(node.body, header)
            new = extra | exit_live | (body - targets)
            if new == header:
                break
            header = new
        self.header[node] = header
        self.entry[(node, "body")] = body
        return self._read(node.iter) | header

    def _with(self, node, out: set) -> set:
        body = self._block(node.body, out)
        bound = set()
        item_reads = set()
        for item in node.items:
            item_reads |= self._read(item.context_expr)
            if item.optional_vars is not None:
                bound |= target_names(item.optional_vars)
        # The context manager may suppress an exception raised anywhere in the body: what is
        # live after the `with` is live before its body too (a jump flag set at the end of
        # a body that returns must keep its first value, for the code after the `with`).
        return item_reads | ((body | out) - bound)

    def _try(self, node, out: set) -> set:
        # `finally` runs after everything else; the handlers after any statement of the
        # body, which may raise anywhere: what they read is live throughout the body (a
        # loop in it must give back what it changes of it). Nothing the try binds is
        # certain, so ``out`` stays live before it, with every read.
        final_in = self._block(node.finalbody, out)
        orelse_in = self._block(node.orelse, final_in)
        raised = set(final_in)
        for handler in node.handlers:
            raised |= self._block(handler.body, final_in) | self._read(handler.type)
        self._block(node.body, orelse_in | raised)
        for stmt in node.body:
            for inner in syntax.walk_statements(stmt):
                for table in (self.live_in, self.live_out, self.header):
                    if inner in table:
                        table[inner] = table[inner] | raised
        return out | self._read(node)


# Statements without a rule of their own in ``Liveness._stmt``.
_SIMPLE = frozenset({syntax.Assign, syntax.AugAssign, syntax.AnnAssign, syntax.Expr})
