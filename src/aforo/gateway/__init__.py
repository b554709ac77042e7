"""`aforo serve`: the governor as a gateway any OpenAI or Ollama client points at (see app.py)."""
