"""The partitioner registry; each partition module registers its function here.

A partitioner is ``fn(labels, num_clients, num_classes, rng, **its params) -> Partition``;
:func:`fedcore.partition.make_partition` seeds ``rng`` and picks its params.
"""
from ..registry import Registry

PARTITIONERS = Registry("partitioner")
