"""What touches the operating system beyond plain files: atomic replacement, the last-resort watchdog, and the
watcher that ends what crab started should crab be killed outright. Private."""
