"""The loop: the agent, one turn, tool calls, sessions, routing, history, the token budget and pricing. Private."""
