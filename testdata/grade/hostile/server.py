"""A hostile server, for testing that bank grade stays bounded: it never
speaks the contract, on purpose, in the way HOSTILE says.

  huge-body       every answer a 201 whose body is 1 GiB of JSON-ish bytes
  endless         every answer a 201 with a chunked body that never ends
  malformed       every answer a 201 whose body is broken JSON
  always-201      a well-formed 201 to every request, and no database at all
  drip            a 201 whose body comes one byte a second, for ever
  big-header      a 201 with a 1 MiB header
  traps           always-201, after setting traps in its database for a
                  grader that reads it with more rights than the server's:
                  transfers becomes a view over a function of its own, and
                  the database's search_path puts a schema of its own
                  before pg_catalog with a format() of its own; each trap,
                  run as a superuser, runs COPY ... TO PROGRAM 'touch
                  $HOSTILE_MARK'

It listens on 127.0.0.1:$PORT and touches no database but in the traps
mode. Run: HOSTILE=endless python3 server.py
"""

import os
import socketserver
import time
from http.server import BaseHTTPRequestHandler

MODE = os.environ.get("HOSTILE", "always-201")
counter = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_one(self):
        global counter
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        counter += 1
        try:
            if MODE == "huge-body":
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(1 << 30))
                self.end_headers()
                chunk = b'{"transferId": 1, "pad": "' + b"x" * (1 << 20)
                sent = 0
                while sent < (1 << 30):
                    self.wfile.write(chunk)
                    sent += len(chunk)
            elif MODE == "endless":
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                piece = b"x" * 65536
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            elif MODE == "drip":
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while True:
                    self.wfile.write(b"1\r\nx\r\n")
                    self.wfile.flush()
                    time.sleep(1)
            elif MODE == "malformed":
                body = b'{"transferId": 1, "from": 1, "to": 2, "amountKobo": '
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif MODE == "big-header":
                self.send_response(201)
                self.send_header("X-Big", "y" * (1 << 20))
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
            else:  # always-201
                body = b'{"transferId": %d, "from": 1, "to": 2, "amountKobo": 1000000, "status": "completed"}' % counter
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = handle_one
    do_POST = handle_one


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def set_traps():
    import psycopg

    mark = os.environ["HOSTILE_MARK"].replace("'", "''")
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as db:
        db.execute(f"""
          CREATE OR REPLACE FUNCTION public.spy() RETURNS bigint LANGUAGE plpgsql AS $$
          BEGIN
            IF current_setting('is_superuser') = 'on' THEN
              EXECUTE 'COPY (SELECT 1) TO PROGRAM ' || quote_literal('touch {mark}');
            END IF;
            RETURN 0;
          END $$;
          ALTER TABLE transfers RENAME TO transfers_real;
          CREATE VIEW transfers AS SELECT * FROM transfers_real WHERE public.spy() = 0;
          CREATE SCHEMA trap;
          CREATE FUNCTION trap.format(text, text, text) RETURNS text LANGUAGE sql
            AS $$ SELECT public.spy()::text $$;
          CREATE FUNCTION trap.clock_timestamp() RETURNS timestamptz LANGUAGE sql
            AS $$ SELECT now() + public.spy() * interval '1 s' $$;
        """)
        dbname = db.execute("SELECT current_database()").fetchone()[0]
        db.execute(f'ALTER DATABASE "{dbname}" SET search_path = trap, pg_catalog, public')


if MODE == "traps":
    try:
        set_traps()
    except Exception:  # a second instance on the same database: the traps are set
        pass
Server(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
