#!/usr/bin/env bash
# Install Debian's chromium (the browser tests/app/test_dashboard_browser.py drives through
# Playwright at /usr/bin/chromium) and curl (tests/app/test_docs_examples.py runs the docs' curl
# examples) if they are missing. No browser is ever downloaded by Playwright.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq >&2
    $SUDO apt-get install -y -qq "${missing[@]}" >&2
fi
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
