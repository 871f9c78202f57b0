"""Named methods of the five papers; each module registers its recipes in METHODS."""
