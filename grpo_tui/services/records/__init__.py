"""The records the app passes between its layers and over the wire: a run's row, a stop's outcome, a GPU, a
host's ``info``, and the checked messages and replies a remote host sends. Each record is declared once, its
fields with their JSON keys and checks (``fields.py``), and is its own encoder and decoder. The bottom layer of
the services; imports only the contract.
"""
