"""Real programs from public code, ported minimally (issue 34): the corpus that
``tests/integration/programs/test_real_programs.py`` runs through every path.

How the programs were chosen is in ``SELECTION.md`` (the first named Python files of fixed
searches, all kept). Each function cites the file it follows ("after REPOSITORY/PATH") and
the query that found it. The code is written anew with the original's control flow (the
same loops, branches, jumps, early returns, list and index idioms, in the same order);
names, comments and layout are this project's own, and NumPy is spelled ``jnp`` where the
program computes arrays.

Files a query named that are not in the corpus, and why:

- query 2: no named Python file (Markdown and C++ only);
- query 11: smriti-kumar/Pharmacokinetics-Practice helper_methods.py (no loop or branch);
- query 14: stoltzmaniac/stoltzmaniac src/stoltzmaniac/utils/learners.py (a docstring, no body);
- query 15: the-shivers/advent_of_code 2024/day11/collatz.py (not Python that parses:
  ``def collatz(n)`` lacks its colon);
- query 17: vineelag/DSandALG sorting/quick_sort.py (not Python that parses: mixed
  indentation).
"""
