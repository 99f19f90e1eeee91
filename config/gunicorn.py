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
# No client address in the error log either: gunicorn writes "Invalid request from
# ip=..." on a malformed request; config/logfilters.py removes every address (issue 27).
logger_class = "config.logfilters.GunicornLogger"
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
worker_class = "gthread"

# prometheus-client's multiprocess mode (METRICS_ENABLED with several workers): every
# process writes its metrics to files in this directory, which must exist and be empty
# before the application (and so the metrics) is loaded.
_metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _metrics_dir:
    os.makedirs(_metrics_dir, exist_ok=True)
    for _name in os.listdir(_metrics_dir):
        if _name.endswith(".db"):
            os.remove(os.path.join(_metrics_dir, _name))

# Load the application once in the master and share it with the workers: less memory, and
# the garbage collector of each worker no longer scans the whole of Django on every
# collection (gc.freeze, as the Python documentation recommends for pre-fork servers).
preload_app = True


def pre_fork(server: object, worker: object) -> None:
    gc.freeze()


def post_fork(server: object, worker: object) -> None:
    gc.enable()


def child_exit(server: object, worker: object) -> None:
    # prometheus-client's multiprocess mode: forget the metrics files of a worker that exited.
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined]
