"""Test helpers shipped with the package (local OpenAI-compatible server)."""
