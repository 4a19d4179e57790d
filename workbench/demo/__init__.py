"""``workbench demo``: :mod:`workbench.demo.build` writes the demo memory through the engine
from the content modules beside it."""
