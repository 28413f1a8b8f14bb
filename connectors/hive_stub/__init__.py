"""A Hive-metastore-like HTTP service that runs as its own process (`gravimeta hive-stub serve`).

It gives the `hive` provider a real second system with its own storage, so the connector/EntityStore
two-store problem is real in tests: the stub can be slowed down, made to fail, hang, or crash between
persisting a change and answering (see faults.py and the /_faults endpoints in server.py).
"""
