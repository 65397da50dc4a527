from django.contrib import admin
from django.urls import path, re_path

from chat import openai_compat, pages, views
from chat.api import api
from chat.api_briefs import router as briefs
from chat.api_watchlists import router as watchlists

api.add_router("/watchlists", watchlists)
api.add_router("", briefs)

urlpatterns = [
    path("", pages.index, name="index"),
    path("admin/", admin.site.urls),
    path("api/runs/<str:run_id>/events", views.run_events, name="run-events"),
    path("api/", api.urls),
    re_path(r"^api/(?P<path>.*)$", views.api_not_found),
    path("v1/chat/completions", openai_compat.chat_completions, name="openai-chat-completions"),
    path("v1/models", openai_compat.list_models, name="openai-models"),
    path("v1/models/<str:model>", openai_compat.retrieve_model, name="openai-model"),
]
