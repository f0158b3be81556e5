//! The base tools' catalog as each provider receives it: `Dialect::tools_json` (each export
//! rendered once, then copied) is byte for byte the plain rendering, on every Step.

use goondan_runtime::dialect::Dialect;
use goondan_runtime::{ToolCatalog, ToolRegistry};

#[test]
fn cat_6_the_base_tools_catalog_is_the_plain_rendering_byte_for_byte_in_every_dialect() {
    let registry = ToolRegistry::builder()
        .tools(goondan_base::tools())
        .build()
        .unwrap();
    let first = ToolCatalog::all(&registry);
    assert!(first.len() > 30, "{}", first.len());
    for dialect in Dialect::ALL {
        let plain = serde_json::to_string(&dialect.tools(&first).unwrap()).unwrap();
        for _ in 0..3 {
            // A new Step's catalog: the renderings cached by the first are reused.
            let catalog = ToolCatalog::all(&registry);
            assert_eq!(dialect.tools_json(&catalog).unwrap(), plain, "{dialect}");
        }
    }
}
