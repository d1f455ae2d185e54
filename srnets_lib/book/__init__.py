"""The book: sections, pages, the scorecard, figures and tables."""
