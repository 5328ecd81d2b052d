"""A run's alerts as they are sent: the notifier that follows the events, queues and retries each delivery
through ``contract.alerts`` without ever blocking training. Used by the root and by a foreground run.
"""
