"""Accuracy no better than a blind guess, said wherever an accuracy is shown (issue 40 §6).

A classifier that always answers one class scores about ``1 / classes`` on a balanced test set (the
digits: 0.10). A trained model at or below that learned nothing usable, whatever its ε: privacy
bought at that price is a model nobody would deploy, and a page must say so rather than plot it
beside the others in silence. "At or below" allows the test set's sampling error: accuracy on n
test images of a guesser has standard deviation ``sqrt(p (1 - p) / n)``, so an accuracy within
:data:`SIGMAS` of them above ``p`` is not evidence of learning (a one-sided z-test at about 2.3 %).

>>> no_better_than_guess(0.078, "digits"), no_better_than_guess(0.5, "digits")
(True, False)
>>> guess_note(0.078, "digits")
'Accuracy 0.078 is no better than a blind guess (0.10 with 10 classes): this model learned nothing usable.'
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

SIGMAS = 2.0
"""Standard errors of a guesser's accuracy on the test set within which an accuracy counts as a guess."""


def chance(dataset: str) -> float:
    """A blind guess's accuracy on ``dataset``: one over its number of classes."""
    from .data import dataset_facts

    return 1.0 / dataset_facts(dataset).num_classes


def no_better_than_guess(accuracy: Optional[float], dataset: str, test_size: int = 0) -> bool:
    """Whether ``accuracy`` on ``test_size`` test images (0: the dataset's whole test set) is at or
    below a blind guess, within :data:`SIGMAS` standard errors."""
    from .data import dataset_facts

    if accuracy is None or accuracy != accuracy:
        return False
    p = chance(dataset)
    n = test_size or dataset_facts(dataset).test_size
    return accuracy <= p + SIGMAS * math.sqrt(p * (1 - p) / max(n, 1))


def guess_note(accuracy: Optional[float], dataset: str, test_size: int = 0) -> Optional[str]:
    """One sentence when ``accuracy`` is no better than a blind guess, else None."""
    if not no_better_than_guess(accuracy, dataset, test_size):
        return None
    p = chance(dataset)
    return (f"Accuracy {accuracy:.3f} is no better than a blind guess ({p:.2f} with {round(1 / p)} classes): "
            "this model learned nothing usable.")


def guessing(points: Iterable[tuple], dataset: str) -> list[tuple]:
    """The ``(label, accuracy)`` pairs of ``points`` whose accuracy is no better than a blind guess."""
    return [(label, acc) for label, acc in points if no_better_than_guess(acc, dataset)]
