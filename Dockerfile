# Anteroom's container image: `podman build -t anteroom .` (or docker build).
# Three stages on Debian bookworm: the browser agent built with Node, the wheels built (with a
# compiler, in case a dependency has no wheel for this platform), and a slim runtime with only
# Debian's python3 and a virtualenv holding those wheels. A `redis` target gives Debian's
# redis-server for compose.yaml (`--target redis`).
#
# BUILD_CA_CERTS: only where npm and pip reach their registries through a TLS-inspecting proxy,
# the path of that proxy's CA bundle inside the build, mounted by the builder (podman build -v).

FROM debian:bookworm-slim AS agent
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
ARG BUILD_CA_CERTS=
RUN if [ -n "$BUILD_CA_CERTS" ]; then export NODE_EXTRA_CA_CERTS="$BUILD_CA_CERTS"; fi \
 && npm ci --no-audit --no-fund
COPY frontend/ frontend/
COPY static/ static/
RUN npm run build

FROM debian:bookworm-slim AS wheels
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv python3-dev build-essential ca-certificates \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
ARG BUILD_CA_CERTS=
RUN if [ -n "$BUILD_CA_CERTS" ]; then export PIP_CERT="$BUILD_CA_CERTS"; fi \
 && python3 -m venv /opt/build && /opt/build/bin/pip install --quiet --upgrade pip
WORKDIR /src
# The dependencies' wheels first, from pyproject.toml alone: a change to the source rebuilds only
# Anteroom's own two wheels below, not these.
COPY pyproject.toml ./
RUN if [ -n "$BUILD_CA_CERTS" ]; then export PIP_CERT="$BUILD_CA_CERTS"; fi \
 && python3 -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(d for d in deps if not d.startswith('anteroom-sdk')))" > /tmp/requirements.txt \
 && /opt/build/bin/pip wheel --quiet --wheel-dir /wheels -r /tmp/requirements.txt
COPY hatch_build.py README.md LICENSE ./
COPY packages/ packages/
COPY backend/ backend/
COPY lua/ lua/
COPY templates/ templates/
COPY translations/ translations/
COPY frontend/ frontend/
# The agent from the first stage, newer than frontend/: the build hook needs no Node here.
COPY --from=agent /src/static/ static/
RUN if [ -n "$BUILD_CA_CERTS" ]; then export PIP_CERT="$BUILD_CA_CERTS"; fi \
 && touch static/* \
 && /opt/build/bin/pip wheel --quiet --no-deps --wheel-dir /wheels ./packages/anteroom-sdk .

FROM debian:bookworm-slim AS redis
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
USER redis
VOLUME /var/lib/redis
WORKDIR /var/lib/redis
EXPOSE 6379
HEALTHCHECK --interval=5s --timeout=3s --retries=5 CMD ["redis-cli", "ping"]
# The line lives in Redis: the append-only file, fsynced every second, keeps it across restarts.
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/var/lib/redis", \
     "--appendonly", "yes", "--appendfsync", "everysec"]

FROM debian:bookworm-slim AS anteroom
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv ca-certificates \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
RUN --mount=type=bind,from=wheels,source=/wheels,target=/wheels \
    python3 -m venv /opt/anteroom \
 && /opt/anteroom/bin/pip install --quiet --no-cache-dir --no-index --find-links /wheels anteroom \
 && /opt/anteroom/bin/pip uninstall --quiet --yes pip setuptools \
 && useradd --system --uid 10001 --home-dir /var/lib/anteroom --create-home anteroom
# Configuration is ANTEROOM_* environment only (see docs/configuration.md); these are
# the container's defaults: listen on every address, keep data under the volume.
ENV PATH=/opt/anteroom/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ANTEROOM_BIND=0.0.0.0:8000 \
    ANTEROOM_DATA_DIR=/var/lib/anteroom
USER anteroom
WORKDIR /var/lib/anteroom
VOLUME /var/lib/anteroom
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["python3", "-c", "import os,urllib.request as u; b=os.environ['ANTEROOM_BIND'].rsplit(':',1)[1]; u.urlopen(f'http://127.0.0.1:{b}/readyz', timeout=2)"]
# gunicorn stops gracefully on SIGTERM (what `podman stop` and compose send) well within 30 s.
STOPSIGNAL SIGTERM
ENTRYPOINT ["anteroom"]
CMD ["serve"]
