"""Reusable dashboard pieces: shared handles and session state (``state``), the config
widgets (the form layer ``form``, the Playground's ``sidebar``, its per-client ``budget_editor``
and ``equal_privacy_mode``), Plotly figures (``charts``) and the live run view (``live``).

Page files import from here and stay layout only; every formula lives in ``fedcore``.
"""
