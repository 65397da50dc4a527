from django.contrib import admin

from chat.models import ApiKey, Conversation, Message, ResearchRun


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ("role", "status", "content", "created_at")
    readonly_fields = ("created_at",)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "user", "session_key", "updated_at")
    search_fields = ("title", "user__username")
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "role", "status", "created_at")
    list_filter = ("role", "status")
    search_fields = ("content",)


@admin.register(ResearchRun)
class ResearchRunAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "requested_mode", "mode", "status", "created_at", "finished_at")
    list_filter = ("status", "mode", "requested_mode")
    readonly_fields = ("plan", "rounds", "timings", "usage", "signals", "facts", "confidence", "trace", "verification", "error")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked")
    list_filter = ("revoked",)
    readonly_fields = ("prefix", "digest", "created_at", "last_used_at")
