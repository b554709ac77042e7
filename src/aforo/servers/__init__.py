"""What each server can tell us: its kind (`detect`), the window it serves (`windows`), exact token
counts with its chat template (`counters`), and, measured, how it overflows (`probe`)."""
