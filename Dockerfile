# chaostoolkit-db in a container, built from this checkout: `chaos run` with this pack, for scheduled game days
# (chaosdb manifests render kubernetes/gameday-cronjob). Build: docker build -t chaosdb.local/chaosdb:0.1.0 .
# A first stage builds the pack's wheel; the image is then the one `chaosdb images build chaosdb` makes and
# chaosdb/shipped/images/chaosdb/Dockerfile describes (this file's last stage repeats that one's, a unit test keeps
# them the same): the wheel with the extras a Kubernetes game day uses in /opt/venv on Debian bookworm's Python,
# every version pinned (chaosdb/shipped/images/chaosdb/constraints.txt), user chaosdb (uid and gid 10001), no
# entrypoint (`docker run IMAGE chaos run ...`). The templates and experiments are in the wheel; no kubectl is
# needed (the official Kubernetes client does everything).
ARG DEBIAN_IMAGE=debian:bookworm-20250520-slim

FROM python:3.11-slim AS wheel
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps -w /dist .

FROM ${DEBIAN_IMAGE}
ARG DEBIAN_SNAPSHOT=20261127T000000Z
RUN groupadd --gid 10001 chaosdb \
    && useradd --uid 10001 --gid 10001 --home-dir /home/chaosdb --no-create-home --shell /bin/sh \
        --comment chaostoolkit-db chaosdb \
    && install -d -o 10001 -g 10001 -m 0755 /home/chaosdb \
    && printf '%s\n' 'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' \
        'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
        'path-exclude=/usr/share/locale/*' 'path-exclude=/usr/share/lintian/*' 'path-exclude=/usr/share/linda/*' \
        > /etc/dpkg/dpkg.cfg.d/chaosdb-trim \
    && rm -f /etc/apt/sources.list.d/debian.sources \
    && printf 'deb http://snapshot.debian.org/archive/debian/%s bookworm main\n' "$DEBIAN_SNAPSHOT" \
        "$DEBIAN_SNAPSHOT" | sed '2s/bookworm main/bookworm-updates main/' > /etc/apt/sources.list \
    && printf 'deb http://snapshot.debian.org/archive/debian-security/%s bookworm-security main\n' \
        "$DEBIAN_SNAPSHOT" >> /etc/apt/sources.list \
    && apt-get -o Acquire::Check-Valid-Until=false update \
    && apt-get install -y --no-install-recommends python3=3.11.2-1+b1 python3-venv=3.11.2-1+b1 \
        ca-certificates=20250419~deb12u2 libstdc++6=12.2.0-14+deb12u1 \
    && rm -rf /var/lib/apt/lists/*
COPY chaosdb/shipped/images/chaosdb/constraints.txt /tmp/chaosdb-wheel/
COPY --from=wheel /dist/ /tmp/chaosdb-wheel/
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --only-binary=:all: \
        -c /tmp/chaosdb-wheel/constraints.txt "$(ls /tmp/chaosdb-wheel/chaostoolkit_db-*.whl)[postgres,load,report,k8s,serve]" \
    && rm -rf /tmp/chaosdb-wheel
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    CHAOSDB_HOME=/tmp/chaosdb
USER 10001:10001
WORKDIR /home/chaosdb
CMD ["chaos", "--help"]
