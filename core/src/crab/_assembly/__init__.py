"""The composition root: config, trust, plugin host, store, provider and renderer assembled into an agent. Private."""
