"""Training one run: its parts built from its config (prepare) and the loop that trains, selects
and stores it (fit), above the settings and the run store it reads and writes."""
