"""Sweeps and plans: the runs behind a set of pages, executors, what a sweep costs."""
