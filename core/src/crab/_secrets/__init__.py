"""Secrets: API keys and the redaction that keeps every known secret out of what is stored or shown. Private."""
