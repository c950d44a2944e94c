# syntax=docker/dockerfile:1
# haproxy from Debian's packages (bookworm: 2.6, the version CI tests) with deploy/haproxy.cfg;
# the balancer of compose.yaml's "scale-out" profile.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/*
COPY haproxy.cfg /etc/haproxy/haproxy.cfg
RUN haproxy -c -f /etc/haproxy/haproxy.cfg
USER haproxy
EXPOSE 8000 8404
# in the foreground, logging to stdout
CMD ["haproxy", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
