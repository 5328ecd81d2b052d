"""The app's widgets, by screen area: charts (one base, the monitor's grid, compare's overlay), tables, panels,
the config form and its pickers. A widget draws what it is given and posts messages; it imports no screen, and
text from runs and hosts reaches it as literal text (``safe_text``).
"""
