"""The command line (``autolax``, ``python -m autolax``) and ``autolax convert``, which writes
converted ``.py`` files a person would keep.

* ``command``: the argument parser and the subcommands (``convert``, ``demo``);
* ``module``: reads a file without importing it (imports, selected functions);
* ``convert``: converts the selected functions and splices them back into the text;
* ``autolax.frontend.emit`` (shared with ``autolax.to_source``): writes a converted ``def``,
  keeping unchanged statements and comments verbatim;
* ``runtime_copy``: ``--standalone``, the runtime copied beside the output as ``autolax_runtime``;
* ``files``: inputs, outputs, ``--diff`` / ``--check`` and atomic writes.
"""

from autolax.cli.command import main  # noqa: E402 - after the modules it uses
from autolax.cli.convert import Options, convert_source
from autolax.cli.files import run

__all__ = ["Options", "convert_source", "main", "run"]
