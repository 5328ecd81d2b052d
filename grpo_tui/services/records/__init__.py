"""The records the app passes between its layers and over the wire: a run's row, a stop's outcome, and the
checked messages and replies a remote host sends. The bottom layer of the services; imports only the
contract.
"""
