"""Reproducing the five papers' headline results (``python -m fedcore reproduce PAPER``).

:mod:`.spec` defines papers, tables, rows and claims; :mod:`.presets` holds the five
papers' experiments and registers each row as a named preset; :mod:`.run` trains them over
seeds and writes ``assets/reproduction/<paper>.json`` / ``.md``; :mod:`.report` formats the
"paper vs ours" tables; :mod:`.results` reads the stored records (the Papers page);
:mod:`.cli` adds the ``reproduce`` subcommand.
"""
