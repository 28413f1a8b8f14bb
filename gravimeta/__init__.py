"""gravimeta: a Gravitino-compatible metadata catalog server built for several replicas on one database."""

__version__ = "0.1.0"
# The Gravitino REST version we speak; the official client requires (major, minor) >= its own.
GRAVITINO_API_VERSION = "1.3.1"
