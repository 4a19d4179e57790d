"""Rolling summaries, compaction into archives, and consolidation of idle conversations."""
