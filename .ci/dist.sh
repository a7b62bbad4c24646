#!/usr/bin/env bash
# Build the sdist and the wheel into dist/ with the given Python (which has `build` and `twine`), refuse
# any warning of the build, check both with twine, and check that both carry the compiled catalogue (.mo) of
# each of the package's .po files. Usage: bash .ci/dist.sh .venv/bin/python
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
"$python" - <<'PY'
import sys
import tarfile
import zipfile
from pathlib import Path

# The package's catalogues, each wanted compiled (committed beside it: nothing in the build compiles).
catalogues = Path("django_paycollect").glob("**/locale/*/LC_MESSAGES/*.po")
wanted = sorted(str(po.with_suffix(".mo")) for po in catalogues)
assert wanted, "no catalogue found under django_paycollect/"
# And the Prometheus alerting rules the docs tell sites to load from the installed package.
wanted += ["django_paycollect/prometheus/alerts.yml", "django_paycollect/prometheus/alerts_test.yml"]
(wheel,) = Path("dist").glob("*.whl")
(sdist,) = Path("dist").glob("*.tar.gz")
with zipfile.ZipFile(wheel) as archive:
    in_wheel = set(archive.namelist())
with tarfile.open(sdist) as archive:
    # The sdist's names start with its folder, django_paycollect-<version>/.
    in_sdist = {name.partition("/")[2] for name in archive.getnames()}
missing = [
    f"{mo} not in {built}"
    for built, names in ((wheel, in_wheel), (sdist, in_sdist))
    for mo in wanted
    if mo not in names
]
if missing:
    sys.exit("Missing from the build (make compile-messages; commit every file):\n" + "\n".join(missing))
print(f"both carry the compiled catalogues and the alerting rules: {', '.join(wanted)}")
PY
ls -l dist
