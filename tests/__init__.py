"""vcbus tests: unit (no broker), integration (real broker), e2e (processes)."""
