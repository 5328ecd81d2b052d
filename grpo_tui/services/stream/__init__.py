"""Reading a run as it grows: the events file folded by byte offset into series of min/max/mean blocks, the
monitor's reader thread and its backlog child, the log follower, and the plain one-line-per-step view.
"""
