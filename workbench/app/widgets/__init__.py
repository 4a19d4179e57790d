"""Widgets the panes share: the status header, score bars, the sweep plot."""
