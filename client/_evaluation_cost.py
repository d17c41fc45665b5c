"""What evaluating a global model can cost a party, from the model's header alone.

A party is sent a model it did not choose.  Before it decodes anything or reserves
any ε, it bounds the memory and the work of decoding, compiling and predicting from
what :func:`protocol.peek_global_model` reads (bytes, releases, trees, nodes, the
embedded schema's size) and from its own policy and schema (the grid at its
``max-bins``, its classes): never from its data, so a refusal says nothing about
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

Work: decoding and compiling are linear in bytes + nodes + releases (plus at most
:data:`edprf_core._leafmask.MAX_COMPILE_CELLS` node x code cells for the leaf-mask
tables); prediction costs at most ``n_trees * (max_depth + 1)`` vectorized steps
per held-out row, ``max_depth`` from the party's own policy (deeper releases are
refused on decode).
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
RELEASE_STEPS = 20_000
"""Decoding work per release, in node-equivalents (its own parse, checks and objects)."""
SCHEMA_FACTOR = 64
"""Memory per byte of the embedded schema text (parsed TOML, grid, fingerprint)."""


@dataclass(frozen=True)
class EvaluationCost:
    """Upper bounds of evaluating one model, computed before it is decoded.

    Attributes
    ----------
    memory_bytes : int
        Peak memory of decoding, compiling and predicting, beyond the party's data.
    compile_steps : int
        Node-level work to decode and compile (linear in bytes and nodes).
    steps_per_row : int
        Tree steps per held-out row.
    """

    memory_bytes: int
    compile_steps: int
    steps_per_row: int


def evaluation_cost(header: ModelHeader, schema: Schema, policy: PartyPolicy) -> EvaluationCost:
    """Bound the memory and work of evaluating the model behind ``header`` (no privacy cost: public inputs only)."""
    n_classes = schema.n_classes
    codes = int(sum(FeatureGrid.from_schema(schema, policy.max_bins).n_codes))
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
    compile_steps = (
        header.n_bytes
        + header.n_nodes
        + RELEASE_STEPS * header.n_releases
        + min(MAX_COMPILE_CELLS, header.n_nodes * codes)
    )
    return EvaluationCost(
        memory_bytes=int(memory),
        compile_steps=int(compile_steps),
        steps_per_row=int(header.n_trees) * (policy.max_depth + 1),
    )
