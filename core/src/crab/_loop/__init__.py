"""The loop: the agent and its handle, one turn, tool calls and running a tool, sessions, routing,
history, images, the token budget and pricing. Private."""
