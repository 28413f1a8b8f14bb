# The gravimeta image: the server, the CLI (db upgrade, cluster, demo race) and the PostgreSQL and
# MySQL drivers. docker-compose.yml runs it as the migrate job, the replicas and the race demo.
# BASE_IMAGE: python:3.11-slim by default; deploy/loopback builds it on a plain Debian image made
# locally (no registry), where Python comes from Debian's packages.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GRAVIMETA_HOME=/var/lib/gravimeta PATH=/opt/venv/bin:$PATH
RUN if ! python3 -c 'import ensurepip, ssl' 2>/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -m venv /opt/venv
WORKDIR /opt/gravimeta
# dependencies first (a layer that changes only with pyproject.toml), then the code
COPY pyproject.toml README.md ./
RUN mkdir gravimeta connectors && touch gravimeta/__init__.py connectors/__init__.py \
    && pip install -e '.[postgres,mysql]'
COPY alembic.ini ./
COPY alembic ./alembic
COPY connectors ./connectors
COPY gravimeta ./gravimeta
# editable: migrations are found next to the package (gravimeta/store/migrations.py: ../../alembic)
# /shared/sqlite-catalogs: the mount point of the volume the replicas share for `sqlite` catalogs (a new
# named volume takes this directory's owner)
RUN useradd --system --home /var/lib/gravimeta gravimeta \
    && mkdir -p /var/lib/gravimeta /shared/sqlite-catalogs && chown gravimeta /var/lib/gravimeta /shared/sqlite-catalogs
USER gravimeta
EXPOSE 8090
HEALTHCHECK --interval=5s --timeout=2s --retries=6 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8090/api/health/live', timeout=2)"
ENTRYPOINT ["gravimeta"]
CMD ["serve", "--bind", "0.0.0.0:8090"]
