"""Hybrid retrieval: query building, the legs' normalisation and their fusion."""

from core.retrieval.fts_query import (
    fts_match_expression,
    query_terms,
    terms_expression,
)
from core.retrieval.fusion import FUSIONS, Fused, LegHit, fuse

__all__ = ["FUSIONS", "Fused", "LegHit", "fts_match_expression", "fuse", "query_terms",
           "terms_expression"]
