"""The `google` model provider: the Gemini API through the google-genai SDK. `provider.GoogleProvider` is what
the registry serves; the other modules are its parts: the client (one per process and loop), retries (ours:
a 429 is a rate limit or a used-up daily quota, which only the body tells apart), failures (error
translation), structured (JSON answers), grounding (the search tool's metadata to `[n]` markers), stream and
usage."""
