"""Every model of the chat app can be browsed in the Django admin."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from chat.models import ApiKey, Conversation, Message, ResearchRun
from chat.services.api_keys import create_api_key


@pytest.mark.django_db
@pytest.mark.parametrize("model", [Conversation, Message, ResearchRun, ApiKey], ids=lambda m: m.__name__)
def test_admin_lists_and_shows_each_model(client, model):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    conversation = Conversation.objects.create(user=admin, title="Apple")
    question = Message.objects.create(conversation=conversation, role="user", content="How is Apple doing?")
    run = ResearchRun.objects.create(conversation=conversation, user_message=question)
    api_key, _ = create_api_key("root")
    instance = {Conversation: conversation, Message: question, ResearchRun: run, ApiKey: api_key}[model]
    base = f"/admin/chat/{model._meta.model_name}/"

    assert client.get(base).status_code == 200
    assert client.get(f"{base}{instance.pk}/change/").status_code == 200


@pytest.mark.django_db
def test_admin_never_shows_an_anonymous_owners_session_key(client):
    """The session key is the visitor's live cookie: reading it is enough to act as them."""
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    session_key = "k3ysecretsessioncookievalue0001"
    conversation = Conversation.objects.create(session_key=session_key, title="Anonymous question")

    listing = client.get("/admin/chat/conversation/")
    change_form = client.get(f"/admin/chat/conversation/{conversation.pk}/change/")

    assert listing.status_code == change_form.status_code == 200
    assert session_key not in listing.content.decode()
    assert session_key not in change_form.content.decode()
    assert "anonymous session" in listing.content.decode()
