# chaostoolkit-db in a container: `chaos run` with this pack, for scheduled game days
# (chaosdb manifests render kubernetes/gameday-cronjob). Build: docker build -t chaosdb:0.1.0 .
# The pack is installed from its wheel with the extras a Kubernetes game day uses, every version pinned
# (chaosdb/shipped/images/chaosdb/constraints.txt); the templates and experiments are in the wheel, no kubectl is needed (the official
# Kubernetes client does everything).
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps -w /dist .

FROM python:3.11-slim
COPY --from=wheel /dist /dist
COPY chaosdb/shipped/images/chaosdb/constraints.txt /tmp/constraints-image.txt
RUN pip install --no-cache-dir -c /tmp/constraints-image.txt "$(ls /dist/chaostoolkit_db-*.whl)[postgres,load,report,k8s]" \
    && rm -rf /dist /tmp/constraints-image.txt \
    && useradd --uid 10001 --create-home chaos
ENV CHAOSDB_HOME=/tmp/chaosdb \
    PYTHONUNBUFFERED=1
USER 10001
WORKDIR /home/chaos
ENTRYPOINT ["chaos"]
CMD ["--help"]
