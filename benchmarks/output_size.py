"""Non-blank lines of CLI output per non-blank line of source, over the top-level functions of a
folder that ``autolax convert --all`` changes (comments and docstrings not counted).

    python -m benchmarks.output_size tests/corpus [--standalone]
"""

import ast
import pathlib
import subprocess
import sys
import tempfile


def nonblank(lines) -> int:
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def functions(path: pathlib.Path) -> dict:
    """Each top-level function's lines (decorators included, docstring left out), by name."""
    lines = path.read_text().splitlines()
    out = {}
    for node in ast.parse("\n".join(lines)).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        doc = range(0)
        if ast.get_docstring(node):
            doc = range(node.body[0].lineno, node.body[0].end_lineno + 1)
        out[node.name] = [lines[i - 1] for i in range(start, node.end_lineno + 1) if i not in doc]
    return out


def main(argv) -> int:
    folder = pathlib.Path(argv[0])
    # The output beside the source, as in a project (``autolax convert src -o out``): the
    # descriptors name the source by its path from the output (``../src/f.py:12``).
    with tempfile.TemporaryDirectory(dir=folder.resolve().parent, prefix=".output_size_") as tmp:
        command = ["autolax", "convert", str(folder), "-o", f"{tmp}/out", "--all", *argv[1:]]
        subprocess.run(command, check=True, capture_output=True)
        source = output = changed = 0
        for path in sorted(folder.glob("*.py")):
            before, after = functions(path), functions(pathlib.Path(tmp, "out", path.name))
            for name, lines in before.items():
                if name in after and after[name] != lines:
                    changed += 1
                    source += nonblank(lines)
                    output += nonblank(after[name])
    print(f"{changed} functions changed: {output} lines of output / {source} of source = {output / source:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
