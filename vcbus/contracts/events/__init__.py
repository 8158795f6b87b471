"""One tagged union of events per topic (DESIGN §2)."""
