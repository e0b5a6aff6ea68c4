#!/usr/bin/env python3
"""A small prefix-aware router for the replica test: requests whose prompts share their first
PREFIX_CHARS characters go to the same `ridge serve` replica (a hash of that prefix picks it), so
each replica's prefix cache sees the same prefixes again. The reply carries X-Ridge-Replica.

usage: router.py PREFIX_CHARS BACKEND_URL...   (prints its port, serves until killed)
"""
import hashlib
import json
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

prefix_chars = int(sys.argv[1])
backends = sys.argv[2:]


def prompt_text(body):
    if "prompt" in body:
        p = body["prompt"]
        return p if isinstance(p, str) else json.dumps(p)
    return "".join(str(m.get("content", "")) for m in body.get("messages", []))


class Router(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            key = prompt_text(json.loads(raw))[:prefix_chars]
        except (ValueError, AttributeError):
            key = ""
        replica = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(backends)
        req = urllib.request.Request(backends[replica] + self.path, data=raw, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as r:
                code, body = r.status, r.read()
        except urllib.error.HTTPError as e:
            code, body = e.code, e.read()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Ridge-Replica", str(replica))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Router)
print(server.server_address[1], flush=True)
server.serve_forever()
