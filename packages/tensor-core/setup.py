# Metadata lives in pyproject.toml; setup.py wires in the cffi extension and
# builds its C sources in parallel, recompiling only what changed.
import os
from concurrent.futures import ThreadPoolExecutor

from setuptools import setup
from setuptools.command.build_ext import build_ext


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


setup(
    cffi_modules=["csrc/build.py:ffibuilder"],
    cmdclass={"build_ext": parallel_build_ext},
)
