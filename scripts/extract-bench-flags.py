"""Extracts the long options of upstream's bench command lines, one per line, for
crates/dfx-core/assets/vllm_bench_serve_flags.txt and diffusion_benchmark_flags.txt.

  python3 scripts/extract-bench-flags.py serve SRC_ROOT
      SRC_ROOT holds `vllm/benchmarks/` and `vllm/utils/argparse_utils.py` unzipped from
      the vllm wheel (`pip download --no-deps vllm==0.30.0`) and
      `vllm_omni/entrypoints/cli/benchmark/` from the vllm-omni wheel (same version).
      Runs the real argparse code of `vllm bench serve --omni` (vllm's add_cli_args, then
      vllm-omni's add_omni_args and extend_omni_choices, as
      OmniBenchmarkServingSubcommand.add_cli_args does); every other import those files
      make is a stub, so only the add_argument calls run.
  python3 scripts/extract-bench-flags.py diffusion FILE
      FILE is vllm-omni's benchmarks/diffusion/diffusion_benchmark_serving.py; its parser
      is built under `__main__`, so the option strings of its add_argument calls are read
      from the syntax tree.
"""
import argparse
import ast
import importlib.abc
import importlib.machinery
import sys
import types
from unittest import mock

REAL = ("vllm.benchmarks", "vllm_omni.entrypoints.cli.benchmark")


class Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = mock.MagicMock(name=f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root):
        self.root = root

    def find_spec(self, name, path, target=None):
        if any(name == r or name.startswith(r + ".") for r in REAL):
            return importlib.machinery.PathFinder.find_spec(name, path or [self.root])
        top = name.split(".")[0]
        if top in ("vllm", "vllm_omni") or (
            top not in sys.builtin_module_names
            and importlib.machinery.PathFinder.find_spec(top) is None
        ):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = Stub(spec.name)
        module.__path__ = [self.root + "/" + spec.name.replace(".", "/")]
        return module

    def exec_module(self, module):
        pass


def serve_flags(root):
    sys.meta_path.insert(0, Finder(root))
    sys.path.insert(0, root)
    utils = types.ModuleType("vllm.utils.argparse_utils")
    utils.FlexibleArgumentParser = argparse.ArgumentParser
    sys.modules["vllm.utils.argparse_utils"] = utils
    from vllm.benchmarks.serve import add_cli_args
    from vllm_omni.entrypoints.cli.benchmark import cli_args

    parser = argparse.ArgumentParser()
    add_cli_args(parser)
    cli_args.add_omni_args(parser)
    cli_args.extend_omni_choices(parser)
    return [s for a in parser._actions for s in a.option_strings if s.startswith("--")]


def diffusion_flags(path):
    tree = ast.parse(open(path).read())
    return [
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--")
    ]


if __name__ == "__main__":
    kind, source = sys.argv[1], sys.argv[2]
    flags = serve_flags(source) if kind == "serve" else diffusion_flags(source)
    for flag in flags:
        if flag != "--help":
            print(flag)
