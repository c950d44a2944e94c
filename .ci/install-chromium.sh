#!/usr/bin/env bash
# Install Debian's chromium (the browser tests/app/test_dashboard_browser.py drives through
# Playwright at /usr/bin/chromium) if it is missing. No browser is ever downloaded by Playwright.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq chromium >&2
echo "chromium installed: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
