"""The `anthropic` model provider: the Messages API through the anthropic SDK. `provider.AnthropicProvider` is
what the registry serves; the other modules are its parts: the client (one per process and loop), structured
(the structured-outputs format), stream (a streamed answer's events), citations (the text blocks' cited
pages to `[n]`), models (the model list, aliases resolved), usage and failures (error translation)."""
