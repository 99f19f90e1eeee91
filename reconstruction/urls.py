from django.urls import path

from reconstruction import apis, export_apis

urlpatterns = [
    path("analyses/", apis.AnalysisListCreateApi.as_view(), name="analysis-list"),
    path("analyses/<int:analysis_id>/", apis.AnalysisDetailApi.as_view(), name="analysis-detail"),
    path(
        "analyses/<int:analysis_id>/cancel/",
        apis.AnalysisCancelApi.as_view(),
        name="analysis-cancel",
    ),
    path(
        "analyses/<int:analysis_id>/probabilities.csv",
        apis.PanelProbabilitiesApi.as_view(),
        name="analysis-probabilities",
    ),
    path("surveys/<int:survey_id>/reports/", apis.ReportCreateApi.as_view(), name="report-create"),
    path("reports/<int:report_id>/", apis.ReportDetailApi.as_view(), name="report-detail"),
    path(
        "reports/<int:report_id>/download/",
        apis.ReportDownloadApi.as_view(),
        name="report-download",
    ),
    path(
        "analyses/<int:analysis_id>/export/",
        export_apis.AnalysisExportApi.as_view(),
        name="analysis-export",
    ),
    path(
        "reports/<int:report_id>/export/",
        export_apis.ReportExportApi.as_view(),
        name="report-export",
    ),
    path(
        "aggregate-reconstructions/",
        apis.AggregateReconstructionCreateApi.as_view(),
        name="aggregate-reconstruction-create",
    ),
    path(
        "aggregate-reconstructions/<int:job_id>/",
        apis.AggregateReconstructionDetailApi.as_view(),
        name="aggregate-reconstruction-detail",
    ),
]
