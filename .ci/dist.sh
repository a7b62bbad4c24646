#!/usr/bin/env bash
# Build the sdist and the wheel into dist/ with the given Python (which has `build` and `twine`), refuse
# any warning of the build, and check both with twine. Usage: bash .ci/dist.sh .venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-.venv/bin/python}
# The *.egg-info folder stays: the checkout's editable installs read their entry points from it.
rm -rf dist build
mkdir -p dist
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# PYTHONDONTWRITEBYTECODE would make setuptools warn that it cannot byte-compile.
if ! env -u PYTHONDONTWRITEBYTECODE "$python" -m build --outdir dist . >"$log" 2>&1; then
  cat "$log"
  exit 1
fi
if grep -n -i 'warning' "$log"; then
  echo "The build warned (lines above): fix the packaging." >&2
  exit 1
fi
rm -rf build
"$python" -m twine check --strict dist/*.whl dist/*.tar.gz
ls -l dist
