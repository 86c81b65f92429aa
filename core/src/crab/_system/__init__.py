"""What touches the operating system beyond plain files: atomic replacement and the last-resort watchdog. Private."""
