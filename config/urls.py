from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config import oidc
from config.health import healthz
from config.home import home
from reconstruction.views import (
    admin_analysis_export,
    admin_panel_probabilities,
    admin_report_download,
    admin_report_export,
)

api_v1 = [
    path("", include("consultations.urls")),
    path("", include("surveys.urls")),
    path("", include("reconstruction.urls")),
    path("", include("webhooks.urls")),
]

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path(
        "admin/reports/<int:report_id>/download/",
        admin_report_download,
        name="admin-report-download",
    ),
    path(
        "admin/reports/<int:report_id>/export/",
        admin_report_export,
        name="admin-report-export",
    ),
    path(
        "admin/analyses/<int:analysis_id>/export/",
        admin_analysis_export,
        name="admin-analysis-export",
    ),
    path(
        "admin/analyses/<int:analysis_id>/probabilities.csv",
        admin_panel_probabilities,
        name="admin-panel-probabilities",
    ),
    path("admin/", admin.site.urls),
    # Staff single sign-on (config/oidc.py): 404 unless OIDC_RP_CLIENT_ID is set.
    path("oidc/authenticate/", oidc.authenticate_view, name="oidc_authentication_init"),
    path("oidc/callback/", oidc.callback_view, name="oidc_authentication_callback"),
    path("oidc/logout/", oidc.logout_view, name="oidc_logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include(api_v1)),
    path("portal-example/", include("privacy.urls")),
]
