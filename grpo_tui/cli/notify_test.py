"""``grpo-tui notify-test``: send one test alert to each URL and say whether it arrived, before a run counts on it.

It sends exactly as a run's root does (``trainer_core/contract/alerts/delivery.py``: a webhook's POST, or
apprise for any other scheme), once, with the same timeout. URLs are shown masked. With no URL it tests
``$GRPO_TUI_NOTIFY`` and the settings file's, which keeps a URL off the command line.
"""

from __future__ import annotations

import socket

from trainer_core.contract.alerts.delivery import TIMEOUT_S, DeliveryError, deliver
from trainer_core.contract.alerts.targets import Alert, SettingsError, Target, load_settings
from trainer_core.contract.config.notify_urls import env_urls, is_masked, mask, url_problem
from trainer_core.contract.run.severity import Severity

from ..safe_text import clean
from .common import BadInput

MESSAGE = "This is a test. If you read it, grpo-tui's alerts reach you here."
ADVICE = "Nothing to do. A run sends its warnings, an auto-stop and its end to this URL."


def register(sub) -> None:
    parser = sub.add_parser(
        "notify-test",
        help="send a test alert to notify URLs (webhook or apprise) and say whether each arrived (docs/alerts.md)",
        description="Send one test alert to each URL, as a run sends its alerts, and say whether it arrived. "
        "Without URLs: those of $GRPO_TUI_NOTIFY and the settings file (a URL on a command line is visible "
        "to other users of this machine in `ps` while the command runs). Exit status 0 when every alert "
        "arrived, 1 when one did not, 2 for a URL that cannot be sent to.",
    )
    parser.add_argument("urls", nargs="*", metavar="URL", help="a webhook URL (https://…) or an apprise URL")
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT_S, metavar="S", help=f"seconds per URL (default {TIMEOUT_S:g})"
    )
    parser.set_defaults(handler=run)


def chosen_urls(args) -> list[str]:
    urls = list(args.urls) or env_urls()
    if not urls:
        try:
            urls = list(load_settings().urls)
        except SettingsError as exc:
            raise BadInput(str(exc)) from None
    if not urls:
        raise BadInput(
            "no URL to test: give one (grpo-tui notify-test URL), or set $GRPO_TUI_NOTIFY or notify: in the settings file"
        )
    for url in urls:
        problem = "is masked: give the real URL" if is_masked(url) else url_problem(url)
        if problem:
            raise BadInput(f"notify URL {mask(url)} {problem}")
    if not args.timeout > 0:
        raise BadInput(f"--timeout must be a number of seconds above 0, got {args.timeout:g}")
    return list(dict.fromkeys(urls))


def run(args) -> int:
    urls = chosen_urls(args)
    host = socket.gethostname()
    alert = Alert("test", "notify-test", host, severity=Severity.INFO, message=MESSAGE, advice=ADVICE)
    missed = 0
    for url in urls:
        target = Target(url)
        try:
            said = deliver(target, alert, args.timeout)
        except DeliveryError as exc:
            missed += 1
            print(clean(f"{target.masked}: not delivered: {exc.reason}"), flush=True)
        else:
            print(clean(f"{target.masked}: delivered ({said})"), flush=True)
    return 1 if missed else 0
