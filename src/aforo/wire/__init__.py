"""What the provider adapters and the server readers both need to talk to a local model server: one
translation of HTTP failures (overflow dialects included), one walk from canonical messages to chat
messages (a `Dialect` per wire format), the OpenAI chat body, the base URL's two forms, and the two
kinds of side request (a quiet GET, a strict POST). It imports nothing above it."""
