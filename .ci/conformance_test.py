#!/usr/bin/env python3
"""Tests of .ci/conformance: only test functions count, the table is docs/conformance.md's, and a
missing SPEC.md fails the run."""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
SCRIPT = os.path.join(HERE, "conformance")


def load():
    loader = importlib.machinery.SourceFileLoader("conformance", SCRIPT)
    spec = importlib.util.spec_from_loader("conformance", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


SOURCE = '''
fn ho_3_helper() {}

#[test]
fn ho_3_plain() {}

/// A doc comment between the attribute and the function.
#[tokio::test]
/// More doc.
async fn ctx_4_tokio() {}

#[tokio::test(
    flavor = "multi_thread",
    worker_threads = 2
)]
#[should_panic(expected = "x")]
pub async fn ag_1_multi_line_attribute() {}

#[ignore]
fn ag_2_ignored_but_not_a_test() {}

#[test]
mod not_a_fn {}
fn ag_3_after_a_module() {}

#[cfg(test)]
fn ag_4_cfg_test_only() {}

#[derive(Debug)]
struct S;
'''


class TestFns(unittest.TestCase):
    def test_only_functions_annotated_as_tests_count(self):
        names = load().test_fns(SOURCE)
        self.assertEqual(names, ["ho_3_plain", "ctx_4_tokio", "ag_1_multi_line_attribute"])


class Page(unittest.TestCase):
    def test_the_table_lives_in_docs_conformance_md_between_its_markers(self):
        module = load()
        self.assertEqual(module.PAGE, os.path.join("docs", "conformance.md"))
        with open(os.path.join(module.ROOT, module.PAGE), encoding="utf-8") as fh:
            page = fh.read()
        self.assertIn(module.BEGIN, page)
        self.assertIn(module.END, page)
        with open(os.path.join(module.ROOT, "README.md"), encoding="utf-8") as fh:
            self.assertNotIn(module.BEGIN, fh.read(), "the table moved to docs/conformance.md")


class MissingSpec(unittest.TestCase):
    def test_a_missing_spec_fails_with_a_message(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, GOONDAN_SPEC=os.path.join(d, "SPEC.md"))
            for args in ([], ["--check"], ["--write"]):
                run = subprocess.run(
                    [sys.executable, SCRIPT, *args], env=env, capture_output=True, text=True
                )
                self.assertNotEqual(run.returncode, 0, args)
                self.assertIn("SPEC.md not found", run.stdout + run.stderr)


if __name__ == "__main__":
    unittest.main()
