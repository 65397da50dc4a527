from django.contrib import admin
from django.urls import path

from chat import views
from chat.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/runs/<uuid:run_id>/events", views.run_events, name="run-events"),
    path("api/", api.urls),
]
