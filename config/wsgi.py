import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Import every view now (the URLconf), not on each worker's first request: gunicorn loads
# this module once in its master (preload_app) and forks the workers with it, so the
# first POST /analyses/ of a fresh worker no longer imports the analysis path (numpy,
# scipy, the engine: 1-2 s on its analyst's time).
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018
