"""What this machine serves: the event feed a remote viewer mirrors (``grpo-tui events --mirror``) and the
app served to a browser (``grpo-tui serve``, textual-serve on 127.0.0.1 with a token).
"""
