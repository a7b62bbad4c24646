#!/usr/bin/env bash
# Browser tests' needs: Debian's Chromium (/usr/bin/chromium) and Playwright for Python in the virtualenv
# of DJANGO (empty: .venv; 6.1: .venv-django6.1, as in the Makefile).
# Playwright never downloads a browser here: the tests launch Debian's with executable_path.
# Usage (from .ci/run): DJANGO=6.1 bash .ci/browser.sh && make test-browser DJANGO=6.1
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium
fi
/usr/bin/chromium --version

make --no-print-directory install-browser DJANGO="${DJANGO:-}" </dev/null
