"""What touches the operating system beyond plain files: atomic replacement, blocking calls in daemon
threads, the last-resort watchdog, live-session locks, and the watcher that ends what crab started
should crab be killed outright. Private."""
