# The course image: JupyterLab, the kit, valkey-server 9.1.2 (for each learner's
# embedded node) and a C compiler (for the trafikey module), for a machine
# that reaches an image registry and Debian's archive.
#
#   docker build -f docker/course.Dockerfile -t echomq-course:local .
#   docker run --rm --network host -e JUPYTER_TOKEN=... echomq-course:local   # http://127.0.0.1:8888/lab
#
# Without a registry, docker/build-course-offline.sh makes the learner's part
# of it from this machine (its Python, the venv's packages, its valkey-server,
# trafikey prebuilt): same tag, same notebook folder (/home/learner/the-queue),
# same run command (JUPYTER_TOKEN or JUPYTER_TOKEN_FILE, JUPYTER_PORT), but no
# JupyterHub, no compiler and no shell. docs/containers.md compares the two.
#
# Host networking: JupyterLab and every node the kernels start bind 127.0.0.1
# of the host, and nothing else. The same image is what a classroom's hub starts
# for each student (echomq_teach/hub/spawner.py): jupyterhub is installed with the
# 'hub' extra, so /usr/local/bin/jupyterhub-singleuser is there, as in the offline image.
FROM python:3.11-slim-bookworm

ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# gcc and make (the script reuses the image's own Debian sources, so no mirror is named here)
COPY tools/setup-system.sh /tmp/setup-system.sh
RUN bash /tmp/setup-system.sh && rm -rf /var/lib/apt/lists/* /tmp/setup-system.sh

# configurable-http-proxy for the hub: Debian's nodejs and npm, then the package
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm \
 && npm install -g --no-audit --no-fund configurable-http-proxy \
 && npm cache clean --force \
 && apt-get purge -y npm && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 learner
COPY . /opt/the-queue
# editable: trafikey.build() finds native/ beside the package, and the notebooks stay next to it
# and the kit's pinned valkey-server 9.1.2, beside the interpreter where the kit looks first
RUN pip install -e "/opt/the-queue[hub]" \
 && PYTHON=python bash /opt/the-queue/tools/install-valkey.sh /usr/local/bin \
 && chmod -R a+rX /opt/the-queue \
 && install -D -m 0644 /opt/the-queue/tools/jupyterlab/overrides.json \
      "$(python -c 'from jupyterlab.commands import get_app_dir; print(get_app_dir())')/settings/overrides.json"

USER learner
WORKDIR /home/learner
# compile trafikey once, into the learner's cache (keyed by the hash of native/); -L: notebooks/docs is a link to
# ../docs in the repository, copied as the files it names
RUN python -c "from echomq_teach.nodes import trafikey; print(trafikey.build())" \
 && cp -rL /opt/the-queue/notebooks /home/learner/the-queue \
 && jupyter trust /home/learner/the-queue/*.ipynb

# the port from $JUPYTER_PORT, as in the offline image; a taken port fails instead of moving
ENV JUPYTER_PORT=8888
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=127.0.0.1", "--no-browser", "--ServerApp.port_retries=0", \
     "--ServerApp.root_dir=/home/learner/the-queue", "--LabApp.news_url=None", \
     "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", \
     "--ServerApp.kernel_websocket_connection_class=echomq_teach.hub.lab_server.NoDelayConnection", \
     "--KernelManager.transport=ipc"]
