# The production image: gunicorn with DJANGO_DEBUG=0. tests/test_production.py runs the
# collectstatic step below as written and serves the result with the CMD below.

# The translations: locale/*/LC_MESSAGES/django.po are the only source; the .mo files are
# compiled here with GNU gettext (not committed) and copied into the image below.
FROM python:3.11-slim AS catalogues
RUN apt-get update && apt-get install -y --no-install-recommends gettext && rm -rf /var/lib/apt/lists/*
COPY locale /locale
RUN for po in /locale/*/LC_MESSAGES/django.po; do msgfmt --check -o "${po%.po}.mo" "$po" || exit 1; done

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 DJANGO_DEBUG=0
WORKDIR /app
COPY requirements.lock .
COPY clients/python clients/python
# Every package pinned with its hash; then the portal client package of this repository.
RUN pip install --require-hashes -r requirements.lock && pip install --no-deps ./clients/python
COPY . .
COPY --from=catalogues /locale locale
# Production settings (DJANGO_DEBUG=0) so that the static files' manifest is written; the
# secret key below exists only for this build step and is never used to serve.
RUN DJANGO_DEBUG=0 DJANGO_SECRET_KEY=build-only-collectstatic-key-not-used-at-runtime-0123456789 python manage.py collectstatic --noinput \
    && useradd --system --home /app consultations && mkdir -p /app/var && chown consultations /app/var
USER consultations
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"]
