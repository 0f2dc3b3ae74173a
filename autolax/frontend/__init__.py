"""autolax's front end: Python source in, converted source out (no JAX here).

* ``transpile/``: the tree (gast behind ``syntax``), source, templates, naming, and the pieces
  several passes share;
* ``analysis/``: activity, liveness, definedness;
* ``passes/``: one rewrite per file (no pass imports another);
* ``pipeline``: the pass order and why; runs the passes and compiles the result.

The front end writes what the runtime needs to know about a statement into the converted code
(``autolax.runtime.sites``); it never calls the runtime.
"""
