//! The base tools' catalog as each provider receives it: `Dialect::tools_json` is the same
//! bytes on every Step.

use goondan_runtime::dialect::Dialect;
use goondan_runtime::{ToolCatalog, ToolRegistry};

#[test]
fn cat_6_the_base_tools_catalog_is_the_same_bytes_on_every_step_in_every_dialect() {
    let registry = ToolRegistry::builder()
        .tools(goondan_base::tools())
        .build()
        .unwrap();
    let first = ToolCatalog::all(&registry);
    assert!(first.len() > 30, "{}", first.len());
    for dialect in Dialect::ALL {
        let text = serde_json::to_string(&dialect.tools(&first).unwrap()).unwrap();
        for _ in 0..3 {
            // A new Step's catalog.
            let catalog = ToolCatalog::all(&registry);
            assert_eq!(dialect.tools_json(&catalog).unwrap(), text, "{dialect}");
        }
    }
}
