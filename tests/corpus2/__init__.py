"""The second real-program corpus (issue 43): the library modules of J. Kiusalaas,
*Numerical Methods in Engineering with Python* (1st ed., 2005), as stored in the public
repository burakbayramli/books, folder ``Numerical_Eng_Python/`` (no licence stated there;
the code here is written anew with the original's control flow and cites the file it
follows: "after Numerical_Eng_Python/FILE"). Chosen by the rule of ``SELECTION.md``, all
kept; run by ``tests/integration/programs/test_real_programs2.py``.

Files of the folder that are not in the corpus, and why:

- ``example*.py`` (the book's worked examples: scripts that print);
- ``error.py``, ``swap.py`` (helpers: ported into the files of the programs that call them);
- ``plotPoly.py``, ``printSoln.py``, ``xyPlot.py`` (output only);
- ``romberg.py``, ``polyRoots.py``, ``cubicSpline.py``, ``inversePower3.py`` (they call
  ``trapezoid.py``, ``evalPoly.py``, ``LUdecomp3.py``, which the stored folder lacks).
"""
