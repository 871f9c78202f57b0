# FL Privacy Lab as a shared server (see README, "Hosting"; docker-compose.yml runs it).
#   docker build -t fl-privacy-lab .                                      # CUDA pair (GPU hosts)
#   docker build -t fl-privacy-lab --build-arg REQUIREMENTS=requirements-cpu.txt .   # CPU only
FROM python:3.11-slim
ARG REQUIREMENTS=requirements.txt
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY requirements.txt requirements-cpu.txt ./
RUN pip install -r "${REQUIREMENTS}"
# a non-root user; the run store is private to it (0700): diskcache would unpickle what others write
RUN useradd --create-home --uid 1000 lab \
    && mkdir -p /runs /data \
    && chown lab:lab /runs /data \
    && chmod 700 /runs
COPY . .
USER lab
ENV HOME=/home/lab FEDCORE_STORE=/runs FEDCORE_DATA=/data
VOLUME ["/runs", "/data"]
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read() != b'ok')"
CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
