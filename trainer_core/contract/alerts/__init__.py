"""Alerts: where a run's warnings and its end are sent, and the body each kind of target gets.

Owns the run's targets and the user's notify settings (``targets``) and one attempt at sending an alert
(``delivery``: a webhook's POST, or apprise). Following a run and retrying is the root's
(``trainer_core/alerting/notify.py``); a URL's checks and masking belong to the config (``config/notify_urls.py``,
``config/apprise_urls.py``).

May import: ``config/``, ``health/``, ``run/``, the standard library, PyYAML and apprise (lazily).
"""
