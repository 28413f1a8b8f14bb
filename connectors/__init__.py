"""Connector SPI and the built-in connectors; a catalog's `provider` names the connector it uses."""
