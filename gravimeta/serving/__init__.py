"""How `gravimeta serve` runs gunicorn: the Prometheus multiprocess directory (metrics_dir) and the
worker class that buffers requests before a thread takes them (buffering_worker)."""
