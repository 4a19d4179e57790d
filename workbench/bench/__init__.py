"""``workbench bench …``: benchmarks that print figures and drills that try to break the
memory (crash, disk full, concurrent writers, isolation attacks). The command group is in
:mod:`workbench.bench.commands`."""
