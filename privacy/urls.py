"""Mounted by config/urls.py under ``portal-example/``."""

from django.urls import path

from privacy import views

app_name = "privacy"

urlpatterns = [
    path("<int:survey_id>/", views.portal_example, name="portal-example"),
]
