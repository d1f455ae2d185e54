"""How a claim is judged, whatever the section: the one statistical rule (verdict.py: per seed,
every part with its own noise, one outcome per claim), the noise of a score from its stored
predictions (noise.py), and the words pages and the scorecard write (verdict_text.py). The claims
themselves are the sections' (sections/claims.py)."""
