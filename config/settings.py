"""Django settings, read from the environment through :mod:`config.env`.

Production differs from development only by environment variables;
docs/operators/configuration.md lists them all (tests/test_docs.py fails on one it lacks).
"""

from __future__ import annotations

from pathlib import Path

from config.env import (
    ConfigurationError,
    database_from_url,
    env_bool,
    env_int,
    env_list,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigurationError(
            "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off; set it to a long random "
            "string (python -c 'import secrets; print(secrets.token_urlsafe(50))') or set "
            "DJANGO_DEBUG=1 for development."
        )
    SECRET_KEY = "development-only-key-never-used-in-production-0123456789abcdefghij"
# The placeholder of .env.example (and any "change-me" value) is public: production
# (DJANGO_DEBUG off) refuses to start with it (issue 27).
PLACEHOLDER_SECRETS = ("change-me", "development-only-key-never-used-in-production")
if not DEBUG and any(SECRET_KEY.startswith(p) for p in PLACEHOLDER_SECRETS):
    raise ConfigurationError(
        "DJANGO_SECRET_KEY is the placeholder from .env.example, which anyone can read; set "
        "it to a long random string (python -c 'import secrets; print(secrets.token_urlsafe(50))')."
    )

ALLOWED_HOSTS = env_list(
    "DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "config.apps.StaffAdminConfig",  # django.contrib.admin with TOTP / SSO (config/signin.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "corsheaders",
    "csp",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "mozilla_django_oidc",
    "consultations",
    "surveys",
    "privacy",
    "reconstruction",
    "webhooks",
    "config.apps.ConfigConfig",  # last: management commands that span the apps (demo)
]

MIDDLEWARE = [
    "config.health.HealthzMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.JsonApiErrors",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language of admin pages, API error messages, the example page and reports:
    # Accept-Language (or the admin's language cookie); ?lang= overrides it everywhere.
    "django.middleware.locale.LocaleMiddleware",
    "config.middleware.QueryLanguage",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
]

# --- Observability (README, "Operating"): Prometheus metrics at /metrics (config/metrics.py),
# off by default and then only with the bearer token; optional JSON logs and Sentry.
METRICS_ENABLED = env_bool("METRICS_ENABLED", False)
METRICS_TOKEN = env_str("METRICS_TOKEN")
if METRICS_ENABLED:
    if len(METRICS_TOKEN) < 16:
        raise ConfigurationError(
            "METRICS_ENABLED needs METRICS_TOKEN (at least 16 characters): Prometheus sends it "
            "as Authorization: Bearer <token>; /metrics is never public."
        )
    MIDDLEWARE = [
        "django_prometheus.middleware.PrometheusBeforeMiddleware",
        *MIDDLEWARE,
        "django_prometheus.middleware.PrometheusAfterMiddleware",
    ]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": database_from_url(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"))
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default: make sure its folder exists and wait rather than
    # fail when the in-process worker and a request write at the same time.
    Path(str(DATABASES["default"]["NAME"])).parent.mkdir(parents=True, exist_ok=True)
    # IMMEDIATE: a writing transaction takes the write lock when it begins, so concurrent
    # writers queue on the timeout instead of failing with "database is locked" when a
    # reader upgrades to a writer mid-transaction.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        **DATABASES["default"].get("OPTIONS", {}),
    }
if env_str("DATABASE_REPLICA_URL"):
    # A read replica (streaming replication, or a second alias on the same cluster in the
    # tests): the analysis statistics read from it, everything else from default.
    DATABASES["replica"] = {
        **database_from_url(env_str("DATABASE_REPLICA_URL")),
        "TEST": {"MIRROR": "default"},
    }
# Read-your-writes (docs/operators/scaling.md, "Standby"): an analysis waits at most this
# many seconds for the standby to replay what the primary had when it was requested, then
# reads the primary instead and says so (the job's read_from).
try:
    ANALYSIS_REPLICA_WAIT_SECONDS = float(env_str("ANALYSIS_REPLICA_WAIT_SECONDS") or "10")
except ValueError:
    raise ConfigurationError("ANALYSIS_REPLICA_WAIT_SECONDS must be a number of seconds") from None
if not 0 <= ANALYSIS_REPLICA_WAIT_SECONDS <= 3600:
    raise ConfigurationError(
        f"ANALYSIS_REPLICA_WAIT_SECONDS must be 0-3600 seconds, got {ANALYSIS_REPLICA_WAIT_SECONDS}"
    )
# PgBouncer (or another pooler) in front of PostgreSQL: DATABASE_POOLER=transaction when it
# runs in transaction mode. A server-side cursor outside a transaction would then outlive
# the server connection it was opened on, so Django's QuerySet.iterator() falls back to
# client-side cursors; the analyses' streaming read (surveys/statistics.py) opens its
# named cursor inside a transaction, which a transaction pooler keeps on one connection.
# Prepared statements stay off (Django's default with psycopg 3: prepare_threshold None).
DATABASE_POOLER = env_str("DATABASE_POOLER", "")
if DATABASE_POOLER not in {"", "session", "transaction"}:
    raise ConfigurationError(
        f"DATABASE_POOLER must be empty, session or transaction, got {DATABASE_POOLER!r}"
    )
if DATABASE_POOLER == "transaction":
    for _database in DATABASES.values():
        if _database["ENGINE"] == "django.db.backends.postgresql":
            _database["DISABLE_SERVER_SIDE_CURSORS"] = True
DATABASE_ROUTERS = ["config.routers.PrimaryReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("pl", "Polski")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# The packaged browser library (clients/js) is served as it is published, at
# /static/privacy/distort.js, for the example portal page.
STATICFILES_DIRS = [("privacy", BASE_DIR / "clients" / "js" / "src")]
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
REPORTS_DIR = VAR_DIR / "reports"
# Development serves static files straight from the apps, no collectstatic needed.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# --- Security: production is the default; development relaxes it via DJANGO_DEBUG.
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", not DEBUG)
X_FRAME_OPTIONS = "DENY"
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Request-size cap (bulk submissions of 10,000 responses fit comfortably); larger is a JSON 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_MAX_REQUEST_BYTES", 8 * 1024 * 1024)
# A portal key sits in public pages (issue 27): its bulk submissions carry at most this
# many responses and bytes (a 413 before the body is read); every response of a portal
# bulk counts against the key's submissions quota (shared by all processes through the
# cache). Larger ingests use an analyst key (up to 10,000 responses per call).
PORTAL_BULK_MAX_ITEMS = env_int("PORTAL_BULK_MAX_ITEMS", 100)
PORTAL_BULK_MAX_BYTES = env_int("PORTAL_BULK_MAX_BYTES", 512 * 1024)
# Request parsing and survey shape limits (issue 13): JSON nesting depth, questions per
# survey, categories per discrete question (each category costs a channel row and column).
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32)
SURVEY_MAX_QUESTIONS = env_int("SURVEY_MAX_QUESTIONS", 100)
SURVEY_MAX_CATEGORIES = env_int("SURVEY_MAX_CATEGORIES", 50)

# --- REST framework: deny by default; errors as {"detail", "errors"}.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "consultations.authentication.ApiKeyAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["consultations.permissions.HasApiKey"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.parsers.GuardedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "config.schema.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "config.pagination.CappedPageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "config.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "submissions": env_str("SUBMISSION_RATE_LIMIT", "100000/minute"),
        # Starting background jobs (reconstruction/quotas.py); polling is not limited.
        "analyses": env_str("ANALYSIS_RATE_LIMIT", "120/minute"),
        "reports": env_str("REPORT_RATE_LIMIT", "30/minute"),
        "aggregate_reconstructions": env_str("AGGREGATE_RATE_LIMIT", "60/minute"),
    },
    "UNAUTHENTICATED_USER": None,
    # ?format= belongs to report downloads (html|csv|json), not to renderer selection.
    "URL_FORMAT_OVERRIDE": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "Deliberative consultations API",
    "DESCRIPTION": (
        "Privacy-preserving consultations: portals submit answers distorted on the resident's "
        "device; analysts reconstruct counts, means, distributions and participant samples."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "bearerAuth": {"type": "http", "scheme": "bearer", "description": "API key"}
        }
    },
    "SECURITY": [{"bearerAuth": []}],
    "ENUM_NAME_OVERRIDES": {
        "SurveyKindEnum": "surveys.models.Survey.Kind",
        "SurveyStatusEnum": "surveys.models.Survey.Status",
        "AnalysisKindEnum": "reconstruction.registry.kind_choices",
        "JobStatusEnum": "reconstruction.models.Job.Status",
    },
}

# --- Staff sign-in (config/signin.py, config/oidc.py): the admin's second factor is a TOTP
# code, required for superusers (ADMIN_2FA=superusers, the default), for every staff
# member (staff) or only for those who enrolled a device (off).
ADMIN_2FA = env_str("ADMIN_2FA", "superusers")
if ADMIN_2FA not in ("superusers", "staff", "off"):
    raise ConfigurationError("ADMIN_2FA must be superusers, staff or off.")
OTP_TOTP_ISSUER = env_str("OTP_TOTP_ISSUER", "Consultations")
# OpenID Connect single sign-on for staff (config/oidc.py), on when OIDC_RP_CLIENT_ID is
# set: the provider's endpoints, its signing algorithm and key source, and whether its
# sign-in counts as the second factor (OIDC_TRUSTED_MFA, when the provider enforces one).
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT") or None
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email")
# Existing accounts only (matched on the e-mail claim) unless OIDC_CREATE_USER is on; a
# created account is neither staff nor superuser until an administrator says so.
OIDC_CREATE_USER = env_bool("OIDC_CREATE_USER", False)
OIDC_TRUSTED_MFA = env_bool("OIDC_TRUSTED_MFA", False)
OIDC_VERIFY_SSL = env_bool("OIDC_VERIFY_SSL", True)
LOGIN_REDIRECT_URL = "/admin/"
LOGIN_REDIRECT_URL_FAILURE = "/admin/login/"
LOGOUT_REDIRECT_URL = "/admin/login/"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "config.oidc.StaffOIDCBackend",  # answers only the OIDC callback, only when enabled
]

# --- Content-Security-Policy (django-csp, issue 27) on every page: the admin, the API
# docs (Swagger UI from the sidecar, its settings script served as a file), the example
# portal page (its one inline module script carries the request's nonce). Scripts only
# from this origin or with the nonce; inline styles are allowed (the admin's and Swagger
# UI's style attributes, matplotlib's SVG charts); no plugins, no framing, forms and
# fetches to this origin only. CSP_REPORT_ONLY=1 sends it as Report-Only.
from csp.constants import NONCE, NONE, SELF  # noqa: E402

_CSP = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
if env_bool("CSP_REPORT_ONLY", False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP
else:
    CONTENT_SECURITY_POLICY = _CSP

# --- CORS: portals call the API from their own origin. Each organisation lists its origins
# (admin, /api/v1/portal-origins/); consultations.origins allows exactly those, and a
# preflight is answered before authentication. Keys go in a header, never cookies.
CORS_URLS_REGEX = r"^/api/v1/"
CORS_ALLOWED_ORIGINS: list[str] = []
CORS_ALLOW_CREDENTIALS = False
CORS_EXPOSE_HEADERS = ["Retry-After"]
CORS_PREFLIGHT_MAX_AGE = 3600
CORS_ORIGINS_CACHE_SECONDS = env_int("CORS_ORIGINS_CACHE_SECONDS", 5)

# --- Celery. Without a broker, tasks run in-process (the embedded default).
CELERY_TASK_ALWAYS_EAGER = not env_str("CELERY_BROKER_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "memory://"
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True  # results live in the database rows the tasks write
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 300)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 360)
if CELERY_TASK_TIME_LIMIT <= CELERY_TASK_SOFT_TIME_LIMIT:
    raise ConfigurationError(
        "CELERY_TASK_TIME_LIMIT must be longer than CELERY_TASK_SOFT_TIME_LIMIT"
    )
# --- Lanes (docs/operators/scaling.md): every kind of work has its own queue, so a burst
# of reports or slow webhook receivers never delays an analysis. A worker consumes the
# lanes it is started with (`celery -A config worker -Q analyses,panels`); one worker may
# consume them all (the embedded default and the integration tests' worker do). Each lane
# has its time limits (CELERY_<LANE>_SOFT_TIME_LIMIT / CELERY_<LANE>_TIME_LIMIT, seconds;
# by default the CELERY_TASK_* ones, webhooks 30 / 45); its workers' concurrency is their
# command line's (docker-compose.yml reads CELERY_<LANE>_CONCURRENCY for each lane's worker).
CELERY_LANE_NAMES = ("analyses", "panels", "reports", "webhooks", "ingest")
# A delivery is one HTTP request (WEBHOOKS_TIMEOUT_SECONDS): its lane's limits are short.
_LANE_DEFAULT_LIMITS = {
    "webhooks": (min(30, CELERY_TASK_SOFT_TIME_LIMIT), min(45, CELERY_TASK_TIME_LIMIT))
}
CELERY_LANES: dict[str, dict[str, int]] = {}
for _lane in CELERY_LANE_NAMES:
    _soft, _hard = _LANE_DEFAULT_LIMITS.get(
        _lane, (CELERY_TASK_SOFT_TIME_LIMIT, CELERY_TASK_TIME_LIMIT)
    )
    CELERY_LANES[_lane] = {
        "soft_time_limit": env_int(f"CELERY_{_lane.upper()}_SOFT_TIME_LIMIT", _soft),
        "time_limit": env_int(f"CELERY_{_lane.upper()}_TIME_LIMIT", _hard),
    }
    if CELERY_LANES[_lane]["time_limit"] <= CELERY_LANES[_lane]["soft_time_limit"]:
        raise ConfigurationError(
            f"CELERY_{_lane.upper()}_TIME_LIMIT must be longer than "
            f"CELERY_{_lane.upper()}_SOFT_TIME_LIMIT"
        )
_LONGEST_LIMIT = max(lane["time_limit"] for lane in CELERY_LANES.values())
# Which analysis kinds run in the panels lane instead of `analyses`
# (ANALYSIS_KIND_LANES=panel:panels,sample:panels; panels by default).
ANALYSIS_KIND_LANES = {"panel": "panels"}
for _item in env_list("ANALYSIS_KIND_LANES"):
    _kind, _, _lane = (part.strip() for part in _item.partition(":"))
    if _lane not in ("analyses", "panels"):
        raise ConfigurationError(
            f"ANALYSIS_KIND_LANES: {_item!r}: an analysis kind runs in analyses or panels"
        )
    ANALYSIS_KIND_LANES[_kind] = _lane
# Every task is routed to its lane by name; anything unnamed goes to `analyses`.
CELERY_TASK_DEFAULT_QUEUE = "analyses"
_TASK_LANES = {
    "reconstruction.run_analysis": "analyses",
    "reconstruction.run_panel": "panels",
    "reconstruction.run_aggregate_reconstruction": "analyses",
    "reconstruction.run_report": "reports",
    "reconstruction.refresh_open_survey_reports": "reports",
    "reconstruction.requeue_stuck_jobs": "ingest",
    "surveys.statistics_tables_vacuum": "ingest",  # after a large ingest (surveys.maintenance)
    "surveys.purge_expired_surveys": "ingest",  # retention (surveys.retention), beat
    "webhooks.deliver": "webhooks",
}
CELERY_TASK_ROUTES = {task: {"queue": lane} for task, lane in _TASK_LANES.items()}
# The lane's limits apply on the worker that runs the task, whatever else it consumes.
CELERY_TASK_ANNOTATIONS = {
    task: {
        "soft_time_limit": CELERY_LANES[lane]["soft_time_limit"],
        "time_limit": CELERY_LANES[lane]["time_limit"],
    }
    for task, lane in _TASK_LANES.items()
}
# A message not acknowledged within the visibility timeout is redelivered: it must
# outlast the longest hard time limit of any lane or a long job would run twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", _LONGEST_LIMIT + 300)
}
if CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] <= _LONGEST_LIMIT:
    raise ConfigurationError(
        "CELERY_VISIBILITY_TIMEOUT must be longer than every lane's hard time limit "
        "(CELERY_TASK_TIME_LIMIT, CELERY_<LANE>_TIME_LIMIT)"
    )
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_SEND_TASK_EVENTS = False
# Webhooks call only https URLs of public addresses unless these allow otherwise.
WEBHOOKS_ALLOW_HTTP = env_bool("WEBHOOKS_ALLOW_HTTP", False)
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", False)
WEBHOOKS_TIMEOUT_SECONDS = env_int("WEBHOOKS_TIMEOUT_SECONDS", 10)
# docs/operators/webhooks.md: ports besides the scheme's standard one the server may call
# ("8443,9443"; "*" any), deliveries one organisation may have waiting, and the embedded
# default's sender thread (deliveries never run inside a job).
WEBHOOKS_ALLOWED_PORTS = env_list("WEBHOOKS_ALLOWED_PORTS")
WEBHOOKS_MAX_PENDING_PER_ORGANISATION = env_int("WEBHOOKS_MAX_PENDING_PER_ORGANISATION", 50)
WEBHOOKS_EMBEDDED_SENDER = env_bool("WEBHOOKS_EMBEDDED_SENDER", True)
WEBHOOKS_EMBEDDED_POLL_SECONDS = env_int("WEBHOOKS_EMBEDDED_POLL_SECONDS", 5)
JOBS_STUCK_AFTER_SECONDS = env_int("JOBS_STUCK_AFTER_SECONDS", 600)
# Quotas and the cost model (issue 13; README "Quotas and cost limits").
JOBS_MAX_ACTIVE_PER_ORGANISATION = env_int("JOBS_MAX_ACTIVE_PER_ORGANISATION", 20)
JOBS_QUOTA_RETRY_SECONDS = env_int("JOBS_QUOTA_RETRY_SECONDS", 30)
# A job still `running` this long after it started has lost its worker (the hard time
# limit would have ended it): re-queued, or failed after JOBS_MAX_ATTEMPTS attempts.
JOBS_LEASE_SECONDS = env_int("JOBS_LEASE_SECONDS", _LONGEST_LIMIT + 60)
JOBS_MAX_ATTEMPTS = env_int("JOBS_MAX_ATTEMPTS", 3)
ANALYSIS_COST_BUDGET = env_int("ANALYSIS_COST_BUDGET", 1_000_000)
AGGREGATE_MAX_CATEGORIES = env_int("AGGREGATE_MAX_CATEGORIES", 100)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "refresh-open-survey-reports": {
        "task": "reconstruction.refresh_open_survey_reports",
        "schedule": float(env_int("REPORT_REFRESH_SECONDS", 3600)),
    },
    "requeue-stuck-jobs": {
        "task": "reconstruction.requeue_stuck_jobs",
        "schedule": float(env_int("JOBS_REQUEUE_SECONDS", 300)),
    },
    # Surveys whose retention period has passed lose their distorted answers
    # (surveys.retention; docs/organisers/data-lifecycle.md).
    "purge-expired-surveys": {
        "task": "surveys.purge_expired_surveys",
        "schedule": float(env_int("RETENTION_PURGE_SECONDS", 3600)),
    },
}

HEALTHZ_WORKER_TIMEOUT = float(env_str("HEALTHZ_WORKER_TIMEOUT", "1.0"))

# --- Logging: to stdout, never an IP address or a user agent.
LOG_LEVEL = env_str("DJANGO_LOG_LEVEL", "INFO")
LOG_FORMAT = env_str("DJANGO_LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ConfigurationError(f"DJANGO_LOG_FORMAT must be plain or json, got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        # One JSON object a line, for log collectors (python-json-logger).
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    # No client address in any log line (config/logfilters.py).
    "filters": {"no_addresses": {"()": "config.logfilters.NoAddresses"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["no_addresses"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # runserver's request log prints the client address: keep it quiet.
        "django.server": {"handlers": [], "level": "ERROR", "propagate": False},
    },
}

# --- Cache (rate limits): Redis when configured, else per-process memory.
CACHE_URL = env_str("CACHE_URL")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Seconds a verified API key is trusted without a database look-up (per process);
# a revocation reaches the other processes within this delay.
API_KEY_CACHE_SECONDS = env_int("API_KEY_CACHE_SECONDS", 5)

# The example portal page (/portal-example/<open survey id>/) is off unless enabled; it
# posts with this portal key (empty or not a usable portal key: the page says so).
PORTAL_EXAMPLE_ENABLED = env_bool("PORTAL_EXAMPLE_ENABLED", False)
PORTAL_EXAMPLE_KEY = env_str("PORTAL_EXAMPLE_KEY")

# Error reports to Sentry when SENTRY_DSN is set: no personal data, no request bodies
# (they hold participant references), no local variables.
SENTRY_DSN = env_str("SENTRY_DSN")
if SENTRY_DSN:
    import sentry_sdk

    sentry_sdk.init(
        dsn=SENTRY_DSN,
        environment=env_str("SENTRY_ENVIRONMENT", "production"),
        release=env_str("SENTRY_RELEASE") or None,
        send_default_pii=False,
        max_request_body_size="never",
        include_local_variables=False,
        traces_sample_rate=float(env_str("SENTRY_TRACES_SAMPLE_RATE", "0")),
    )
