"""What plugins implement and consume: messages, events, tools, providers, stores, commands, channels,
renderers, interception, errors, the configuration and the agent handle, as dataclasses, Protocols and
errors that import nothing else of crab (core/tests/test_import_graph.py). Private; crab re-exports
the public names."""
