"""The `openai-compatible` model provider: any Chat Completions server (Ollama, vLLM, LM Studio, OpenRouter...)
through the openai SDK, Chat Completions only. `provider.OpenAICompatibleProvider` is what the registry serves;
the other modules are its parts: the client (`OPENAI_COMPATIBLE_BASE_URL`), structured (a strict
`json_schema` response format, or JSON asked for in the prompt, validated, with one repair), stream (a
streamed answer and its usage), usage and failures (error translation, on top of the `openai` provider's)."""
