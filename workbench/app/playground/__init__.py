"""The playground pane (pane 4): replay a logged query, move the vector/FTS weights and
the fusion, judge what should have come back and watch recall move; its widgets beside it."""
