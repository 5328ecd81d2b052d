"""An environment that ignores SIGTERM, starts a child in a session of its own, then hangs."""

import os
import signal
import subprocess
import time

from datasets import Dataset


class Stubborn:
    def __init__(self, child_pid_file):
        self.child_pid_file = child_pid_file

    def build_dataset(self, tokenizer):
        return Dataset.from_list([{"prompt": f"say a {i}"} for i in range(16)])

    def score_episode(self, model, tokenizer, completion):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen(["sleep", "600"], start_new_session=True)
        with open(self.child_pid_file + ".tmp", "w") as fh:
            fh.write(str(child.pid))
        os.replace(self.child_pid_file + ".tmp", self.child_pid_file)
        while True:  # not a wait: it hangs on purpose, TERM ignored, until it is killed
            time.sleep(1)
