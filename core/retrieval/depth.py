"""How many candidates each leg of a query returns before fusion and the boosts.

The fusion normalises each leg over the candidates it returned, and the boosts
(:mod:`core.retrieval.boosts`) only lift candidates some leg returned: a chunk the vector
leg ranked 60th scores 0 on that leg when the leg stops at 50, and a neighbour beyond the
pool lifts nothing. So the depth changes a query's top 10, not just how far it can reach.
Measured on the LoCoMo dev conversations (recall@10 of a ``top_k=10`` query, multi-hop
questions): depth 50 gives 0.393 and 0.389, depth 250 gives 0.458 and 0.488; chosen on one
conversation, the other gains (README "Evaluation").
"""

from __future__ import annotations

from core import inputs
from core.errors import InvalidInput

# sqlite-vec answers a KNN query for at most 4096 neighbours: no leg is asked for more.
MAX_DEPTH = 4096
# Every other query's legs: a namespace query's deeper ones cost 3-5x in fetching and
# re-ranking across thousands of sessions (``workbench bench query``), and a keyword or
# vector query ranks by its one leg's order, which no deeper pool changes.
SHALLOW_DEPTH = 50


def leg_depth(configured: int, asked: object, *, fused_session: bool, top_k: int) -> int:
    """The candidates each leg returns: ``asked``, else ``configured`` (the config's
    ``candidate_depth``) for a hybrid query of one session and :data:`SHALLOW_DEPTH` for
    any other; never fewer than 5 x ``top_k``. InvalidInput names an ``asked`` out of range."""
    if asked is None:
        chosen = configured if fused_session else SHALLOW_DEPTH
    elif isinstance(asked, bool) or not isinstance(asked, int) or not 1 <= asked <= MAX_DEPTH:
        raise InvalidInput(f"candidate_depth must be an integer from 1 to {MAX_DEPTH}, "
                           f"got {inputs.shown(asked)}")
    else:
        chosen = asked
    return min(max(chosen, top_k * 5), MAX_DEPTH)
