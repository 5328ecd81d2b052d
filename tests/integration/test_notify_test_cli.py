"""``grpo-tui notify-test``: one test alert per URL through the real senders (a webhook receiver and an SMTP
server on 127.0.0.1), whether it arrived in the output and the exit status, and no secret of a URL shown."""

from __future__ import annotations

import os

from ..helpers import cli, free_port
from .test_notify import SECRET, Mailbox, Receiver

NO_SETTINGS = {"GRPO_TUI_SETTINGS": os.devnull, "GRPO_TUI_NOTIFY": ""}


def notify_test(*args, env=None):
    result = cli("notify-test", *args, "--timeout", "3", env={**NO_SETTINGS, **(env or {})}, timeout=120)
    assert SECRET not in result.stdout + result.stderr
    return result


def test_alerts_that_arrive_and_alerts_that_do_not():
    receiver, mailbox = Receiver(), Mailbox()
    try:
        closed = free_port()
        webhook = receiver.url(f"/hook?token={SECRET}")
        result = notify_test(
            webhook,
            f"json://127.0.0.1:{receiver.port}/apprise?token={SECRET}",
            mailbox.url(),
            mailbox.url(password="not-" + SECRET),
            f"json://127.0.0.1:{closed}/x?token={SECRET}",
        )
        lines = result.stdout.splitlines()
        assert lines == [
            f"http://127.0.0.1:{receiver.port}/***: delivered (HTTP 200)",
            "json://***: delivered (accepted by the JSON service)",
            "mailto://***: delivered (accepted by the E-Mail service)",
            lines[3],
            lines[4],
        ], result.stdout
        assert lines[3].startswith("mailto://***: not delivered: ") and lines[4].startswith("json://***: not delivered")
        assert result.returncode == 1
        [hook] = receiver.bodies("/hook")
        assert hook["event"] == "test" and "test alert" in hook["text"]
        assert [r.json()["title"] for r in receiver.requests if r.path == "/apprise"] == [
            f"grpo-tui: test alert from {os.uname().nodename}"
        ]
        assert len(mailbox.mails) == 1 and "alerts reach you here" in mailbox.mails[0]

        # every alert arrives: exit 0; the URLs may come from $GRPO_TUI_NOTIFY, off the command line
        again = notify_test(env={"GRPO_TUI_NOTIFY": f"{webhook} {mailbox.url()}"})
        assert again.returncode == 0 and again.stdout.count(": delivered") == 2, again.stdout
        assert len(mailbox.mails) == 2
    finally:
        receiver.server.shutdown()
        mailbox.server.stop()


def test_a_url_that_cannot_be_sent_to_is_refused_before_sending(tmp_path):
    for url, says in (
        (f"nosuch://{SECRET}", "nosuch://*** has the scheme 'nosuch://', which is neither http(s)"),
        (f"tgram://{SECRET}", "tgram://*** is not a tgram:// URL apprise can read"),
        ("https://hooks.slack.com/***", "is masked: give the real URL"),
    ):
        result = notify_test(url)
        assert result.returncode == 2 and says in result.stderr, result.stderr
    result = notify_test()
    assert result.returncode == 2 and "no URL to test" in result.stderr
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"notify:\n  - http://127.0.0.1:{free_port()}/in?token={SECRET}\n")
    settings.chmod(0o600)
    result = notify_test(env={"GRPO_TUI_SETTINGS": str(settings)})
    assert result.returncode == 1 and "/***: not delivered: connection refused" in result.stdout, result.stdout
