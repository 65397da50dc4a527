from django.contrib import admin

from chat.models import ApiKey, Conversation, Message, ResearchRun


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ("role", "status", "content", "created_at")
    readonly_fields = ("created_at",)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """An anonymous conversation's `session_key` is its owner's live session cookie: whoever reads it can
    act as that visitor, so the admin never shows it, only that the owner is an anonymous session."""

    list_display = ("id", "title", "owner", "updated_at")
    search_fields = ("title", "user__username")
    exclude = ("session_key",)
    readonly_fields = ("owner",)
    inlines = [MessageInline]

    @admin.display(description="owner")
    def owner(self, conversation: Conversation) -> str:
        return str(conversation.user) if conversation.user_id is not None else "anonymous session"


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "role", "status", "created_at")
    list_filter = ("role", "status")
    search_fields = ("content",)


@admin.register(ResearchRun)
class ResearchRunAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "requested_mode", "mode", "status", "created_at", "finished_at")
    list_filter = ("status", "mode", "requested_mode")
    readonly_fields = (
        "plan", "rounds", "timings", "usage", "signals", "facts", "confidence", "trace", "verification", "error"
    )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked")
    list_filter = ("revoked",)
    readonly_fields = ("prefix", "digest", "created_at", "last_used_at")
