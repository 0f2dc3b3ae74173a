"""``autolax convert``: writes converted ``.py`` files a person would keep.

* ``module``: reads a file without importing it (imports, selected functions);
* ``convert``: converts the selected functions and splices them back into the text;
* ``emit``: writes a converted body, keeping unchanged statements and comments verbatim;
* ``standalone``: ``--standalone``, the ``ops.*`` calls lowered to ``jax.lax`` / ``jnp`` / Python;
* ``files``: inputs, outputs, ``--diff`` / ``--check`` and atomic writes.
"""

from autolax.sourcegen.convert import Options, convert_source
from autolax.sourcegen.files import run

__all__ = ["Options", "convert_source", "run"]
