"""What each server can tell us: its kind (`detect`, from the `documents` it publishes), the window it
serves (`windows`), exact token counts with its chat template (`counters`), and, measured, how it
overflows (`probe`). `kind` is the shape of one registry entry; the entries are in `aforo.server_kinds`."""
