"""Search APIs a web sub-question may search instead of the research model's hosted tool (`SEARCH_PROVIDER`)."""
