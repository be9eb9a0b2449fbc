"""OR-tools CP-SAT backend (interval variables, NoOverlap, reservoir memory)."""
