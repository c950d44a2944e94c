#!/usr/bin/env bash
# Install Debian's haproxy (the load balancer that tests/app/test_scale_out.py and
# bench/bench_scale_out.py start in front of the `serve` replicas) if it is missing. Its system
# service is not used: the test starts its own haproxy process with a generated configuration on
# free loopback ports, and stops it.
set -euo pipefail
export PATH="$PATH:/usr/sbin"
if ! command -v haproxy >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq >&2
    $SUDO apt-get install -y -qq haproxy >&2
    # where the package started its service (a machine with an init system), stop it: nothing
    # here listens on the packaged configuration's ports
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet haproxy 2>/dev/null; then
        $SUDO systemctl stop haproxy
    fi
fi
echo "haproxy: $(haproxy -v | head -1)"
