"""The run store: one directory per run, its typed result, moving a store to new keys."""
