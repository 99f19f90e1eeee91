"""gunicorn settings: the access log never records the client's address or user agent."""

import gc
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
accesslog = "-"
# Method, path, status, size, duration: no %(h)s (address), no %(a)s (user agent).
access_log_format = '"%(m)s %(U)s" %(s)s %(B)s %(M)sms'
errorlog = "-"
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
worker_class = "gthread"

# Load the application once in the master and share it with the workers: less memory, and
# the garbage collector of each worker no longer scans the whole of Django on every
# collection (gc.freeze, as the Python documentation recommends for pre-fork servers).
preload_app = True


def pre_fork(server: object, worker: object) -> None:
    gc.freeze()


def post_fork(server: object, worker: object) -> None:
    gc.enable()
