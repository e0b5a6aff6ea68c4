#!/usr/bin/env python3
"""A local imitation of the Hugging Face hub's API and file routes for ridge pull's tests.

usage: fake_hub.py CONFIG.json LOG   (prints the port it listens on, then serves until killed)
CONFIG: {"repos": {"user/name": {"files": {"path": "local file"}, "private": bool,
                                 "wrong_sha": ["path"], "drop_once": ["path"]}}}
Routes: GET /api/models/<user>/<name>/tree/<rev>  -> the file list (lfs.oid = sha256, size)
        GET /<user>/<name>/resolve/<rev>/<path>   -> 302 to /blobs/<sha256>/<user>/<name>/<path>
        GET /blobs/<sha256>/...                   -> the bytes, with Range (206)
A private repository answers 401 without "Authorization: Bearer secret"; a drop_once file's first
full transfer stops halfway and closes the connection. Each request is appended to LOG as
"METHOD PATH RANGE".
"""
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

config = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
lock = threading.Lock()
blobs = {}      # sha -> bytes
dropped = set()


def sha(data):
    return hashlib.sha256(data).hexdigest()


for repo, spec in config["repos"].items():
    spec["data"] = {p: open(f, "rb").read() for p, f in spec["files"].items()}
    for p, data in spec["data"].items():
        blobs[sha(data)] = data


class Hub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorized(self, repo):
        spec = config["repos"][repo]
        return not spec.get("private") or self.headers.get("Authorization") == "Bearer secret"

    def do_GET(self):
        path = unquote(urlparse(self.path).path)
        with lock, open(log_path, "a") as log:
            log.write(f"GET {path} {self.headers.get('Range', '-')}\n")
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree":
            repo = "/".join(parts[2:4])
            if repo not in config["repos"]:
                return self.reply(404, b'{"error":"Repository not found"}')
            if not self.authorized(repo):
                return self.reply(401, b'{"error":"Invalid credentials"}')
            spec = config["repos"][repo]
            if spec.get("garbled"):
                return self.reply(200, b"<html>maintenance</html>", [("Content-Type", "text/html")])
            listing = [{"type": "directory", "path": "docs"}]
            for p, data in spec["data"].items():
                oid = "0" * 64 if p in spec.get("wrong_sha", []) else sha(data)
                entry = {"type": "file", "path": p, "size": len(data)}
                if p.endswith(".gguf"):
                    entry["lfs"] = {"oid": oid, "size": len(data), "pointerSize": 134}
                listing.append(entry)
            return self.reply(200, json.dumps(listing).encode(), [("Content-Type", "application/json")])
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, file = "/".join(parts[:2]), "/".join(parts[4:])
            spec = config["repos"].get(repo)
            if spec is None or file not in spec["data"]:
                return self.reply(404, b"Entry not found")
            if not self.authorized(repo):
                return self.reply(401, b"Invalid credentials")
            return self.reply(302, b"", [("Location", f"/blobs/{sha(spec['data'][file])}/{repo}/{file}")])
        if parts[0] == "blobs" and len(parts) >= 5 and parts[1] in blobs:
            data = blobs[parts[1]]
            repo, file = "/".join(parts[2:4]), "/".join(parts[4:])
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[6:-1])
                if start >= len(data):
                    return self.reply(416, b"", [("Content-Range", f"bytes */{len(data)}")])
            body = data[start:]
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            key = (repo, file)
            if file in config["repos"][repo].get("drop_once", []) and key not in dropped and not start:
                dropped.add(key)
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)
            return
        self.reply(404, b"Not found")


server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
print(server.server_address[1], flush=True)
server.serve_forever()
