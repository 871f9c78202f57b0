"""fedcore: the federated-learning-with-differential-privacy engine behind FL Privacy Lab.

Plain Python (torch, numpy); never imports streamlit. See ``python -m fedcore --help``.
"""

__version__ = "0.1.0"
