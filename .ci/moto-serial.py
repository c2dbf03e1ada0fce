"""moto's server with one request at a time.

moto's own `moto_server` handles requests on concurrent threads, and under
the 4000-request race test (TestRaceManyUsersManyKeys) it let two
transactions conditioned on the same new ledger item both commit, and lost
writes of committed ones. DynamoDB serialises conflicting transactions, so
CI serves moto behind one lock, which restores that guarantee; the same
tests pass on it. Usage: python moto-serial.py HOST PORT
"""
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()


def serialised(environ, start_response):
    with lock:
        # Materialise the body inside the lock: the work happens as it is read.
        return list(app(environ, start_response))


if __name__ == "__main__":
    run_simple(sys.argv[1], int(sys.argv[2]), serialised, threaded=True,
               request_handler=MotoRequestHandler)
