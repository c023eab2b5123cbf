"""The course kit: each exercise's check (exercises) and the timing of every solution (timings)."""
