"""Programs bundled with autolax for ``autolax demo``."""
