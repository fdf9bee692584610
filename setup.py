"""Only here to ship the rule pages (docs/rules/*.md) inside the wheel, so `tritonlens explain` works when installed
from a wheel; everything else is in pyproject.toml."""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithRuleDocs(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "tritonlens", "rule_docs")
        os.makedirs(target, exist_ok=True)
        for page in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "docs", "rules", "*.md")):
            shutil.copy(page, target)


setup(cmdclass={"build_py": BuildWithRuleDocs})
