import os

# Every server process (web, worker, management commands) runs numpy's OpenBLAS on one
# thread unless the environment says otherwise. The worker runs `--concurrency=2` on the
# 2-CPU deployment and gunicorn 2 x 4 beside it, so a second BLAS thread per process only
# oversubscribes the CPUs: under a load of 1-3 the reconstruction's many small matrix
# products (EM/AS over a panel's quotas, bootstrap batches) took 5-15x longer with 2
# threads than with 1 (bench_panel's posterior step, README "Panels"). Set before numpy is
# imported (OpenBLAS reads it once, when it loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from config.celery import app as celery_app

__all__ = ("celery_app",)
