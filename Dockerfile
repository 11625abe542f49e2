# chaostoolkit-db in a container: `chaos run` with this pack, for scheduled game days
# (chaos-mesh-manifests/kubernetes/gameday-cronjob.yaml). Build: docker build -t chaosdb:0.1.0 .
FROM python:3.11-slim
WORKDIR /opt/chaosdb
COPY pyproject.toml README.md ./
COPY chaosdb ./chaosdb
COPY chaos-mesh-manifests ./chaos-mesh-manifests
COPY experiments ./experiments
COPY load ./load
RUN pip install --no-cache-dir ".[postgres,load,report,k8s]" \
    && useradd --uid 10001 --create-home chaos
ENV CHAOSDB_MANIFESTS=/opt/chaosdb/chaos-mesh-manifests \
    CHAOSDB_HOME=/tmp/chaosdb \
    PYTHONUNBUFFERED=1
USER 10001
WORKDIR /home/chaos
ENTRYPOINT ["chaos"]
CMD ["--help"]
