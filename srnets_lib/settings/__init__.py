"""Settings: params files, a run's scientific settings and its key, requests, the paper's paradigms."""
