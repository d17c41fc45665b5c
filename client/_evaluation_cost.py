"""What evaluating a global model can cost a party, from the model's header alone.

A party is sent a model it did not choose.  Before it decodes anything or reserves
any ε, it bounds the memory and the work of decoding, compiling and predicting from
what :func:`protocol.peek_global_model` reads (bytes, releases, trees, nodes, the
embedded schema's size) and from its own policy and schema (the grid at its
``max-n-bins``, its classes): never from its data, so a refusal says nothing about
the data (privacy invariant 4).

Memory (an upper bound, in bytes; the benchmark ``bench_party_eval_memory.py``
checks it against measured peaks)::

    BYTES_FACTOR * n_bytes                  the model, its parsed releases, canonical copies
  + (NODE_BYTES + 24 * n_classes) * n_nodes  node arrays (decoded and merged), upb fields,
                                             validation temporaries, routing (17 bytes),
                                             leaf counts and distributions (float64 per class)
  + TREE_BYTES * n_trees + RELEASE_BYTES * n_releases   per-tree arrays, per-release objects
  + leaf-mask tables (at most :func:`edprf_core._leafmask.leafmask_budget`) and one
    compile block, a dense routing table (at most :func:`edprf_core._predict.dense_budget`),
    prediction blocks (:data:`PREDICT_BLOCK_BYTES`, independent of the model)

Every term is linear in the header's counts: the compiled form no longer grows with
nodes x grid codes (routing keeps 17 bytes per node; leaf-mask tables are built only
within their budget), so a model's size bounds its cost.  Memory that grows with the
party's held-out rows (codes, one row of votes per row) is the party's own data and
is not part of the model's cost.

Work (time), in work units of about one microsecond each on the benchmark machine
(``benchmarks/bench_party_eval_memory.py`` measures it against the estimate)::

    RELEASE_WORK * n_releases     per release: its envelope decoded, its grid rebuilt from the
                                  schema, its structure checked, its part object (about 4-5 ms)
  + TREE_WORK * n_trees           per tree: offsets, validation, bookkeeping
  + NODE_WORK * n_nodes           per node: decoding, checks, routing arrays
  + n_bytes // BYTES_PER_WORK     parsing the bytes themselves (large counts, unknown fields)
  + n_schema_bytes                parsing the embedded schema once
  + compile cells // CELLS_PER_WORK   the leaf-mask tables, at most
                                  :data:`edprf_core._leafmask.MAX_COMPILE_CELLS` node x code cells

Decoding a release costs far more than its bytes suggest (a 2 KB release with one
tree costs as much as 2,500 nodes of a large one), so a model of many small releases
is the slow shape inside a byte limit: 1,825 one-tree releases took 12-29 s where an
honest model of the same bytes took about 1 s.  The party refuses, before anything is
decoded or reserved, a model with more releases than ``max-evaluation-parts``
(default 512: an honest 300-party federation passes) or whose work estimate passes
``max-evaluation-work`` (default 10**7 units, about 10 s: every model inside the other
default limits passes it, so it binds when an operator lowers it or raises the others).
Prediction then costs at most ``n_trees * (max_depth + 1) + n_releases * n_classes``
vectorized steps per held-out row (``max_depth`` from the party's own policy: deeper
releases are refused on decode; the second term is the bounded mean across parts).
The held-out rows are the party's data, so no limit depends on their number: the
per-row cost is bounded by the trees and parts limits instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from edprf_core import Schema
from edprf_core.encoding import FeatureGrid
from edprf_core.prediction import COMPILE_BLOCK_BYTES, MAX_COMPILE_CELLS, dense_budget, leafmask_budget
from protocol import ModelHeader

from ._policy import PartyPolicy

__all__ = ["EvaluationCost", "evaluation_cost"]

BYTES_FACTOR = 8
"""Copies of the model's bytes held at once while it is parsed and checked."""
NODE_BYTES = 256
"""Bytes per node besides its class-sized rows (see the module docstring)."""
TREE_BYTES = 512
"""Bytes per tree (offsets, per-tree weights and budgets, block bookkeeping)."""
RELEASE_BYTES = 64 << 10
"""Bytes per release (its parsed messages, parameters, forest object, signature check)."""
PREDICT_BLOCK_BYTES = 192 << 20
"""Temporaries of prediction blocks, bounded by the block sizes of :mod:`edprf_core.prediction`."""
RELEASE_WORK = 5_000
"""Work units (about 1 us each) to decode, check and set up one release, whatever its size."""
TREE_WORK = 200
"""Work units per tree (offsets, validation, bookkeeping)."""
NODE_WORK = 2
"""Work units per node (decoding, structure checks, routing arrays)."""
BYTES_PER_WORK = 16
"""Bytes parsed per work unit."""
CELLS_PER_WORK = 64
"""Leaf-mask node x code cells compiled per work unit."""
SCHEMA_FACTOR = 64
"""Memory per byte of the embedded schema text (parsed TOML, grid, fingerprint)."""


@dataclass(frozen=True)
class EvaluationCost:
    """Upper bounds of evaluating one model, computed before it is decoded.

    Attributes
    ----------
    memory_bytes : int
        Peak memory of decoding, compiling and predicting, beyond the party's data.
    work_units : int
        Work to decode and compile, in units of about one microsecond on the benchmark
        machine (linear in releases, trees, nodes and bytes; see the module docstring).
    steps_per_row : int
        Vectorized steps per held-out row: tree levels plus the parts' bounded mean.
    """

    memory_bytes: int
    work_units: int
    steps_per_row: int


def evaluation_cost(header: ModelHeader, schema: Schema, policy: PartyPolicy) -> EvaluationCost:
    """Bound the memory and work of evaluating the model behind ``header``.

    Reads the header, the party's public schema and its policy, never its data: a
    refusal built on the result is the same for every dataset (privacy cost: none).
    """
    n_classes = schema.n_classes
    codes = int(sum(FeatureGrid.from_schema(schema, policy.max_n_bins).n_codes))
    memory = (
        BYTES_FACTOR * header.n_bytes
        + SCHEMA_FACTOR * header.schema_toml_bytes
        + (NODE_BYTES + 24 * n_classes) * header.n_nodes
        + TREE_BYTES * header.n_trees
        + RELEASE_BYTES * header.n_releases
        + leafmask_budget(header.n_nodes)
        + COMPILE_BLOCK_BYTES
        + dense_budget(header.n_nodes)
        + PREDICT_BLOCK_BYTES
    )
    work = (
        RELEASE_WORK * header.n_releases
        + TREE_WORK * header.n_trees
        + NODE_WORK * header.n_nodes
        + header.n_bytes // BYTES_PER_WORK
        + header.schema_toml_bytes
        + min(MAX_COMPILE_CELLS, header.n_nodes * codes) // CELLS_PER_WORK
    )
    return EvaluationCost(
        memory_bytes=int(memory),
        work_units=int(work),
        steps_per_row=int(header.n_trees) * (policy.max_depth + 1) + int(header.n_releases) * n_classes,
    )
