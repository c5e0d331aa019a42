#!/usr/bin/env python3
"""A streaming HTTP server to put behind nginx, for the adoption tests.

    stream_server.py PORT PREFIX CHUNKS DELAY_S

Each GET streams CHUNKS chunks, DELAY_S seconds apart.  Before it sends a
chunk it writes it to /dev/shm/PREFIX<id>_0_<i>, where <id> is the request
ID nginx forwards in X-Request-Id, the way a serving stage hands a chunk to
the next one; like such a stage it never unlinks them (the next stage
would).  Each chunk's text is "rid=<id> chunk=<i>".  When the client has
gone, the write fails and the request ends.  Prints "ready" once listening
on 127.0.0.1:PORT.
"""
import http.server
import os
import re
import sys
import time

PORT, PREFIX, CHUNKS, DELAY = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        rid = self.headers.get("X-Request-Id", "")
        if not re.fullmatch(r"[0-9a-f]{32}", rid):
            self.send_error(400, "no X-Request-Id from nginx")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i in range(CHUNKS):
                data = f"rid={rid} chunk={i}\n".encode()
                fd = os.open(f"/dev/shm/{PREFIX}{rid}_0_{i}", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
                os.ftruncate(fd, 4096)
                os.write(fd, data)
                os.close(fd)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                time.sleep(DELAY)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client (nginx) has gone

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print("ready", flush=True)
server.serve_forever()
