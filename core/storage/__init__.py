"""The storage layer: the only code in the project that speaks SQL."""
