"""Schedules (seed 001): cadences, their store, and a runner that fires them."""
