from django.urls import path

from surveys import apis, apis_budget, export_apis, retention_apis

urlpatterns = [
    path("surveys/", apis.SurveyListApi.as_view(), name="survey-list"),
    path("surveys/<str:pk>/", apis.SurveyDetailApi.as_view(), name="survey-detail"),
    path("surveys/<str:pk>/open/", apis.SurveyOpenApi.as_view(), name="survey-open"),
    path("surveys/<str:pk>/close/", apis.SurveyCloseApi.as_view(), name="survey-close"),
    path("surveys/<str:pk>/export/", export_apis.SurveyExportApi.as_view(), name="survey-export"),
    path("surveys/<str:pk>/purge/", retention_apis.SurveyPurgeApi.as_view(), name="survey-purge"),
    path("surveys/<str:pk>/scheme/", apis.SurveySchemeApi.as_view(), name="survey-scheme"),
    path("surveys/<str:pk>/responses/", apis.ResponseSubmitApi.as_view(), name="survey-responses"),
    path(
        "surveys/<str:pk>/responses/bulk/",
        apis.ResponseBulkApi.as_view(),
        name="survey-responses-bulk",
    ),
    # No participant reference in any URL: it would land in access and error logs.
    path(
        "surveys/<str:pk>/responses/withdraw/",
        apis.ResponseWithdrawApi.as_view(),
        name="survey-response-withdraw",
    ),
    path(
        "surveys/<str:pk>/responses/budget/",
        apis_budget.ResponseBudgetApi.as_view(),
        name="survey-response-budget",
    ),
    path("surveys/<str:pk>/calibration/", apis.CalibrationApi.as_view(), name="survey-calibration"),
]
