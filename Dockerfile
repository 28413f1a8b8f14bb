# The gravimeta image: the server, the CLI (db upgrade, cluster, demo race) and the PostgreSQL and
# MySQL drivers. docker-compose.yml runs it as the migrate job, the replicas and the race demo.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    GRAVIMETA_HOME=/var/lib/gravimeta
WORKDIR /opt/gravimeta
COPY pyproject.toml README.md alembic.ini ./
COPY alembic ./alembic
COPY gravimeta ./gravimeta
COPY connectors ./connectors
# editable: migrations are found next to the package (gravimeta/store/migrations.py: ../../alembic)
# /shared/sqlite-catalogs: the mount point of the volume the replicas share for `sqlite` catalogs (a new
# named volume takes this directory's owner)
RUN pip install -e '.[postgres,mysql]' && useradd --system --home /var/lib/gravimeta gravimeta \
    && mkdir -p /var/lib/gravimeta /shared/sqlite-catalogs && chown gravimeta /var/lib/gravimeta /shared/sqlite-catalogs
USER gravimeta
EXPOSE 8090
HEALTHCHECK --interval=5s --timeout=2s --retries=6 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8090/health/live', timeout=2)"
ENTRYPOINT ["gravimeta"]
CMD ["serve", "--bind", "0.0.0.0:8090"]
