"""The notebooks' Jupyter kernel: ipykernel started after ``import klear_lib`` has set the numerics mode, so the
first cell of a notebook (pandas, NumPy) already loads under it (klear_lib.numerics).

``make setup`` installs it as the virtual environment's ``python3`` kernel, the one papermill and Jupyter start:
``python -m klear_lib.kernel install``. nbval starts its own (``--nbval-current-env``), which inherits the mode from
the pytest process (``pytest -p klear_lib``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import klear_lib  # noqa: F401  (the numerics mode, before the kernel imports anything)


def install(prefix: str = sys.prefix, name: str = "python3") -> Path:
    """Install ipykernel's spec under ``prefix`` with this module as its entry; return the spec's folder."""
    from ipykernel.kernelspec import install as install_spec  # lazy: setup only

    folder = Path(install_spec(kernel_name=name, prefix=prefix))
    spec_file = folder / "kernel.json"
    spec = json.loads(spec_file.read_text())
    argv = spec["argv"]
    spec["argv"] = argv[:argv.index("-m")] + ["-m", "klear_lib.kernel", "-f", "{connection_file}"]
    spec_file.write_text(json.dumps(spec, indent=1) + "\n")
    return folder


if __name__ == "__main__":
    if sys.argv[1:] == ["install"]:
        print(install())
    else:
        from ipykernel.kernelapp import launch_new_instance

        launch_new_instance()
