use goondan_runtime::prelude::*;
use goondan_runtime::tools::ui::{ExportUi, Visibility};

#[tool(name = "counter")]
pub mod counter {
    /// Shows the counter.
    #[export(ui = "ui://counter/view.html")]
    pub fn show() -> u64 {
        0
    }

    /// Adds one, from the page.
    #[export(ui = "ui://counter/view.html", visibility = "app")]
    pub fn increment() -> u64 {
        1
    }

    /// Resets, for the model only.
    #[export(visibility = "model", destructive)]
    pub fn reset() -> u64 {
        0
    }

    /// Says nothing of pages.
    pub fn plain() -> u64 {
        0
    }
}

fn main() {
    let tool = counter::TOOL.build().unwrap();
    let uis: Vec<Option<ExportUi>> = tool.exports().map(|(_, e)| e.ui().cloned()).collect();
    assert_eq!(
        uis,
        [
            Some(ExportUi::page("ui://counter/view.html")),
            Some(ExportUi::page("ui://counter/view.html").visibility(Visibility::App)),
            Some(ExportUi::visible_to(Visibility::Model)),
            None,
        ]
    );
}
