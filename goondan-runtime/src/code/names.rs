//! The catalog as functions: which Python name each catalog item gets.
//!
//! A catalog item `{resource}__{export}` is the function `{resource}.{export}` of the program:
//! the resource is an object whose attributes are its exports. Each part becomes a Python
//! identifier: `-` is `_`, a leading digit gets a `_` before it, and a Python keyword gets a
//! `_` after it (`import` is `import_`). A resource whose name is a builtin the program needs
//! (`print`, `len`, `ToolError`, ...) also gets a `_` after it. Two items that map to the same
//! function (`a-b__x` and `a_b__x`) cannot both be called from code: the first in catalog order
//! keeps the name, and the other is listed as left out.

use std::collections::BTreeMap;

use crate::tools::catalog::{CatalogItem, ToolCatalog};

/// Python's keywords and soft keywords, which cannot name an attribute or a variable.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "match", "case", "type", "_",
];

/// Builtins and modules a program is likely to use: a resource named like one would hide it.
const RESERVED: &[&str] = &[
    "ToolError",
    "print",
    "len",
    "range",
    "list",
    "dict",
    "set",
    "tuple",
    "str",
    "int",
    "float",
    "bool",
    "sum",
    "min",
    "max",
    "sorted",
    "any",
    "all",
    "map",
    "filter",
    "zip",
    "enumerate",
    "isinstance",
    "repr",
    "abs",
    "round",
    "json",
    "re",
    "math",
    "os",
    "sys",
    "open",
    "input",
    "Exception",
    "id",
    "hash",
    "iter",
    "next",
    "object",
    "getattr",
    "hasattr",
    "format",
    "reversed",
    "divmod",
    "chr",
    "ord",
    "bin",
    "hex",
    "oct",
    "type",
];

/// The Python identifier of one part of a tool name.
pub(crate) fn identifier(part: &str, reserved: bool) -> String {
    let mut ident: String = part
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if ident.is_empty() || ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    if KEYWORDS.contains(&ident.as_str()) || (reserved && RESERVED.contains(&ident.as_str())) {
        ident.push('_');
    }
    ident
}

/// One function of the program: the catalog item it calls.
#[derive(Debug, Clone)]
pub(crate) struct Function {
    /// The export's attribute name on its resource object.
    pub(crate) attribute: String,
    /// The catalog item.
    pub(crate) item: CatalogItem,
}

/// The functions of a program, grouped by resource object, in catalog order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Functions {
    /// Resource object name to its functions.
    pub(crate) objects: BTreeMap<String, Vec<Function>>,
    /// The order resource objects first appear in the catalog.
    pub(crate) order: Vec<String>,
    /// Catalog names whose function name another item already has.
    pub(crate) left_out: Vec<String>,
}

impl Functions {
    /// The functions of `catalog`, except the item named `except` (the code tool itself).
    pub(crate) fn of(catalog: &ToolCatalog, except: &str) -> Self {
        let mut functions = Self::default();
        for item in catalog {
            let name = item.name();
            if name.as_str() == except {
                continue;
            }
            let object = identifier(name.resource(), true);
            let attribute = identifier(name.export(), false);
            let exports = functions.objects.entry(object.clone()).or_default();
            if exports.iter().any(|f| f.attribute == attribute) {
                functions.left_out.push(name.as_str().to_owned());
                continue;
            }
            if exports.is_empty() {
                functions.order.push(object);
            }
            exports.push(Function {
                attribute,
                item: item.clone(),
            });
        }
        functions
    }

    /// The resource objects in catalog order, each with its functions.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &[Function])> {
        self.order
            .iter()
            .filter_map(|o| self.objects.get(o).map(|f| (o.as_str(), f.as_slice())))
    }

    /// The `object.attribute` of the catalog item `name`, if it is a function.
    #[cfg(test)]
    pub(crate) fn python_name(&self, name: &str) -> Option<String> {
        self.iter().find_map(|(object, functions)| {
            functions
                .iter()
                .find(|f| f.item.name().as_str() == name)
                .map(|f| format!("{object}.{}", f.attribute))
        })
    }

    /// How many functions there are.
    pub(crate) fn len(&self) -> usize {
        self.objects.values().map(Vec::len).sum()
    }

    /// Every function, resource objects in catalog order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Function> {
        self.iter().flat_map(|(_, list)| list)
    }

    /// The resource object `function` is on.
    pub(crate) fn object_of(&self, function: &Function) -> Option<&str> {
        self.iter()
            .find(|(_, list)| list.iter().any(|f| std::ptr::eq(f, function)))
            .map(|(object, _)| object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::name::ToolName;

    fn catalog(names: &[&str]) -> ToolCatalog {
        let mut catalog = ToolCatalog::new();
        for n in names {
            catalog.push(CatalogItem::new(ToolName::parse(n).unwrap()));
        }
        catalog
    }

    #[test]
    fn dashes_keywords_digits_and_builtins_become_identifiers() {
        assert_eq!(identifier("file-system", true), "file_system");
        assert_eq!(identifier("import", false), "import_");
        assert_eq!(identifier("print", true), "print_");
        assert_eq!(identifier("print", false), "print");
        assert_eq!(identifier("2fa", false), "_2fa");
    }

    #[test]
    fn a_catalog_becomes_objects_of_functions_without_the_code_tool_and_clashes_are_left_out() {
        let f = Functions::of(
            &catalog(&[
                "file-system__read",
                "code__run",
                "a-b__x",
                "a_b__x",
                "file-system__write",
            ]),
            "code__run",
        );
        assert_eq!(
            f.python_name("file-system__read").as_deref(),
            Some("file_system.read")
        );
        assert_eq!(f.python_name("a-b__x").as_deref(), Some("a_b.x"));
        assert_eq!(f.python_name("code__run"), None);
        assert_eq!(f.left_out, vec!["a_b__x".to_owned()]);
        assert_eq!(f.len(), 3);
        let order: Vec<&str> = f.iter().map(|(o, _)| o).collect();
        assert_eq!(order, ["file_system", "a_b"]);
    }
}
