"""The plugin host: hookspecs, the dispatcher, finding and loading plugins, API versions. Private."""
