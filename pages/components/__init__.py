"""Reusable dashboard pieces: shared handles and session state (``state``), config
widgets (``widgets``), Plotly figures (``charts``) and the live run view (``live``).

Page files import from here and stay layout only; every formula lives in ``fedcore``.
"""
