"""The ``workbench`` command: :mod:`workbench.cli.root` is the click group, one module per
command group beside it. Kept empty so importing a command module loads only what it needs."""
