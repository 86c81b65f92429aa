"""What plugins implement and consume: messages, events, tools, providers, stores, commands, channels,
renderers, interception, errors, config tables and the agent handle. Private; crab re-exports the public names."""
