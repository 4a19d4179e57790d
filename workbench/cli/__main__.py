"""``python -m workbench.cli``: the console script, for subprocesses that need an interpreter."""

from workbench.cli.root import main

main()
