"""Tooling outside the library's core: the speed benchmark, the headless-browser check."""
