"""Modal screens: help, confirmation, explanations, long work."""
