"""autolax's runtime: what converted code calls while it runs (the layer below the API).

* ``ops/``: one small function per construct (``ops.cond``, ``ops.for_range``,
  ``ops.while_loop``, ...), each deciding when the program is traced what its statement becomes
  (a ``lax`` primitive, or plain Python for Python values) and building it;
* ``plan``: every staging decision, made from what the ops see while tracing;
* ``sites``: the statement descriptors (``at='...'``) the front end writes into converted code;
* ``errors``: autolax's error classes and their messages;
* ``libraries``: what is library code, never converted; ``transforms``: JAX's transforms;
* ``compat``: what differs between JAX releases.

Nothing here imports autolax outside this folder: ``autolax convert --standalone`` copies the
folder as it is (as ``autolax_runtime``) beside its output. The API installs one hook,
``ops.calls.set_converter``, so that user functions called from converted code are converted
too; without it (the copy) callees run as written.
"""
