// Compiled into a library layer that has no source yet, so the build configures.
