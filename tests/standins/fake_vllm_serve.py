"""Stand-in for ``trl vllm-serve`` on machines without a GPU: same arguments, same health endpoint.

Records its argv and environment to $FAKE_VLLM_RECORD, serves GET /health/ with 200 on --host/--port
(unless $FAKE_VLLM_UNHEALTHY is set), and runs until it is signalled.
"""

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--model")
parser.add_argument("--tensor-parallel-size", type=int)
parser.add_argument("--data-parallel-size", type=int, default=1)
parser.add_argument("--host")
parser.add_argument("--port", type=int)
args = parser.parse_args()

with open(os.environ["FAKE_VLLM_RECORD"], "w") as fh:
    json.dump(
        {"argv": sys.argv[1:], "pid": os.getpid(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}, fh
    )


class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        healthy = self.path == "/health/" and not os.environ.get("FAKE_VLLM_UNHEALTHY")
        self.send_response(200 if healthy else 503)
        self.end_headers()

    def log_message(self, *a):
        print("request", self.path, flush=True)


print(f"fake vllm serving {args.model} on {args.host}:{args.port}", flush=True)
HTTPServer((args.host, args.port), Health).serve_forever()
