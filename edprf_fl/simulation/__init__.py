"""Simulated federations on one machine: partition a dataset, run parties and coordinator on Flower."""

from ._engine import ENGINES, simulate_federation
from ._partition import Partitioning, partition_rows
from ._workspace import write_workspace

__all__ = ["ENGINES", "Partitioning", "partition_rows", "simulate_federation", "write_workspace"]
