"""One tagged union of events per topic (docs/design.md#topics)."""
