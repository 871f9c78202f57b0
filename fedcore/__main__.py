"""``python -m fedcore``: see :mod:`fedcore.cli`."""
import sys

from .cli import main

sys.exit(main())
