# Metadata lives in pyproject.toml; setup.py wires in the cffi extension,
# builds its C sources in parallel, recompiling only what changed, and adds the
# version, the pins between ember packages and the classifiers (Note [One
# version], ember_release.py).
import glob
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import ember_release  # noqa: E402


class parallel_build_ext(build_ext):
    """Note [Parallel, incremental build]: setuptools compiles an extension's
    sources one after another and all of them on every rebuild.  Here they
    compile on every core, and a source whose object file is newer than the
    source and than every header it may include (``Extension.depends``) is not
    compiled again -- a one-line change to one kernel rebuilds in seconds.  The
    object files live in build/temp.*, which `pip wheel` reuses between builds of
    a checkout."""

    def build_extension(self, ext):
        compiler = self.compiler
        newest_header = max((os.path.getmtime(d) for d in ext.depends), default=0.0)

        def compile(
            sources,
            output_dir=None,
            macros=None,
            include_dirs=None,
            debug=0,
            extra_preargs=None,
            extra_postargs=None,
            depends=None,
        ):
            macros, objects, extra, pp_opts, build = compiler._setup_compile(
                output_dir, macros, include_dirs, sources, depends, extra_postargs
            )
            cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

            def one(obj):
                src, src_ext = build[obj]
                if os.path.exists(obj) and os.path.getmtime(obj) >= max(
                    os.path.getmtime(src), newest_header
                ):
                    return
                compiler._compile(obj, src, src_ext, cc_args, extra, pp_opts)

            with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
                list(pool.map(one, objects))
            return objects

        compiler.compile = compile
        super().build_extension(ext)


class build_ext_with_stubs(parallel_build_ext):
    """Note [Stubs] (ember_core/_codegen/stubgen.py): once the extension is built, import
    the built package in a child process and write its type stubs next to it, so
    the wheel ships them.  ember_allocator (a run-time dependency) must be
    importable: installed (it is a build requirement for isolated builds) or
    built next door in the monorepo (packages/allocator/build/lib.*)."""

    def run(self):
        super().run()
        if self.dry_run or os.environ.get("EMBER_NO_STUBS") == "1":
            return
        build_lib = pathlib.Path(self.build_lib).resolve()
        paths = [str(build_lib)]
        paths += glob.glob(str(HERE.parent / "allocator" / "build" / "lib.*"))
        if os.environ.get("PYTHONPATH"):  # e.g. gpu-check's private site directory
            paths.append(os.environ["PYTHONPATH"])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        out = build_lib / "ember_core"
        result = subprocess.run(
            [sys.executable, "-m", "ember_core._codegen.stubgen", str(out)],
            env=env,
            cwd=build_lib,
            capture_output=True,
            text=True,
        )
        if result.returncode:
            sys.exit(
                "ember-tensor-core: generating the type stubs failed (Note [Stubs]; "
                f"EMBER_NO_STUBS=1 skips them):\n{result.stderr}"
            )


setup(
    cffi_modules=["csrc/build.py:ffibuilder"],
    cmdclass={"build_ext": build_ext_with_stubs},
    **ember_release.setup_kwargs(HERE),
)
