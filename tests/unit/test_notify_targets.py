"""Notify URLs: masked wherever they are shown, checked like every config value, matched to a body format,
merged with the user's settings file (refused when others may write it), and kept real only in notify.json."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_tui.field_spec import field_spec
from trainer_core.contract.alerts.targets import (
    SETTINGS_ENV,
    Alert,
    NotifySettings,
    SettingsError,
    Target,
    body_format,
    load_settings,
    request_body,
    run_targets,
    settings_file,
)
from trainer_core.contract.config.notify_urls import NOTIFY_FILE, is_masked, mask, read_run_urls, secure_config
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.severity import Severity

from .test_config import parse

VALID = dict(model="m", rl_env_module="env.py", rl_env_class="Env")
SLACK = "https://hooks.slack.com/services/T0AAA/B0BBB/slacksecret123"
DISCORD = "https://discord.com/api/webhooks/1234/discordsecret"


# -- masking ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,masked",
    [
        (SLACK, "https://hooks.slack.com/***"),
        (DISCORD, "https://discord.com/***"),
        ("https://discordapp.com/api/webhooks/1/x", "https://discordapp.com/***"),
        ("https://ntfy.sh/my-private-topic", "https://ntfy.sh/***"),
        ("http://127.0.0.1:8080/hook?token=SECRET", "http://127.0.0.1:8080/***"),
        ("https://alice:hunter2@alerts.example.com/in", "https://alerts.example.com/***"),
        ("https://EXAMPLE.com", "https://example.com/***"),
        ("http://[::1]:9000/x?k=v", "http://[::1]:9000/***"),
        ("http://127.0.0.1:8080/a?token=S#slack", "http://127.0.0.1:8080/***#slack"),  # a format is no secret
        ("http://127.0.0.1:8080/a#mysecret", "http://127.0.0.1:8080/***"),
        ("not a url", "***"),
    ],
)
def test_a_masked_url_keeps_only_scheme_host_port_and_format(url, masked):
    assert mask(url) == masked
    assert is_masked(mask(url)) and mask(mask(url)) == mask(url)
    assert not is_masked(url)


@given(
    secret=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=6, max_size=40),
    place=st.sampled_from(["path", "query", "user", "password", "fragment"]),
)
def test_no_secret_part_survives_masking(secret, place):
    url = {
        "path": f"https://hooks.example.org/services/{secret}",
        "query": f"https://hooks.example.org/in?token={secret}&x=1",
        "user": f"https://{secret}@hooks.example.org/in",
        "password": f"https://bot:{secret}@hooks.example.org/in",
        "fragment": f"https://hooks.example.org/in#{secret}",
    }[place]
    assert secret not in mask(url)
    assert secret not in Target(url).masked


APPRISE = [
    "mailto://alice:hunter2@smtp.example.com?to=ops@example.com",
    "tgram://123456789:AAbbCCddSECRETtoken/-100123",
    "ntfy://my-private-topic",
    "json://bot:s3cret@alerts.example.com:8443/in",
    "pover://userkey@apptoken",
    "matrix://alice:hunter2@matrix.example.org/#ops",
    "pagerduty://integrationkey@apikey",
]


@pytest.mark.parametrize("url", APPRISE)
def test_an_apprise_url_is_masked_to_its_scheme(url):
    """Which part of an apprise URL is a secret depends on the service (a Telegram URL's host is its bot
    token): only the scheme is kept."""
    target = Target(url)
    assert target.kind == "apprise" and target.masked == url.split("://")[0] + "://***"
    assert is_masked(target.masked) and not is_masked(url)
    assert all(part not in target.masked for part in target.secrets() if len(part) > 8)


@given(secret=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=6, max_size=40))
def test_an_apprise_message_is_scrubbed_of_every_part_of_its_url(secret):
    from trainer_core.contract.config.apprise_urls import scrub

    for url in (
        f"tgram://{secret}/-100",
        f"mailto://u:{secret}@h.example.com",
        f"ntfy://{secret}",
        f"json://h/{secret}",
    ):
        said = f"Failed to send to {url} (token {secret}) for {url.split('://')[1]}"
        assert secret not in scrub(said, Target(url).secrets())


# -- formats and bodies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,fmt",
    [
        (SLACK, "slack"),
        (DISCORD, "discord"),
        ("https://discordapp.com/api/webhooks/1/x", "discord"),
        ("https://ntfy.sh/topic", "text"),
        ("https://example.com/hook", "json"),
        ("http://127.0.0.1:9/hook#slack", "slack"),
        ("http://127.0.0.1:9/hook#discord", "discord"),
        (SLACK + "#json", "json"),
        ("https://ntfy.example.com/topic#text", "text"),
    ],
)
def test_the_body_format_comes_from_the_fragment_else_the_host(url, fmt):
    assert body_format(url) == fmt


ALERT = Alert(
    "warning",
    "20260101-000000-000-abcdef",
    "gpu-box",
    rule="kl_explosion",
    severity=Severity.CRITICAL,
    step=7,
    message="KL is 3 <!channel> @everyone",
    advice="Lower --lr.",
    time=1.0,
)


def test_each_body_format_carries_the_alert():
    slack, headers = request_body("slack", ALERT)
    assert headers["Content-Type"] == "application/json"
    data = json.loads(slack)
    assert list(data) == ["text"] and "kl_explosion" in data["text"] and "gpu-box" in data["text"]
    assert "<!channel>" not in data["text"] and "&lt;!channel&gt;" in data["text"]  # no mention, no link
    discord = json.loads(request_body("discord", ALERT)[0])
    assert discord["content"] == ALERT.text() and discord["allowed_mentions"] == {"parse": []}
    long = Alert("warning", "r", "h", message="x" * 5000)
    assert len(json.loads(request_body("discord", long)[0])["content"]) == 2000
    record = json.loads(request_body("json", ALERT)[0])
    assert {k: record[k] for k in ("event", "run_id", "host", "rule", "severity", "step", "advice")} == {
        "event": "warning",
        "run_id": ALERT.run_id,
        "host": "gpu-box",
        "rule": "kl_explosion",
        "severity": "critical",
        "step": 7,
        "advice": "Lower --lr.",
    }
    assert record["message"] == ALERT.message and record["text"] == ALERT.text() and record["status"] is None
    text, headers = request_body("text", ALERT)
    assert text.decode() == ALERT.text() and headers["Priority"] == "high" and "kl_explosion" in headers["Title"]


def test_the_text_line_says_what_happened():
    assert ALERT.text().startswith("[grpo-tui] CRITICAL kl_explosion at step 7 in run 20260101-000000-000-abcdef")
    end = Alert("run_end", "r", "h", rule="crash_oom", status="failed", step=4, message="The GPU ran out of memory.")
    assert end.text() == "[grpo-tui] run r on h failed at step 4 (crash_oom): The GPU ran out of memory."
    assert "\n" not in Alert("warning", "r", "h", message="two\nlines").text()


def test_a_target_sends_no_fragment_and_carries_userinfo_as_basic_auth():
    url, headers = Target("https://bot:pa%40ss@hooks.example.org/in?x=1#json").endpoint()
    assert url == "https://hooks.example.org/in?x=1"
    assert headers == {"Authorization": "Basic Ym90OnBhQHNz"}  # bot:pa@ss
    assert Target("http://127.0.0.1:9").endpoint() == ("http://127.0.0.1:9/", {})


def test_a_target_wants_warnings_from_its_severity_up_and_every_end():
    target = Target("https://x.org/h", Severity.WARN)
    assert not target.wants(Alert("warning", "r", "h", severity=Severity.INFO))
    assert target.wants(Alert("warning", "r", "h", severity=Severity.WARN))
    critical_only = Target("https://x.org/h", Severity.CRITICAL)
    assert not critical_only.wants(Alert("warning", "r", "h", severity=Severity.WARN))
    assert critical_only.wants(Alert("auto_stop", "r", "h", severity=Severity.INFO))
    assert critical_only.wants(Alert("run_end", "r", "h", severity=Severity.INFO, status="completed"))


# -- validation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,says",
    [
        ("ftpx://files.example.com/x?token=SECRET", "neither http(s) nor a service apprise knows"),
        ("hooks.slack.com/services/SECRET", "must start with a scheme and ://"),
        ("tgram://SECRET", "not a tgram:// URL apprise can read"),
        ("https:///SECRET", "has no host"),
        ("https://example.com/SECRET#slak", "not a body format"),
        ("https://example.com:99999/SECRET", "not a valid URL"),
        ("https://example.com/SECRET other", "contains whitespace"),
    ],
)
def test_a_bad_url_is_refused_masked_with_the_fix(url, says):
    [problem] = RunConfig(**VALID, notify=[url]).problems()
    assert problem.field == "notify" and says in str(problem)
    assert "SECRET" not in str(problem)
    assert "docs/alerts.md" in str(problem)


def test_good_urls_masked_ones_and_severities_pass():
    assert RunConfig(**VALID, notify=[SLACK, DISCORD, "http://127.0.0.1:1/x#json", mask(SLACK)]).problems() == []
    assert RunConfig(**VALID, notify=[*APPRISE, *(mask(u) for u in APPRISE)]).problems() == []
    [problem] = RunConfig(**VALID, notify_severity="loud").problems()  # pyright: ignore[reportArgumentType]
    assert problem.field == "notify_severity" and "info, warn, critical" in str(problem)
    [problem] = RunConfig.from_dict({**VALID, "notify": {"url": SLACK}}).problems()
    assert problem.field == "notify" and "must be a list of URLs" in str(problem) and "slacksecret" not in str(problem)


def test_flags_add_urls_to_the_files_and_argv_gives_them_back(tmp_path):
    path = RunConfig(**VALID, notify=[SLACK]).save(tmp_path / "c.yaml")
    config = parse(["--config", str(path), "--notify", DISCORD, "--notify", SLACK, "--notify-severity", "critical"])
    assert config.notify == [SLACK, DISCORD] and config.notify_severity == "critical"
    assert parse(["--model", "m", "--notify", SLACK]).notify == [SLACK]
    from grpo_tui.config_flags import config_to_argv

    assert parse(config_to_argv(config)) == config
    assert RunConfig.from_dict({**VALID, "notify": f"{SLACK} {DISCORD}"}).notify == [SLACK, DISCORD]
    assert RunConfig.from_dict({**VALID, "notify": None}).notify == []


def test_the_form_takes_urls_one_per_line_or_on_one_line():
    spec = field_spec("notify")
    assert spec.kind == "list" and spec.metavar == "URL" and spec.group == "health"
    assert spec.parse(f" {SLACK}\n{DISCORD}\n\n") == [SLACK, DISCORD] == spec.parse(f"{SLACK} {DISCORD}")
    assert spec.parse("") == [] and spec.format([SLACK, DISCORD]) == f"{SLACK} {DISCORD}"


# -- the settings file --------------------------------------------------------------------------------------


def write_settings(path, text, mode=0o600):
    path.write_text(text)
    path.chmod(mode)
    return path


def test_settings_file_is_found_like_the_hosts_file(tmp_path, monkeypatch):
    monkeypatch.delenv(SETTINGS_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings_file() == tmp_path / "xdg" / "grpo-tui" / "settings.yaml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings_file() == tmp_path / "home" / ".config" / "grpo-tui" / "settings.yaml"
    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path / "mine.yaml"))
    assert settings_file() == tmp_path / "mine.yaml"


def test_settings_give_urls_and_their_severity(tmp_path):
    path = write_settings(
        tmp_path / "settings.yaml", f"notify:\n  - {SLACK}\n  - {SLACK}\nnotify_severity: critical\nbell: true\n"
    )
    assert load_settings(path) == NotifySettings((SLACK,), Severity.CRITICAL, path)  # other readers' keys stay
    one = write_settings(tmp_path / "one.yaml", f"notify: {DISCORD}\n")
    assert load_settings(one) == NotifySettings((DISCORD,), None, one)
    assert load_settings(tmp_path / "missing.yaml").urls == ()
    assert load_settings(write_settings(tmp_path / "empty.yaml", "")).urls == ()
    assert load_settings(Path(os.devnull)).urls == ()


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_settings_file_others_may_write_is_refused(tmp_path, mode):
    path = write_settings(tmp_path / "settings.yaml", f"notify: [{SLACK}]\n", mode)
    with pytest.raises(SettingsError, match=r"Bad owner or permissions .* fix: chmod go-w"):
        load_settings(path)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)  # readable by others is allowed
    assert load_settings(path).urls == (SLACK,)


@pytest.mark.parametrize(
    "text,says",
    [
        (f"notfy: [{SLACK}]\n", "did you mean 'notify'"),
        ("notify: [ftp://host/slacksecret]\n", "nor a service apprise knows"),
        (f"notify: [{SLACK}]\nnotify_severity: loud\n", "must be one of info, warn, critical"),
        ("- just a list\n", "must be a mapping"),
        (f"notify: [{SLACK}\n", "is not valid YAML"),
        ("notify: ['https://hooks.slack.com/***']\n", "masked URL"),
    ],
)
def test_a_bad_settings_file_says_why_without_its_secrets(tmp_path, text, says):
    path = write_settings(tmp_path / "settings.yaml", text)
    with pytest.raises(SettingsError, match=says) as info:
        load_settings(path)
    assert "slacksecret" not in str(info.value) and str(path) in str(info.value)


# -- the run folder: real URLs in notify.json, masked ones in config.yaml -----------------------------------


def test_secure_config_moves_real_urls_into_a_private_file(tmp_path):
    config = RunConfig(**VALID, notify=[SLACK, "http://127.0.0.1:9/h?token=T#discord"])
    masked = secure_config(tmp_path, config)
    assert masked is not None and masked.notify == ["https://hooks.slack.com/***", "http://127.0.0.1:9/***#discord"]
    assert config.notify[0] == SLACK  # the caller's config is not changed
    assert read_run_urls(tmp_path) == config.notify
    assert stat.S_IMODE(os.stat(tmp_path / NOTIFY_FILE).st_mode) == 0o600
    assert secure_config(tmp_path, masked) is None  # nothing left to hide: config.yaml stays as it is
    assert secure_config(tmp_path, RunConfig(**VALID)) is None and read_run_urls(tmp_path) == config.notify


def test_run_targets_merge_the_run_and_the_settings(tmp_path):
    other = "https://ntfy.sh/alerts-topic"
    config = RunConfig(**VALID, notify=[SLACK, DISCORD], notify_severity="info")
    settings = NotifySettings((DISCORD, other), Severity.CRITICAL)
    targets, unmatched = run_targets(tmp_path, config, settings)
    assert [(t.url, t.min_severity, t.source) for t in targets] == [
        (SLACK, Severity.INFO, "run"),
        (DISCORD, Severity.INFO, "run"),  # in both: the run's
        (other, Severity.CRITICAL, "settings"),
    ]
    assert unmatched == []
    targets, _ = run_targets(tmp_path, RunConfig(**VALID), NotifySettings((other,)))
    assert [(t.url, t.min_severity) for t in targets] == [(other, Severity.WARN)]  # the run's severity by default


def test_a_masked_url_is_sent_to_only_through_its_real_one(tmp_path):
    config = RunConfig(**VALID, notify=[SLACK, DISCORD])
    masked = secure_config(tmp_path, config)
    assert masked is not None
    targets, unmatched = run_targets(tmp_path, masked)  # what a resumed run's root reads back
    assert [t.url for t in targets] == [SLACK, DISCORD] and unmatched == []
    trimmed = RunConfig(**VALID, notify=[mask(DISCORD)])  # a URL taken out of config.yaml is not sent to
    assert [t.url for t in run_targets(tmp_path, trimmed)[0]] == [DISCORD]
    copied = RunConfig(**VALID, notify=["https://hooks.slack.com/***"])  # a config copied from another run
    targets, unmatched = run_targets(tmp_path / "elsewhere", copied)
    assert targets == [] and unmatched == ["https://hooks.slack.com/***"]


def test_a_run_folder_never_writes_a_notify_url_into_config_yaml(tmp_path):
    """Every writer of config.yaml (creating the run, the trainer's hardware fallbacks) goes through save_config."""
    from trainer_core.contract.config.notify_urls import read_run_urls
    from trainer_core.contract.run.folder import RunFolder

    secret = "https://hooks.slack.com/services/T000/B000/very-secret-token"
    folder = RunFolder.create(tmp_path)
    folder.save_config(RunConfig(model="m", notify=[secret]))
    text = folder.config_file.read_text()
    assert "very-secret-token" not in text and "https://hooks.slack.com/***" in text
    assert read_run_urls(folder.path) == [secret]
    assert RunConfig.load(folder.config_file).notify == ["https://hooks.slack.com/***"]
