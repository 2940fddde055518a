# The stack-advisor API (and the planner: `advisor plan submit` runs from this image too).
# Build from the repository root:
#   docker build -f deploy/docker/api.Dockerfile -t ghcr.io/stack-advisor/api:0.1.0 .
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY advisor ./advisor
COPY cli ./cli
COPY collectors ./collectors
COPY graph_schema ./graph_schema
COPY microbench ./microbench
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir .

FROM ${PYTHON_IMAGE}
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# A numeric non-root user, so runAsNonRoot can be verified by the kubelet.
USER 65532:65532
EXPOSE 8000
ENTRYPOINT []
CMD ["advisor", "serve", "--host", "0.0.0.0", "--port", "8000"]
