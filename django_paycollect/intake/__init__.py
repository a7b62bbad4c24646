"""The HTTP edge: what the service sends us (callbacks, browser returns), read once and never trusted."""
