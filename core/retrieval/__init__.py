"""Hybrid retrieval: query terms, the legs' normalisation and their fusion."""

from core.retrieval.fts_query import query_terms
from core.retrieval.fusion import FUSIONS, Fused, LegHit, fuse

__all__ = ["FUSIONS", "Fused", "LegHit", "fuse", "query_terms"]
