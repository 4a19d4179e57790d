"""Schedules (oxydra): cadences, their store, and a runner that fires them."""
