"""Reproducing the five papers' headline results (``python -m fedcore reproduce PAPER``).

The papers, their tables, rows and claims (each row a named preset) are defined below this
package, in :mod:`fedcore.papers` (one module per paper). :mod:`.run` trains them over
seeds and writes ``assets/reproduction/<paper>.json`` / ``.md``; :mod:`.stats` holds our
numbers per row, against which the claims are checked; :mod:`.report` formats the
"paper vs ours" tables; :mod:`.results` reads the stored records (the Papers page);
:mod:`.cli` adds the ``reproduce`` subcommand.
"""
