"""The `openai` model provider: the Responses API through the openai SDK. `provider.OpenAIProvider` is what the
registry serves; the other modules are its parts: the client (one per process and loop), capabilities (what
each model accepts), structured (strict outputs), stream (a streamed answer's events), citations (the hosted
search's inline links to `[n]`), usage, failures (error translation) and warm_up."""
