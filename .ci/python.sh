#!/usr/bin/env bash
# Print the path of a Python X.Y interpreter: pythonX.Y from PATH when it runs, else the newest X.Y that
# pyenv has installed. Usage: bash .ci/python.sh 3.13
set -euo pipefail
want=${1:?usage: bash .ci/python.sh X.Y}
# A pyenv shim is on PATH for every installed version but runs only the selected ones: try it.
if found=$("python$want" -c 'import sys; print(sys.executable)' 2>/dev/null); then
  echo "$found"
  exit 0
fi
root=${PYENV_ROOT:-$HOME/.pyenv}
for dir in $(ls -d "$root/versions/$want".* 2>/dev/null | sort -V -r); do
  if [ -x "$dir/bin/python$want" ]; then
    echo "$dir/bin/python$want"
    exit 0
  fi
done
echo "No Python $want: neither python$want on PATH nor $root/versions/$want.* (install it with pyenv)." >&2
exit 1
