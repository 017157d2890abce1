# The image of `caldera controller` for Kubernetes (what `caldera kube manifests --image IMAGE` deploys).
# Not built or run in this repository's CI: its machines have no container engine. Build it with
#   docker build -t REGISTRY/caldera:VERSION .     (or podman / buildah / kaniko)
# The controller needs only caldera's Python package: no torch, no etcd, no browser.
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m pip install --no-cache-dir --prefix=/install .

FROM python:3.12-slim
COPY --from=build /install /usr/local
# The Deployment runs it as this user (runAsNonRoot, a read-only root file system).
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin caldera
USER 10001
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
ENTRYPOINT ["caldera"]
CMD ["controller"]
