#!/usr/bin/env bash
# Installs autolax as a user does, beside the newest JAX, and checks that nothing moved:
#
#   tools/check_install.sh [PYTHON]      # default: python3
#
# In a fresh venv (under a temporary folder): the newest JAX first, then the wheel that
# `pip wheel --no-deps .` builds; then, autolax uninstalled, `pip install .`. Each time the
# versions of every installed distribution must be what they were before autolax came,
# `pip check` must be clean, and `autolax --help` and `import autolax` must work.
# Exit status 0 when all of that holds.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

installed() { "$1/bin/python" -m pip list --format=freeze --exclude autolax 2>/dev/null | sort; }

venv=$work/venv
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet jax
installed "$venv" >"$venv.before"

check() {  # what to install, label
  local target=$1 label=$2
  "$venv/bin/python" -m pip uninstall --quiet --yes autolax >/dev/null 2>&1 || true
  "$venv/bin/python" -m pip install --quiet "$target"
  installed "$venv" >"$venv.after"
  # What autolax adds (gast) may appear; nothing that was there may change or go.
  if ! comm -23 "$venv.before" "$venv.after" | diff /dev/null - >/dev/null; then
    echo "$label: installing autolax changed what was installed:" >&2
    comm -23 "$venv.before" "$venv.after" | sed 's/^/  was: /' >&2
    comm -13 "$venv.before" "$venv.after" | sed 's/^/  now: /' >&2
    return 1
  fi
  "$venv/bin/python" -m pip check
  "$venv/bin/autolax" --help >/dev/null
  (cd "$work" && "$venv/bin/python" -c "import autolax, jax; print('  $label: autolax', autolax.__version__, 'beside jax', jax.__version__)")
}

"$venv/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" . >/dev/null
check "$(ls "$work"/dist/autolax-*.whl)" "the wheel"
check "$PWD" "pip install ."
echo "check_install: nothing moved"
