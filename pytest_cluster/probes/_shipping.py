"""How a program of ours (a probe, a job's rank program) becomes the one Python source a
launcher sends to a node (`python3 - ARGS` with it on stdin; a rank: `python3 -c` it).

A program is a file, `<name>.py`, or a package, `<name>/` whose `__main__.py` is what runs
(its other modules each one job; `from .x import y` between them). A file that imports no
module of its folder is sent as it is. Otherwise the text sent is a small bootstrap that
carries the sources of the program's modules (and of the folder's `_lib/` modules they
import) and serves them to `import` through a meta-path finder, under a package of their
own (CARRIED_AS), then runs the program's main module with runpy as `__main__` (sys.argv
as the node gave it): no file is written on the node, and nothing of pytest-cluster need be
installed there. Each module is compiled with its own file name
(`pytest_cluster/probes/nic/sysfs.py`), so a traceback on the node names the real file and
line (and the `traceback` module, which asks the loader, shows the source line too).

The text is built deterministically (modules in sorted order, their sources as Python
literals): the same files give the same text, byte for byte, whatever the machine.
"""

from __future__ import annotations

import ast
import functools
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

#: The package a shipped program's modules are imported as, on the node.
CARRIED_AS = "_pytest_cluster_carried"
#: The folder of helpers several programs share (imported as `.._lib` or `._lib`).
SHARED = "_lib"

_BOOTSTRAP = '''\
"""pytest-cluster program {name!r}, its modules carried in this file (built from {origin});
see pytest_cluster/probes/_shipping.py."""
import runpy
import sys
from importlib.machinery import ModuleSpec

ROOT = {root!r}
MAIN = {main!r}  # run as __main__: its source is asked for by that name (linecache)
#: module name (under ROOT) -> (its file, as compiled; its source)
MODULES = {modules}


class Carried:
    """Finds and loads the modules above, nothing else (importlib's finder and loader)."""

    def entry(self, name):
        name = MAIN if name == "__main__" else name
        if name == ROOT:
            return ROOT + "/__init__.py", ""
        return MODULES.get(name[len(ROOT) + 1:]) if name.startswith(ROOT + ".") else None

    def find_spec(self, name, path=None, target=None):
        if self.entry(name) is None:
            return None
        return ModuleSpec(name, self, origin=self.entry(name)[0],
                          is_package=self.is_package(name))

    def is_package(self, name):
        return self.entry(name)[0].endswith("/__init__.py")

    def get_source(self, name):
        if self.entry(name) is None:
            raise ImportError(name)
        return self.entry(name)[1]

    def get_code(self, name):
        return compile(self.get_source(name), self.entry(name)[0], "exec", dont_inherit=True)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(self.get_code(module.__name__), module.__dict__)


sys.meta_path.insert(0, Carried())
runpy.run_module(MAIN, run_name="__main__")  # sys.argv as it is: ['-', ARGS...]
'''


def _modules(folder: Traversable, name: str, package: str) -> dict[str, tuple[str, str]]:
    """The program's own modules: {module name under CARRIED_AS: (file, source)}."""
    where = package.replace(".", "/")
    single = folder.joinpath(f"{name}.py")
    if single.is_file():
        return {name: (f"{where}/{name}.py", single.read_text(encoding="utf-8"))}
    found = {}
    for entry in folder.joinpath(name).iterdir():
        if entry.name.endswith(".py"):
            module = entry.name.removesuffix(".py")
            dotted = name if module == "__init__" else f"{name}.{module}"
            found[dotted] = (f"{where}/{name}/{entry.name}", entry.read_text(encoding="utf-8"))
    if name not in found or f"{name}.__main__" not in found:
        raise FileNotFoundError(f"{where}/{name}/: a program that is a package has an "
                                "__init__.py and runs its __main__.py")
    return found


def _imported(module: str, source: str, is_package: bool) -> set[str]:
    """The modules of the folder that `module`'s source imports relatively (`from .x
    import y`, `from .._lib import z`), as names under CARRIED_AS."""
    anchor = module.split(".") if is_package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = anchor[:len(anchor) - node.level + 1]
            target = [*base, *(node.module.split(".") if node.module else [])]
            found.add(".".join(target))
            found.update(".".join([*target, alias.name]) for alias in node.names)
    return found


def _with_shared(folder: Traversable, package: str,
                 modules: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """`modules` and the shared helpers (SHARED) they import, and those these import."""
    shared = folder.joinpath(SHARED)
    if not shared.is_dir():
        return modules
    where = f"{package.replace('.', '/')}/{SHARED}"
    offered = {(SHARED if entry.name == "__init__.py"
                else f"{SHARED}.{entry.name.removesuffix('.py')}"):
               (f"{where}/{entry.name}", entry.read_text(encoding="utf-8"))
               for entry in shared.iterdir() if entry.name.endswith(".py")}
    found, todo = dict(modules), list(modules)
    while todo:
        module = todo.pop()
        file, source = found[module]
        for name in _imported(module, source, file.endswith("__init__.py")):
            if name in offered and name not in found:
                found[name] = offered[name]
                todo.append(name)
    if any(name.startswith(f"{SHARED}.") for name in found) and SHARED in offered:
        found[SHARED] = offered[SHARED]
    return found


@functools.cache
def program_modules(package: str, name: str) -> dict[str, tuple[str, str]]:
    """Every module program `name` of `package` (a dotted name) carries, by its name under
    CARRIED_AS: its file (as compiled) and its source; in sorted order."""
    folder = resources.files(package)
    modules = _with_shared(folder, package, _modules(folder, name, package))
    return dict(sorted(modules.items()))


@functools.cache
def program_source(package: str, name: str) -> str:
    """The one Python source that runs program `name` of `package` on a node."""
    modules = program_modules(package, name)
    if list(modules) == [name]:
        source = modules[name][1]
        if not _imported(name, source, False):
            return source  # one file, nothing of its folder imported: sent as it is
    body = "{\n" + "".join(f"    {module!r}: ({file!r}, {source!r}),\n"
                           for module, (file, source) in modules.items()) + "}"
    where = package.replace(".", "/")
    origin = f"{where}/{name}.py" if name in modules and not \
        modules[name][0].endswith("__init__.py") else f"{where}/{name}/"
    return _BOOTSTRAP.format(name=name, origin=origin, root=CARRIED_AS, modules=body,
                             main=f"{CARRIED_AS}.{name}")
