"""Only here to ship the rule pages (docs/rules/*.md) and the TextMate grammars (syntaxes/, which `tritonlens report`
colours IR with) inside the wheel, so `explain` and `report` work when installed from a wheel; everything else is in
pyproject.toml."""
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
        grammars = os.path.join(self.build_lib, "tritonlens", "syntaxes")
        os.makedirs(grammars, exist_ok=True)
        for grammar in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "syntaxes", "*.json")):
            shutil.copy(grammar, grammars)


setup(cmdclass={"build_py": BuildWithRuleDocs})
