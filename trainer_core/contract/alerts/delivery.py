"""Sending one alert to one URL, once: the step the run's root repeats with retries, and `notify-test` takes.

A webhook (``http``/``https``) gets one POST of the body its format says (``targets.request_body``: Slack,
Discord, plain text or the JSON record), with no redirect followed. Any other scheme goes through apprise,
which knows the service behind it (mail, Telegram, Teams, Matrix, ntfy, Pushover, PagerDuty, …): a title
and a body of one field per line. Either way a failure is a ``DeliveryError``: a reason in words with no
secret of the URL in it, and whether trying again may help. Timeouts bound every attempt.
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

from trainer_core.contract.alerts.targets import Alert, Target, request_body
from trainer_core.contract.config.apprise_urls import quiet, scrub, secret_parts
from trainer_core.contract.run.severity import Severity

TIMEOUT_S = 5.0  # per request
RETRY_AFTER_MAX_S = 10.0


class DeliveryError(Exception):
    """One attempt that failed: ``reason`` in words (no secret in it), whether trying again may help."""

    def __init__(self, reason: str, retry: bool, wait: float | None = None):
        super().__init__(reason)
        self.reason, self.retry, self.wait = reason, retry, wait


def deliver(target: Target, alert: Alert, timeout: float = TIMEOUT_S) -> str:
    """Send ``alert`` to ``target`` once; what the far end said when it took it (``HTTP 200``, ``accepted by
    the mail server``), or DeliveryError."""
    if target.kind == "apprise":
        return send_apprise(target, alert, timeout)
    return post(target, alert, timeout)


# -- webhooks -----------------------------------------------------------------------------------------------


def post(target: Target, alert: Alert, timeout: float = TIMEOUT_S) -> str:
    """POST ``alert`` to ``target`` in its body format; DeliveryError unless it answers 2xx. Redirects are not
    followed (the body would go to a URL nobody configured); proxies come from the environment, as usual."""
    import urllib.request

    url, headers = target.endpoint()
    body, body_headers = request_body(target.format, alert)
    request = urllib.request.Request(url, data=body, method="POST", headers={**headers, **body_headers})
    request.add_header("User-Agent", "grpo-tui")
    try:
        with _get_opener().open(request, timeout=timeout) as response:
            response.read(4096)
            return f"HTTP {response.status}"
    except Exception as exc:
        raise _delivery_error(exc, target, timeout) from None


_opener = None
_opener_lock = threading.Lock()


def _get_opener():
    """One urllib opener for the process, built at the first request (urllib.request imports ssl and more),
    that does not follow redirects (urllib then raises the 3xx as an HTTPError)."""
    global _opener
    with _opener_lock:
        if _opener is None:
            import urllib.request

            class NoRedirect(urllib.request.HTTPRedirectHandler):
                def redirect_request(self, req, fp, code, msg, headers, newurl):
                    return None

            _opener = urllib.request.build_opener(NoRedirect)
        return _opener


def _delivery_error(exc: BaseException, target: Target, timeout: float) -> DeliveryError:
    import http.client
    import ssl
    import urllib.error

    if isinstance(exc, urllib.error.HTTPError):
        code = exc.code
        if 300 <= code < 400:
            return DeliveryError(f"HTTP {code}: the URL redirects elsewhere, which is not followed", False)
        wait = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
        return DeliveryError(scrub(f"HTTP {code} {exc.reason}", target.secrets()), code == 429 or code >= 500, wait)
    inner: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(inner, ConnectionRefusedError):
        reason, retry = "connection refused", True
    elif isinstance(inner, (TimeoutError, socket.timeout)):
        reason, retry = f"no answer within {timeout:g} s", True
    elif isinstance(inner, socket.gaierror):
        reason, retry = f"host {urlsplit(target.url).hostname} not found", True
    elif isinstance(inner, ssl.SSLError):
        reason, retry = f"TLS error: {getattr(inner, 'reason', None) or inner}", False
    elif isinstance(inner, ConnectionResetError):
        reason, retry = "the connection was closed before an answer", True
    elif isinstance(inner, http.client.HTTPException):
        reason, retry = f"not a valid HTTP answer ({type(inner).__name__})", True
    elif isinstance(inner, OSError):
        reason, retry = (inner.strerror or type(inner).__name__).lower(), True
    else:
        reason, retry = f"{type(exc).__name__}: {inner}", False
    return DeliveryError(scrub(reason, target.secrets()), retry)


def _retry_after(value: str | None) -> float | None:
    try:
        return min(max(float(value), 0.0), RETRY_AFTER_MAX_S) if value else None
    except ValueError:
        return None


# -- apprise ------------------------------------------------------------------------------------------------


def apprise_message(alert: Alert) -> tuple[str, str]:
    """The title and the body an apprise service gets: the headline, then one field per line."""
    fields = [
        ("Run", alert.run_id if alert.event != "test" else None),
        ("Host", alert.host),
        ("Project", alert.project),
        ("Rule", alert.rule),
        ("Severity", alert.severity.value if alert.event != "run_end" or alert.rule else None),
        ("Status", alert.status),
        ("Step", str(alert.step) if alert.event != "test" else None),
        ("Message", alert.message),
        ("Advice", alert.advice),
    ]
    body = "\n".join(f"{name}: {' '.join(value.split())}" for name, value in fields if value)
    return f"grpo-tui: {alert.headline()}", body


def _notify_type(apprise, alert: Alert):
    if alert.severity is Severity.CRITICAL or alert.status == "failed":
        return apprise.NotifyType.FAILURE
    if alert.status == "completed":
        return apprise.NotifyType.SUCCESS
    return apprise.NotifyType.WARNING if alert.severity is Severity.WARN else apprise.NotifyType.INFO


def send_apprise(target: Target, alert: Alert, timeout: float = TIMEOUT_S) -> str:
    """Send ``alert`` through apprise to the service ``target`` names; DeliveryError with what apprise said."""
    apprise = quiet()
    secrets = secret_parts(target.url)
    service = apprise.Apprise.instantiate(target.url.strip(), suppress_exceptions=True)
    if service is None:
        raise DeliveryError(f"apprise cannot read this {target.masked} URL (see docs/alerts.md)", False)
    for name in ("socket_connect_timeout", "socket_read_timeout"):
        if hasattr(service, name):
            setattr(service, name, timeout)
    sender = apprise.Apprise()
    sender.add(service)
    said: list[str] = []
    title, body = apprise_message(alert)
    try:
        result = sender.notify(
            body=body,
            title=title,
            notify_type=_notify_type(apprise, alert),
            body_format=apprise.NotifyFormat.TEXT,
            timeout=timeout * 2,
            log_callback=lambda entry, _plugin: said.append(str(entry.message)),
            log_level=apprise.logging.WARNING,
        )
    except Exception as exc:  # a plugin's bug: one failed attempt, never the sender's end
        raise DeliveryError(scrub(f"{type(exc).__name__}: {exc}", secrets), False) from None
    if result:
        return f"accepted by the {getattr(service, 'service_name', None) or target.masked} service"
    status = str(getattr(getattr(result, "status", None), "value", getattr(result, "status", "")))
    if "timeout" in status.lower():
        raise DeliveryError(f"no answer within {timeout * 2:g} s", True)
    reason = " ".join(dict.fromkeys(" ".join(s.split()) for s in said)) or "the service did not take the alert"
    raise DeliveryError(scrub(reason, secrets), True)
