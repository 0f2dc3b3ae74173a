"""``autolax convert``: writes converted ``.py`` files a person would keep.

* ``module``: reads a file without importing it (imports, selected functions);
* ``convert``: converts the selected functions and splices them back into the text;
* ``emit``: writes a converted body, keeping unchanged statements and comments verbatim;
* ``runtime_copy``: ``--standalone``, the runtime copied beside the output as ``autolax_runtime``;
* ``files``: inputs, outputs, ``--diff`` / ``--check`` and atomic writes.
"""

from autolax.sourcegen.convert import Options, convert_source
from autolax.sourcegen.files import run

__all__ = ["Options", "convert_source", "run"]
