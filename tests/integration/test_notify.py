"""Alerts that reach people: detached runs of the tiny model whose root process POSTs their warnings, their
auto-stop and their end to an HTTP receiver on 127.0.0.1, in the JSON, Slack and Discord bodies, and through
apprise URLs to the same receiver (``json://``) and to an SMTP server on 127.0.0.1 (``mailto://``, with a
login), without a secret of the URLs landing in the run folder; and a run whose URL nobody answers
completes, with one ``notify_failed``.

The two runs are launched together and shared by the tests (each takes a few seconds of training)."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from grpo_tui.api import RunHandle
from trainer_core.alerting.notify import start_for_run
from trainer_core.contract.alerts.targets import SETTINGS_ENV
from trainer_core.contract.config.notify_urls import NOTIFY_FILE
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.backoff import Backoff
from trainer_core.contract.run.event_log import EventWriter, read_events
from trainer_core.contract.run.events import Error, HealthWarning, Metrics, NotifyFailed
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..helpers import EXAMPLES, cli, events_of, free_port, wait_for
from .test_supervisor import exited, launch_args

SECRET = "s3cr3t-w3bh00k-t0k3n"
DEAD = "d34d-t0k3n"
RULE = "no_learning_signal"
CONSTANT = dict(env_module=str(EXAMPLES / "constant_env.py"), env_class="ConstantEnv")
QUICK = ("--health", "no_signal_steps=2", "--save-steps", "1000")
RUN_FILES = ("config.yaml", "events.jsonl", "state.json", "trainer.log")


@dataclass
class Received:
    path: str
    query: dict
    headers: dict
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """An HTTP server on 127.0.0.1 that answers every POST with 200 and keeps it."""

    port: int = field(default_factory=free_port)
    requests: list[Received] = field(default_factory=list)

    def __post_init__(self):
        received = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlsplit(self.path)
                received.append(Received(url.path, parse_qs(url.query), dict(self.headers), body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def bodies(self, path: str) -> list[dict]:
        return [r.json() for r in self.requests if r.path == path]


@dataclass
class Mailbox:
    """A real SMTP server on 127.0.0.1 (aiosmtpd) that takes mail from ``user``/``password`` only and keeps it."""

    user: str = "alerts"
    password: str = SECRET
    port: int = field(default_factory=free_port)
    mails: list[str] = field(default_factory=list)

    def __post_init__(self):
        mails, user, password = self.mails, self.user.encode(), self.password.encode()

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                mails.append(envelope.content.decode())
                return "250 OK"

        def login(server, session, envelope, mechanism, auth):
            return AuthResult(success=(auth.login, auth.password) == (user, password))

        self.server = Controller(
            Handler(), hostname="127.0.0.1", port=self.port, authenticator=login, auth_require_tls=False
        )
        self.server.start()

    def url(self, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"mailto://{self.user}:{secret}@127.0.0.1:{self.port}?from=grpo@example.org&to=ops@example.org&mode=insecure"

    def subjects(self) -> list[str]:
        """Each mail's subject, unfolded and decoded."""
        from email import message_from_string, policy

        return [" ".join(str(message_from_string(m, policy=policy.default)["Subject"]).split()) for m in self.mails]


def launch(model, runs_dir, *extra, settings: str) -> RunHandle:
    """``grpo-tui launch`` of a constant-reward run (no learning signal from its first steps), with this
    settings file on the host (the launcher's environment reaches the run's root)."""
    result = cli(*launch_args(model, runs_dir, *extra, **CONSTANT), env={SETTINGS_ENV: settings})
    assert result.returncode == 0, result.stderr
    return RunHandle(RunFolder(Path(json.loads(result.stdout)["path"])))


def wait_root_exited(handle) -> None:
    """The run's root has sent its last alerts and exited (it outlives the recorded end by that flush)."""
    state = handle.folder.read_state()
    wait_for(lambda: exited(state["root_pid"], state.get("root_start_time")), timeout=60)


@pytest.fixture(scope="module")
def receiver():
    server = Receiver()
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def mailbox():
    server = Mailbox()
    yield server
    server.server.stop()


@pytest.fixture(scope="module")
def runs(tiny_model, receiver, mailbox, tmp_path_factory):
    base = tmp_path_factory.mktemp("notify")
    closed = free_port()  # nothing listens there: connection refused
    settings = base / "settings.yaml"
    settings.write_text(f"notify:\n  - http://127.0.0.1:{closed}/down?token={DEAD}\nnotify_severity: info\n")
    settings.chmod(0o600)
    stopping = launch(
        tiny_model,
        base / "runs",
        "--max-steps",
        "30",
        "--stop-on",
        RULE,
        "--notify",
        receiver.url(f"/hook?token={SECRET}"),
        "--notify",
        receiver.url(f"/slack?token={SECRET}#slack"),
        "--notify",
        receiver.url(f"/discord?token={SECRET}#discord"),
        "--notify",
        f"json://bot:{SECRET}@127.0.0.1:{receiver.port}/apprise",
        "--notify",
        mailbox.url(),
        *QUICK,
        settings=os.devnull,
    )
    # a run whose only URL comes from the settings file of the host it runs on
    failing = launch(tiny_model, base / "runs", "--max-steps", "4", *QUICK, settings=str(settings))
    for handle in (stopping, failing):
        handle.wait(timeout=300)
        wait_root_exited(handle)
    return SimpleNamespace(stopping=stopping, failing=failing, closed=closed, runs_dir=base / "runs")


def test_a_detached_run_sends_its_warning_its_auto_stop_and_its_end(runs, receiver):
    handle = runs.stopping
    assert handle.status() is Status.STOPPED
    bodies = receiver.bodies("/hook")
    kinds = [b["event"] for b in bodies]
    assert "warning" in kinds and kinds[-2:] == ["auto_stop", "run_end"], kinds
    warning = next(b for b in bodies if b["event"] == "warning" and b["rule"] == RULE)
    stop, end = bodies[-2:]
    for body in (warning, stop, end):
        assert body["run_id"] == handle.run_id and body["host"] == socket.gethostname()
        assert body["rule"] == RULE and body["severity"] in ("warn", "critical") and body["step"] >= 1
        assert body["message"] and body["advice"] and handle.run_id in body["text"]
    written = next(e for e in events_of(handle.path) if isinstance(e, HealthWarning) and e.rule == RULE)
    assert (warning["step"], warning["message"], warning["advice"]) == (written.step, written.message, written.advice)
    assert warning["severity"] == "warn" and stop["step"] == written.step
    assert end["status"] == "stopped" and end["step"] >= stop["step"]
    # sent to the real URL: its token reached the receiver, its fragment did not go out
    assert all(r.query == {"token": [SECRET]} for r in receiver.requests if r.path in ("/hook", "/slack", "/discord"))


def test_slack_and_discord_urls_get_their_own_bodies(runs, receiver):
    slack, discord = receiver.bodies("/slack"), receiver.bodies("/discord")
    assert slack and all(list(b) == ["text"] for b in slack)
    assert discord and all(set(b) == {"content", "allowed_mentions"} for b in discord)
    for texts in ([b["text"] for b in slack], [b["content"] for b in discord]):
        assert any(f"WARN {RULE}" in t for t in texts)
        assert any("auto-stop" in t for t in texts) and "stopped at step" in texts[-1]
        assert all(runs.stopping.run_id in t for t in texts)


def test_apprise_urls_reach_a_json_receiver_and_a_mail_server(runs, receiver, mailbox):
    """The same alerts through apprise: its JSON body to a receiver that checks the login, and mail through
    an SMTP server that takes it only with the URL's password."""
    run_id = runs.stopping.run_id
    posted = [r for r in receiver.requests if r.path == "/apprise"]
    assert posted and all(r.headers.get("Authorization") == _basic("bot", SECRET) for r in posted)
    titles = [r.json()["title"] for r in posted]
    assert any(f"WARN {RULE}" in t for t in titles) and any("auto-stop" in t for t in titles), titles
    assert "stopped at step" in titles[-1] and all(run_id in t for t in titles)
    end = posted[-1].json()["message"]
    assert f"Run: {run_id}" in end and "Status: stopped" in end and "Advice: Continue it with" in end
    subjects = mailbox.subjects()
    assert len(subjects) == len(titles) and all(s.startswith("grpo-tui: ") for s in subjects), subjects
    assert any(f"WARN {RULE}" in s for s in subjects) and "stopped at step" in subjects[-1]
    assert not [e for e in events_of(runs.stopping.path) if isinstance(e, NotifyFailed)]


def _basic(user: str, password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_no_secret_of_a_url_is_written_into_the_run_folder(runs, receiver):
    for handle, secret in ((runs.stopping, SECRET), (runs.failing, DEAD)):
        for name in RUN_FILES:
            assert secret not in (handle.path / name).read_text(), name
    config = yaml.safe_load((runs.stopping.path / "config.yaml").read_text())
    port = receiver.port
    assert config["notify"] == [
        f"http://127.0.0.1:{port}/***",
        f"http://127.0.0.1:{port}/***#slack",
        f"http://127.0.0.1:{port}/***#discord",
        "json://***",
        "mailto://***",
    ]
    private = runs.stopping.path / NOTIFY_FILE  # the real URLs, for the root (and a resume) alone
    assert SECRET in private.read_text() and stat.S_IMODE(private.stat().st_mode) == 0o600
    assert not (runs.failing.path / NOTIFY_FILE).exists()  # a settings file's URLs stay in the settings file
    # what a remote viewer's mirror copies of the folder carries no secret either
    mirror = cli("events", runs.stopping.run_id, "--mirror", "--runs-dir", str(runs.runs_dir), timeout=60)
    assert mirror.returncode == 0 and "config.yaml" in mirror.stdout
    assert SECRET not in mirror.stdout and NOTIFY_FILE not in mirror.stdout


def test_an_unreachable_url_is_recorded_once_and_the_run_completes(runs):
    handle = runs.failing
    assert handle.status() is Status.COMPLETED
    events = events_of(handle.path)
    assert any(isinstance(e, HealthWarning) and e.rule == RULE for e in events)  # a warning and the end: 2 tries
    failed = [e for e in events if isinstance(e, NotifyFailed)]
    assert len(failed) == 1, failed
    assert failed[0].url == f"http://127.0.0.1:{runs.closed}/***" and failed[0].reason == "connection refused"
    assert failed[0].alert == "warning" and failed[0].attempts == 3
    assert f"could not send warning to http://127.0.0.1:{runs.closed}/***" in (handle.path / "trainer.log").read_text()
    row = json.loads(cli("runs", "--json", "--runs-dir", str(runs.runs_dir)).stdout)
    assert {r["run_id"]: r["status"] for r in row}[handle.run_id] == "completed"


def test_a_failed_run_ends_with_its_crash_rule_and_each_problem_is_recorded_once(receiver, tmp_path):
    """The root's side alone, on a hand-written run folder: a torn last line waits for its end, a failed run's
    end carries the crash rule the watcher would give, and what cannot be sent to is recorded once per run."""
    folder = RunFolder.create(tmp_path / "runs")
    folder.write_state(status="running", started=1.0)
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"notify: [{receiver.url('/other')}]\n")
    settings.chmod(0o666)  # others may write it: refused
    copied = "https://hooks.slack.com/***"  # as config.yaml of another run holds it
    config = RunConfig(model="m", notify=[receiver.url(f"/crash?token={SECRET}"), copied])
    folder.save_config(config)
    notifier = start_for_run(folder, config, settings_path=settings, backoff=Backoff(0.1, cap=0.1))
    assert notifier is not None and SECRET not in folder.config_file.read_text()
    with EventWriter(folder.events_file) as writer:
        writer.emit(Metrics(step=1, values={"reward": 0.5}))
        writer.emit(Error(kind="exception", message="torch.OutOfMemoryError: CUDA out of memory.", step=1))
    with open(folder.events_file, "ab") as fh:
        fh.write(b'{"type":"metrics","st')  # a writer that died mid-line
    folder.record_end(Status.FAILED, "OutOfMemoryError: CUDA out of memory.", 1)
    notifier.close()
    [end] = receiver.bodies("/crash")
    assert (end["event"], end["status"], end["rule"], end["severity"]) == ("run_end", "failed", "crash_oom", "critical")
    assert end["error_kind"] == "exception" and "CUDA out of memory" in end["message"] and end["advice"]
    assert receiver.bodies("/other") == []

    def failures():
        return sorted((e.url, e.reason[:40]) for e in read_events(folder.events_file) if isinstance(e, NotifyFailed))

    recorded = failures()
    assert recorded == [
        (str(settings), "the settings file is not used: Bad owner"),
        (copied, "only the masked form of this URL is in t"),
    ]
    # a resumed leg reads the masked config back, sends through notify.json, and records nothing twice
    again = start_for_run(folder, RunConfig.load(folder.config_file), settings_path=settings)
    assert again is not None and [t.url for t in again.targets] == [receiver.url(f"/crash?token={SECRET}")]
    again.close()
    assert failures() == recorded
