"""README's examples run as written and show what autolax really emits and reports."""

import pathlib
import re
import subprocess
import sys
import textwrap

import autolax

README = (pathlib.Path(__file__).resolve().parents[3] / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def _run(source: str, tmp_path, name="example"):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_first_example_prints_what_it_says(tmp_path):
    first = PYTHON_BLOCKS[0]
    assert "print(collatz_steps(27))    # 111" in first
    assert _run(first, tmp_path).split() == ["111"]


def test_emitted_source_shown_is_to_source(tmp_path):
    shown = next(b for b in PYTHON_BLOCKS if b.startswith("def collatz_steps(n):"))
    module = tmp_path / "readme_first.py"
    module.write_text(PYTHON_BLOCKS[0].replace("print(collatz_steps(27))", "pass"))
    sys.path.insert(0, str(tmp_path))
    try:
        import readme_first

        assert autolax.to_source(readme_first.collatz_steps.__autolax_jit__.fn) == shown
    finally:
        sys.path.remove(str(tmp_path))


def test_gradient_example_runs(tmp_path):
    block = next(b for b in PYTHON_BLOCKS if "loop_options(max_steps=4096)" in b and "def decay" in b)
    source = "import jax\nimport jax.numpy as jnp\nimport autolax\n\n" + block.replace(
        "jax.grad(autolax.convert(decay), argnums=1)(1.0, 0.7, 2.0)   # works",
        "print(float(jax.grad(autolax.convert(decay.__autolax_jit__.fn), argnums=1)(1.0, 0.7, 2.0)))")
    value = float(_run(source, tmp_path, "gradient").split()[-1])
    assert -2.0 < value < 0.0  # d/d(rate) of a decay: negative


def test_trace_check_example_matches_the_report(tmp_path):
    shown = re.search(r"```\nwhere .*?```", README, flags=re.S).group(0)
    source = PYTHON_BLOCKS[0].replace("print(collatz_steps(27))", "print(autolax.trace_check(collatz_steps, 27))")
    printed = _run(source, tmp_path, "demo")
    rows = [line.split()[:2] for line in printed.splitlines() if line.startswith("demo.py")]
    shown_rows = [line.split()[:2] for line in shown.splitlines() if line.startswith("demo.py")]
    assert rows == shown_rows
    assert textwrap.dedent(shown).count("no loop was unrolled") == 1 and "no loop was unrolled" in printed


def test_equinox_example_runs(tmp_path):
    block = next(b for b in PYTHON_BLOCKS if "class Doubler(eqx.Module):" in b)
    source = block.replace("autolax.filter_jit(model)(jnp.float32(0.5))",
                           "print(float(autolax.filter_jit(model)(jnp.float32(0.5))))")
    source = source.replace("eqx.filter_vmap(autolax.convert(model))(jnp.array([0.5, 50.0]))",
                            "print(eqx.filter_vmap(autolax.convert(model))(jnp.array([0.5, 50.0])).tolist())")
    assert _run(source, tmp_path).split() == ["191.0", "[191.0,", "101.0]"]


def test_changes_reach_the_caller_example_prints_what_it_says(tmp_path):
    block = next(b for b in PYTHON_BLOCKS if "def swap(v, i, j):" in b and "autolax.jit(g)" in b)
    assert "# [3. 2. 1.], as NumPy gives" in block
    source = "import jax.numpy as jnp\nimport numpy as np\n\nimport autolax\n\n\n" + block
    source += "b = np.array([1.0, 2.0, 3.0])\ng(b, 2)\nprint(b)\n"  # the same program as Python, on NumPy
    assert _run(source, tmp_path).split() == ["[3.", "2.", "1.]", "[3.", "2.", "1.]"]
