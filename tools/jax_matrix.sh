#!/usr/bin/env bash
# Run the test suite against each JAX minor release on each Python: one fresh venv per pair
# under .jax-matrix/ (git-ignored, reused on the next run), then a table of the outcomes.
#
#   tools/jax_matrix.sh                          # JAX 0.8 - 0.12 on Python 3.11 - 3.13; the whole suite
#   tools/jax_matrix.sh 0.9 0.10                 # chosen minors
#   PYTHONS="3.12 3.13" tools/jax_matrix.sh 0.12 # chosen Pythons (pyenv versions, by prefix)
#   tools/jax_matrix.sh 0.9 0.10 -- -x tests/integration/transforms/test_transforms.py   # pytest arguments after --
#
# JAX 0.11+ needs Python 3.12+: a pair the package index serves no release for is reported
# as "not served", not as a failure.
# (pytest.ini already adds -q: a second -q hides the pass/fail counts from the table)
#
# Each minor gets its newest patch release ("jax==0.9.*", with the matching jaxlib). autolax
# is installed without its dependency pins (--no-deps) so that a release outside the range in
# pyproject.toml can be tried before the pin is widened; its other dependencies and the test
# extra are read from pyproject.toml. Exit status: 0 if every minor passed.
set -uo pipefail
cd "$(dirname "$0")/.."

minors=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do minors+=("$1"); shift; done
[ $# -gt 0 ] && shift  # the "--"
pytest_args=("$@")
[ ${#minors[@]} -eq 0 ] && minors=(0.8 0.9 0.10 0.11 0.12)
[ ${#pytest_args[@]} -eq 0 ] && pytest_args=(-p no:cacheprovider)

read -r -a pythons <<<"${PYTHONS:-3.11 3.12 3.13}"
python_for() {  # the newest pyenv Python of a version prefix, else pythonX.Y on PATH
  local version
  version=$(pyenv versions --bare 2>/dev/null | grep -E "^${1//./\\.}\\.[0-9]+$" | sort -V | tail -1)
  if [ -n "$version" ]; then echo "$(pyenv prefix "$version")/bin/python"; else command -v "python$1"; fi
}
python=$(python_for "${pythons[0]}")
# Everything autolax needs except jax/jaxlib, and its test extra, as pip requirements.
mapfile -t deps < <("$python" - <<'EOF'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = project["optional-dependencies"]
reqs = project["dependencies"] + extras["test"]
while any(r.startswith("autolax[") for r in reqs):  # the test extra names others: autolax[compat]
    own = [r for r in reqs if r.startswith("autolax[")]
    reqs = [r for r in reqs if not r.startswith("autolax[")]
    for r in own:
        for extra in r[len("autolax["):-1].split(","):
            reqs += extras[extra.strip()]
for req in reqs:
    if re.split(r"[<>=!~ \[]", req, maxsplit=1)[0].lower() not in ("jax", "jaxlib"):
        print(req)
EOF
)

mkdir -p .jax-matrix
results=()
status=0
for py in "${pythons[@]}"; do
 interpreter=$(python_for "$py")
 if [ -z "$interpreter" ]; then results+=("$py|-|-|no such Python|-"); status=1; continue; fi
 for minor in "${minors[@]}"; do
  venv=".jax-matrix/py$py-jax-$minor"
  log=".jax-matrix/py$py-jax-$minor.log"
  echo "=== Python $py, JAX $minor: $venv (log: $log)"
  if [ ! -x "$venv/bin/python" ]; then
    "$interpreter" -m venv "$venv" || { results+=("$py|$minor|-|venv failed|-"); status=1; continue; }
  fi
  if ! "$venv/bin/python" -m pip install --quiet "jax==$minor.*" "jaxlib==$minor.*" "${deps[@]}" >"$log" 2>&1; then
    if grep -q "No matching distribution found for jax" "$log"; then
      echo "    not served for Python $py"
      results+=("$py|$minor|-|not served|-")
    else
      echo "    install failed (see $log)"
      results+=("$py|$minor|-|install failed|-")
      status=1
    fi
    continue
  fi
  if ! "$venv/bin/python" -m pip install --quiet --no-deps -e . >>"$log" 2>&1; then
    echo "    install failed (see $log)"
    results+=("$py|$minor|-|install failed|-")
    status=1
    continue
  fi
  version=$("$venv/bin/python" -c "import jax, jaxlib; print(jax.__version__ + ' / ' + jaxlib.__version__)")
  start=$(date +%s)
  "$venv/bin/python" -m pytest "${pytest_args[@]}" >>"$log" 2>&1
  rc=$?
  seconds=$(( $(date +%s) - start ))
  summary=$(grep -E "^(=+ )?[0-9]+ (passed|failed)|^(=+ )?[0-9]+ (error|skipped)|(passed|failed|error).* in [0-9.]+s" "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
  [ $rc -eq 0 ] || status=1
  echo "    jax/jaxlib $version: ${summary:-pytest exit $rc} (exit $rc, ${seconds}s)"
  results+=("$py|$minor|$version|${summary:-pytest exit $rc}|$rc")
 done
done

echo
echo "pytest ${pytest_args[*]}"
printf '| %-6s | %-6s | %-18s | %-50s | %-4s |\n' "python" "minor" "jax / jaxlib" "pytest" "exit"
printf '|%s|%s|%s|%s|%s|\n' "--------" "--------" "--------------------" "----------------------------------------------------" "------"
for row in "${results[@]}"; do
  IFS='|' read -r py minor version summary rc <<<"$row"
  printf '| %-6s | %-6s | %-18s | %-50s | %-4s |\n' "$py" "$minor" "$version" "$summary" "$rc"
done
exit $status
