#!/usr/bin/env python3
"""Tests of .ci/conformance: only test functions count, the rules are docs/rules.md's, the table is
docs/conformance.md's, and a citation of a rule docs/rules.md lacks fails the run."""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
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


class Rules(unittest.TestCase):
    def test_the_rules_are_docs_rules_md_each_with_a_level_and_a_text(self):
        module = load()
        self.assertEqual(module.RULES, os.path.join("docs", "rules.md"))
        rules = module.read_rules()
        self.assertIn(("SPEC-4", "MUST"), [(r, l) for r, l, _ in rules])
        self.assertTrue(all(text for _, _, text in rules))

    def test_a_row_without_a_known_level_or_listed_twice_is_refused(self):
        module = load()
        for text in (
            "| NAME-1 | OFTEN | a rule |",
            "| NAME-1 | MUST | a rule |\n| NAME-1 | MUST | again |",
            "| NAME-1 | MUST |",
            "no table at all",
        ):
            with self.assertRaises(module.RulesError, msg=text):
                module.rules(text)


class Citations(unittest.TestCase):
    RULES = [("NAME-1", "MUST", "a"), ("NAME-2", "MUST", "b"), ("AG-1", "(D)", "c")]

    def test_an_id_or_a_range_of_a_known_family_that_is_not_a_rule_is_reported(self):
        files = [("src/a.rs", "// NAME-1 and NAME-2\n/// AG-1..2, SEP-2577, SHA-256, UTF-8\n")]
        names = ["name_1_and_ag_1_hold", "name_3_does_not", "a_2026_date"]
        self.assertEqual(
            load().unknown_citations(self.RULES, names, files),
            ["src/a.rs:2: AG-2", "test `name_3_does_not`: NAME-3"],
        )

    def test_the_workspace_cites_only_rules_of_docs_rules_md(self):
        run = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)


if __name__ == "__main__":
    unittest.main()
