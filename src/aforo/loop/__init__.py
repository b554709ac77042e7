"""The assistant's loop: call the model, read its reply once, act on the tool calls, show the answer."""
